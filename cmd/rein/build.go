package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/anthropic"
	"github.com/reinhq/rein/provider/openai"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sqlite"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/shell"
	"github.com/reinhq/rein/tool/todo"
)

// defaultTools is the tool set of 'rein run' and 'rein chat' without --tools.
var defaultTools = []string{"read", "write", "edit", "multi_edit", "ls", "glob", "grep", "shell", "todo"}

// storeSpec returns the store to use: the flag, else $REIN_STORE, else the
// config file, else sqlite under the state directory.
func (a *app) storeSpecValue() string {
	if a.storeSpec != "" {
		return a.storeSpec
	}
	if s := a.getenv("REIN_STORE"); s != "" {
		return s
	}
	if a.cfg != nil && a.cfg.Store != "" {
		return a.cfg.Store
	}
	return "sqlite:"
}

// openStore opens the session store named by spec: sqlite:PATH, jsonl:DIR,
// postgres://URL or mem:. An empty PATH or DIR means the default under the state directory.
func openStore(spec string) (session.Store, error) {
	kind, arg, ok := strings.Cut(spec, ":")
	if !ok {
		return nil, usageErrorf("--store %q: use sqlite:PATH, jsonl:DIR, postgres://URL or mem:", spec)
	}
	switch kind {
	case "postgres", "postgresql":
		return openPostgres(spec)
	case "mem":
		return session.NewMemStore(), nil
	case "sqlite":
		if arg == "" {
			arg = filepath.Join(stateDir(), "sessions.db")
		}
		if err := os.MkdirAll(filepath.Dir(arg), 0o700); err != nil {
			return nil, storeDirError(spec, err)
		}
		st, err := sqlite.Open(arg, nil)
		if err != nil {
			return nil, fmt.Errorf("open store %s: %w", spec, err)
		}
		return st, nil
	case "jsonl":
		if arg == "" {
			arg = filepath.Join(stateDir(), "sessions")
		}
		if err := os.MkdirAll(arg, 0o700); err != nil {
			return nil, storeDirError(spec, err)
		}
		st, err := jsonl.Open(arg, nil)
		if err != nil {
			return nil, fmt.Errorf("open store %s: %w", spec, err)
		}
		return st, nil
	}
	return nil, usageErrorf("--store %q: unknown kind %q; use sqlite:PATH, jsonl:DIR, postgres://URL or mem:", spec, kind)
}

// openStore opens the store the flags and config name, scrubbed of
// every secret rein knows.
func (a *app) openStore() (session.Store, error) {
	st, err := openStore(a.storeSpecValue())
	if err != nil {
		return nil, err
	}
	if a.secrets == nil {
		a.secrets = newScrubber()
	}
	return a.secrets.scrubbed(st), nil
}

// storeDirError is a store whose directory cannot be made: a
// configuration mistake, exit code 2.
func storeDirError(spec string, err error) error {
	return usageErrorf("--store %s: %v; choose a directory rein can write to (or mem: to keep nothing)", spec, err)
}

// buildModel makes the llm.Model a target names, sending its requests
// with hc.
func buildModel(t target, hc *http.Client) (llm.Model, error) {
	switch t.provider.wire {
	case "anthropic":
		m, err := anthropic.New(&anthropic.Options{APIKey: t.apiKey, BaseURL: t.baseURL, Model: t.model, HTTPClient: hc})
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", t, err)
		}
		return m, nil
	case "chat", "responses":
		name := t.provider.name
		if name == "openai-responses" {
			name = "openai"
		}
		opts, err := openai.Preset(name)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", t, err)
		}
		opts.APIKey = t.apiKey
		opts.HTTPClient = hc
		if t.baseURL != "" {
			opts.BaseURL = t.baseURL
		}
		if t.provider.wire == "responses" {
			m, err := openai.NewResponses(&opts)
			if err != nil {
				return nil, fmt.Errorf("model %s: %w", t, err)
			}
			return m, nil
		}
		m, err := openai.NewChat(&opts)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", t, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("model %s: no adapter for wire %q", t, t.provider.wire)
}

// toolKit is the tools of one run plus what must be closed after it.
type toolKit struct {
	tools   []tool.Tool
	reads   *fs.ReadState // forgotten after a compaction, so files are read again
	closers []io.Closer
	shell   *shell.Shell
	policy  *sandbox.Policy // the workspace the tools are confined to
}

// forgetsReads is the read tool of a run: after a compaction the agent
// tells it, and it forgets what the model has read, so a file read again
// is returned whole rather than as "unchanged".
type forgetsReads struct {
	tool.Tool
	reads *fs.ReadState
}

// Unwrap returns the read tool.
func (f *forgetsReads) Unwrap() tool.Tool { return f.Tool }

// Compacted forgets the session's reads.
func (f *forgetsReads) Compacted(_ context.Context, sess session.ID) { f.reads.Forget(string(sess)) }

// parseToolList turns --tools into names: "none" is empty, "" the default.
func parseToolList(spec string, cfg *config) ([]string, error) {
	if spec == "" {
		if cfg != nil && len(cfg.Tools) > 0 {
			return cfg.Tools, nil
		}
		return defaultTools, nil
	}
	if spec == "none" {
		return nil, nil
	}
	var names []string
	for n := range strings.SplitSeq(spec, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(defaultTools, n) && n != agent.SpawnToolName {
			return nil, usageErrorf("--tools: unknown tool %q; choose from %s,%s, or none", n, strings.Join(defaultTools, ","), agent.SpawnToolName)
		}
		names = append(names, n)
	}
	return names, nil
}

// buildTools makes the named tools, confined to the workspace root, the
// shell's commands in box (nil: the shell's default sandbox). Long
// shell outputs are spilled to spillDir, or by default to .rein/spill in
// the workspace, where the model can read them. models resolves the
// models subagent definitions name (nil: children run on the parent's).
func buildTools(root, spillDir string, names []string, box *shellBox, models func(string) (*agent.Target, error)) (*toolKit, error) {
	kit := &toolKit{reads: fs.NewReadState()}
	if len(names) == 0 {
		return kit, nil
	}
	policy := &sandbox.Policy{Root: root}
	kit.policy = policy
	want := func(n string) bool { return slices.Contains(names, n) }
	for _, t := range fs.NewTools(policy, &fs.Options{State: kit.reads}) {
		if want(t.Spec().Name) {
			if t.Spec().Name == "read" {
				t = &forgetsReads{Tool: t, reads: kit.reads}
			}
			kit.tools = append(kit.tools, t)
		}
	}
	if want("shell") {
		so := &shell.Options{Policy: policy, SpillDir: spillDir}
		if box != nil {
			so.Exec, so.Secrets = box.ctx, box.secrets
		}
		sh := shell.New(so)
		kit.shell = sh
		kit.closers = append(kit.closers, sh)
		if box != nil {
			kit.closers = append(kit.closers, box.ctx)
		}
		kit.tools = append(kit.tools, sh.Tools()...)
	}
	if want("todo") {
		kit.tools = append(kit.tools, todo.New(nil))
	}
	if want(agent.SpawnToolName) {
		t, err := spawnTool(root, models)
		if err != nil {
			return nil, err
		}
		kit.tools = append(kit.tools, t)
	}
	return kit, nil
}

// notices reports ended background tasks to the model.
func (k *toolKit) notices() []string {
	if k.shell == nil {
		return nil
	}
	var out []string
	for _, e := range k.shell.Drain() {
		out = append(out, e.String())
	}
	return out
}

// approver answers the calls of tools that are not read-only, by mode;
// permission rules (--allow, --deny, settings files) come before the
// mode's default.
func newApprover(mode string, ask tool.Approver, extra ...tool.Rule) (tool.Approver, error) {
	rules := append([]tool.Rule{{Tool: todo.Name, Verdict: tool.Allow}}, extra...)
	switch mode {
	case "auto":
		return withRules(tool.NewPolicy(&tool.PolicyOptions{Default: tool.Allow, AllowReadOnly: true, Rules: rules, Approver: ask}), extra), nil
	case "deny":
		return withRules(tool.NewPolicy(&tool.PolicyOptions{Default: tool.Deny, AllowReadOnly: true, Rules: rules}), extra), nil
	case "ask":
		return withRules(tool.NewPolicy(&tool.PolicyOptions{Default: tool.Ask, AllowReadOnly: true, Rules: rules, Approver: ask}), extra), nil
	}
	return nil, usageErrorf("--approve %q: use auto, ask or deny", mode)
}

// baseSystem is rein's own system prompt.
const baseSystem = `You are rein, a careful software engineering agent working in the user's workspace.
Use the tools to inspect before you change anything, keep changes small, and say plainly what you did.`

// systemPrompt is the host's part of the system prompt: --system (text or
// @FILE), else rein's own, then the environment section. The memory files
// follow it as sections of their own (teamKit.sections).
func systemPrompt(flag, root string) (string, error) {
	sys := baseSystem
	if flag != "" {
		sys = flag
		if name, ok := strings.CutPrefix(flag, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return "", usageErrorf("--system %s: %v", flag, err)
			}
			sys = string(b)
		}
	}
	return strings.TrimSpace(sys) + "\n\n" + environmentSection(root, time.Now()), nil
}

// catalogCost prices usage with the default catalog; unknown models cost 0.
func catalogCost(model string, u llm.Usage) float64 {
	c, _ := llm.DefaultCatalog().Cost(model, u)
	return c
}

// latestSession returns the most recently updated session in workDir.
func latestSession(ctx context.Context, st session.Store, workDir string) (session.ID, error) {
	infos, err := st.List(ctx)
	if err != nil {
		return "", err
	}
	var best *session.Info
	for i := range infos {
		in := &infos[i]
		if in.WorkDir != workDir {
			continue
		}
		if best == nil || in.Updated.After(best.Updated) {
			best = in
		}
	}
	if best == nil {
		return "", errors.New("no session in this workspace yet; start one with 'rein chat' or 'rein run'")
	}
	return best.ID, nil
}
