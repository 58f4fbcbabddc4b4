package command_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
)

// rig is an agent with real file tools over a temporary workspace, a
// scripted model and the hooks of one settings file.
type rig struct {
	dir     string
	model   *llmtest.Model
	agent   *agent.Agent
	runner  *command.Runner
	mu      sync.Mutex
	reports []command.Report
}

func newRig(t *testing.T, settings string, opts *command.Options, script ...llmtest.Entry) *rig {
	t.Helper()
	dir := t.TempDir()
	entries, err := command.Parse([]byte(settings), ".rein/settings.json", false)
	if err != nil {
		t.Fatal(err)
	}
	return newRigEntries(t, dir, entries, opts, script...)
}

func newRigEntries(t *testing.T, dir string, entries []command.Entry, opts *command.Options, script ...llmtest.Entry) *rig {
	t.Helper()
	r := &rig{dir: dir, model: llmtest.NewModel(script...)}
	o := command.Options{}
	if opts != nil {
		o = *opts
	}
	o.Dir = dir
	o.OnReport = func(rep command.Report) {
		r.mu.Lock()
		r.reports = append(r.reports, rep)
		r.mu.Unlock()
	}
	var err error
	r.runner, err = command.New(entries, &o)
	if err != nil {
		t.Fatal(err)
	}
	r.agent, err = agent.New(&agent.Options{
		Model:   r.model,
		Tools:   fs.NewTools(&sandbox.Policy{Root: dir}, nil),
		Hooks:   r.runner.Hooks(),
		Notices: r.runner.Notices,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.agent.Close() })
	return r
}

func (r *rig) run(t *testing.T, prompt string) *agent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, _ := r.agent.Run(ctx, &agent.RunRequest{Prompt: prompt})
	if res == nil {
		t.Fatal("no result")
	}
	return res
}

func (r *rig) decisions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rep := range r.reports {
		out = append(out, rep.Event+" "+rep.Decision)
	}
	return out
}

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func settingsJSON(t *testing.T, event, matcher string, commands ...string) string {
	t.Helper()
	var hs []map[string]any
	for _, c := range commands {
		h := map[string]any{"type": "command", "command": c}
		if strings.HasPrefix(c, "timeout=") {
			secs, rest, _ := strings.Cut(strings.TrimPrefix(c, "timeout="), " ")
			var f float64
			json.Unmarshal([]byte(secs), &f)
			h = map[string]any{"type": "command", "command": rest, "timeout": f}
		}
		hs = append(hs, h)
	}
	b, err := json.Marshal(map[string]any{"hooks": map[string]any{event: []any{map[string]any{"matcher": matcher, "hooks": hs}}}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolResults returns the text of every tool.result event of a run.
func toolResults(res *agent.Result) []string {
	var out []string
	for _, ev := range res.Events {
		if tr, ok := ev.Data.(*session.ToolResult); ok {
			var b strings.Builder
			for _, p := range tr.Parts {
				if t, ok := p.(*llm.Text); ok {
					b.WriteString(t.Text)
				}
			}
			out = append(out, tr.Outcome+"|"+tr.Code+"|"+b.String())
		}
	}
	return out
}

// hookEvents lists the loop's hook.decision events: the combined decision
// of a point's chain (per-command reports are left to commandReports).
func hookEvents(res *agent.Result) []string {
	var out []string
	for _, ev := range res.Events {
		if d, ok := ev.Data.(*session.HookDecision); ok && len(d.Detail) == 0 {
			out = append(out, d.Point+" "+d.Decision+" "+d.Reason)
		}
	}
	return out
}

// commandReport is what the log says of one command run.
type commandReport struct {
	Point, Hook, Decision, Reason string
	Event                         string `json:"event"`
	Command                       string `json:"command"`
	ExitCode                      int    `json:"exit_code"`
	DurationMS                    int64  `json:"duration_ms"`
}

// commandReports lists the hook.decision events that carry a command's
// own report (its command, exit code and duration in Detail).
func commandReports(t *testing.T, res *agent.Result) []commandReport {
	t.Helper()
	var out []commandReport
	for _, ev := range res.Events {
		d, ok := ev.Data.(*session.HookDecision)
		if !ok || len(d.Detail) == 0 {
			continue
		}
		var c commandReport
		if err := json.Unmarshal(d.Detail, &c); err != nil {
			t.Fatalf("detail of %s: %v", d.Hook, err)
		}
		c.Point, c.Hook, c.Decision, c.Reason = d.Point, d.Hook, d.Decision, d.Reason
		out = append(out, c)
	}
	return out
}

// lastRequestText is every text of the last request the model got.
func lastRequestText(m *llmtest.Model) string {
	reqs := m.Requests()
	if len(reqs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, msg := range reqs[len(reqs)-1].Messages {
		for _, p := range msg.Parts {
			switch p := p.(type) {
			case *llm.Text:
				b.WriteString(p.Text + "\n")
			case *llm.ToolResult:
				for _, q := range p.Parts {
					if t, ok := q.(*llm.Text); ok {
						b.WriteString(t.Text + "\n")
					}
				}
			}
		}
	}
	return b.String()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// exists reports whether the file at path in the workspace exists.
func (r *rig) exists(path string) bool { return exists(filepath.Join(r.dir, path)) }

// writeRig is a rig with the commands hooked on event for tools matching
// matcher, whose model writes "hi" to a.txt, then answers "ok".
func writeRig(t *testing.T, event, matcher string, commands ...string) *rig {
	t.Helper()
	return newRig(t, settingsJSON(t, event, matcher, commands...), nil,
		llmtest.CallTool("c1", "write", `{"path":"a.txt","content":"hi"}`), llmtest.Reply("ok"))
}

// writeRun is writeRig's rig and its run of the prompt "go".
func writeRun(t *testing.T, event, matcher string, commands ...string) (*rig, *agent.Result) {
	t.Helper()
	r := writeRig(t, event, matcher, commands...)
	return r, r.run(t, "go")
}
