package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/reinhq/rein/mcp"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

func init() { extraCommands = append(extraCommands, (*app).runCommand) }

// agentFlags are the flags 'rein run' and 'rein chat' share.
type agentFlags struct {
	model      string
	baseURL    string
	session    string
	newSession string
	fork       string
	cwd        string
	tools      string
	approve    string
	dryRun     bool
	maxSteps   int
	maxCost    float64
	system     string
	mcp        []string // --mcp NAME=COMMAND… or NAME=URL
	hooks      string   // --hooks-from
	net        netOptions
	sandbox    sandboxFlags
	perms      permissionFlags
	// store, when set, is a store the host keeps open for many agents
	// (rein serve); setup.Close leaves it open.
	store session.Store

	// Set by hosts, not flags: MCP servers an editor passed, whether
	// --session must name a session that exists (an editor's load, rein
	// run; chat creates an unknown one), and
	// the tools the editor runs in place of rein's.
	editorMCP   []mcp.ServerConfig
	existing    bool
	durable     bool // turns may be resumed (a worker's): agent.Options.Durable
	editorTools func([]tool.Tool, *sandbox.Policy) []tool.Tool
	resume      bool // rein run --resume: continue the session's cut-short turn
}

func (f *agentFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.model, "model", "m", "", "model as PROVIDER/NAME: anthropic, openai, openai-responses, ollama, deepseek, openrouter or openai-compatible")
	fl.StringVar(&f.baseURL, "base-url", "", "the provider's API root (default from $ANTHROPIC_BASE_URL, $OPENAI_BASE_URL or the config)")
	fl.StringVarP(&f.session, "session", "s", "", "continue the session with this id or a unique prefix of it")
	fl.StringVar(&f.newSession, "new-session", "", "start a new session with this id")
	fl.StringVar(&f.fork, "fork", "", "start from a copy of session ID, up to event SEQ when given: ID[@SEQ]")
	fl.StringVarP(&f.cwd, "cwd", "C", "", "the workspace directory (default the current directory)")
	fl.StringVar(&f.tools, "tools", "", "comma-separated tools, or none (default "+strings.Join(defaultTools, ",")+"; add "+agent.SpawnToolName+" to let the model start subagents, named ones from .rein/agents)")
	fl.StringVar(&f.approve, "approve", "", "approval of writes and commands: auto, ask or deny (default ask on a terminal, else deny)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "tools that change things only say what they would do")
	fl.IntVar(&f.maxSteps, "max-steps", 0, "stop the turn after N steps (default 100)")
	fl.Float64Var(&f.maxCost, "max-cost", 0, "stop the turn before spending more than USD")
	fl.StringVar(&f.system, "system", "", "the system prompt, as TEXT or @FILE (the environment — directory, OS, date, git branch — and AGENTS.md and CLAUDE.md are added)")
	fl.DurationVar(&f.net.stall, "stall-timeout", defaultStallTimeout, "abandon and retry a model request that sends nothing for this long")
	fl.DurationVar(&f.net.connect, "connect-timeout", defaultConnectTimeout, "give up connecting to the provider after this long")
	registerMCPFlag(fl, &f.mcp)
	addHooksFlag(cmd, &f.hooks)
	f.sandbox.register(fl)
	f.perms.register(fl)
	completeFlagValues(cmd)
}

// setup is everything one agent needs, built from flags and config.
type setup struct {
	target  target
	root    string
	store   session.Store
	kit     *toolKit
	system  string
	agent   *agent.Agent
	approve string
	// runHooks are run-level handlers every run gets (the MCP servers'
	// auth checks); the hook commands are the agent's own.
	runHooks *hook.Set
	commands *command.Runner
	mcp      *mcp.Manager // nil without MCP servers
	mcpLog   *mcpLog      // its lifecycle events, for the session log
	resumed  bool         // the session existed before
	shared   bool         // store is the host's: not closed here
	box      *shellBox    // where the shell's commands run; nil without a shell
	team     *teamKit     // the workspace's memory files and skills
	kids     childView    // shows the subagents' events
	// discard deletes the session on Close: it was made for a run that
	// never reached the model.
	discard bool
	// stopTelemetry flushes exported spans; nil when OTEL_* asks for none.
	stopTelemetry func() error
}

// mcpSets gives the agent the MCP servers' current tools at every step.
func (s *setup) mcpSets() []*tool.Set {
	if s.mcp == nil {
		return nil
	}
	return []*tool.Set{s.mcp.Set()}
}

// request is a RunRequest for prompt with the setup's run-level hooks.
func (s *setup) request(prompt string) *agent.RunRequest {
	req := &agent.RunRequest{Prompt: prompt, Hooks: s.runHooks}
	if s.agent != nil {
		req.Parts, _ = s.team.parts(s.agent.Session(), prompt) // /NAME starts a skill
	}
	return req
}

// fire runs the hook commands of a session event, if any are configured.
func (s *setup) fire(ctx context.Context, req *command.FireRequest) {
	if s.commands == nil || s.agent == nil {
		return
	}
	req.Session = s.agent.Session()
	s.commands.Fire(ctx, req)
}

func (s *setup) Close() error {
	return s.closeWith("other")
}

// closeWith fires SessionEnd with reason, then closes the agent and store.
func (s *setup) closeWith(reason string) error {
	s.fire(context.Background(), &command.FireRequest{Event: "SessionEnd", Reason: reason})
	var errs []error
	if s.agent != nil {
		errs = append(errs, s.agent.Close())
		if s.discard {
			errs = append(errs, s.store.Delete(context.Background(), s.agent.Session()))
		}
	} else if s.kit != nil {
		for _, c := range s.kit.closers {
			errs = append(errs, c.Close())
		}
	}
	if s.stopTelemetry != nil {
		errs = append(errs, s.stopTelemetry())
	}
	if s.root != "" {
		errs = append(errs, ignoreReinState(s.root))
	}
	if s.store != nil && !s.shared {
		errs = append(errs, s.store.Close())
	}
	return errors.Join(errs...)
}

// workspace resolves --cwd to an absolute directory.
func workspace(cwd string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	root, err := filepath.Abs(cwd)
	if err != nil {
		return "", usageErrorf("--cwd %s: %v", cwd, err)
	}
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return "", usageErrorf("--cwd %s: not a directory", cwd)
	}
	return root, nil
}

// resolveSession picks the session and reports whether it existed before:
// --fork makes a copy, --new-session creates one with the id given,
// --session opens one by its id or a unique prefix of it (in chat, an
// unknown id is created), and otherwise a new session is created in the
// workspace.
func resolveSession(ctx context.Context, st session.Store, f *agentFlags, root string) (session.ID, bool, error) {
	set := 0
	for _, v := range []string{f.fork, f.session, f.newSession} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return "", false, usageErrorf("--fork, --session and --new-session exclude each other: give one")
	}
	switch {
	case f.fork != "":
		id, err := forkSession(ctx, st, f.fork)
		return id, false, err
	case f.newSession != "":
		id := session.ID(f.newSession)
		if err := session.CheckID(id); err != nil {
			return "", false, usageErrorf("--new-session %q: %v", f.newSession, err)
		}
		if _, err := st.Info(ctx, id); err == nil {
			return "", false, usageErrorf("--new-session %s: that session exists; continue it with --session %s", id, id)
		}
		id, err := st.Create(ctx, &session.CreateRequest{ID: id, WorkDir: root})
		return id, false, err
	case f.session != "" && f.existing:
		info, err := findSession(ctx, st, f.session)
		if err != nil {
			return "", false, err
		}
		return info.ID, true, nil
	case f.session != "":
		id := session.ID(f.session)
		if err := session.CheckID(id); err != nil {
			return "", false, usageErrorf("--session %q: %v", f.session, err)
		}
		if _, err := st.Info(ctx, id); err == nil {
			return id, true, nil
		} else if !errors.Is(err, session.ErrNotFound) {
			return "", false, err
		}
		id, err := st.Create(ctx, &session.CreateRequest{ID: id, WorkDir: root})
		return id, false, err
	}
	id, err := st.Create(ctx, &session.CreateRequest{WorkDir: root})
	return id, false, err
}

// forkSession forks spec, ID[@SEQ], and returns the new session's id.
func forkSession(ctx context.Context, st session.Store, spec string) (session.ID, error) {
	idStr, seqStr, hasSeq := strings.Cut(spec, "@")
	id := session.ID(idStr)
	info, err := st.Info(ctx, id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return "", usageErrorf("session %s not found; list them with 'rein sessions list'", id)
		}
		return "", err
	}
	seq := info.LastSeq
	if hasSeq {
		n, err := strconv.ParseInt(seqStr, 10, 64)
		if err != nil || n < 0 || n > info.LastSeq {
			return "", usageErrorf("fork %s: SEQ must be a number from 0 to %d", spec, info.LastSeq)
		}
		seq = n
	}
	return session.Fork(ctx, st, id, seq)
}

// build makes the agent. ask answers approvals in ask mode (nil: deny).
func (a *app) build(ctx context.Context, f *agentFlags, ask tool.Approver, interactive bool) (*setup, error) {
	s := &setup{}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	spec := f.model
	if spec == "" {
		spec = a.getenv("REIN_MODEL")
	}
	t, err := resolveTarget(spec, f.baseURL, a.cfg, a.getenv)
	if err != nil {
		return nil, err
	}
	s.target = t
	if s.root, err = workspace(f.cwd); err != nil {
		return nil, err
	}
	if s.system, err = systemPrompt(f.system, s.root); err != nil {
		return nil, err
	}
	tools := f.tools
	if tools == "" {
		tools = a.getenv("REIN_TOOLS")
	}
	names, err := parseToolList(tools, a.cfg)
	if err != nil {
		return nil, err
	}
	if s.team, err = loadTeam(s.root, names); err != nil {
		return nil, err
	}
	mode := f.approve
	if mode == "" {
		mode = a.getenv("REIN_APPROVE")
	}
	if mode == "" && a.cfg != nil {
		mode = a.cfg.Approve
	}
	if mode == "" {
		mode = "deny"
		if interactive {
			mode = "ask"
		}
	}
	s.approve = mode
	rules, err := permissionRules(s.root, &f.perms, func(w string) { fmt.Fprintln(a.stderr, "rein: "+w) })
	if err != nil {
		return nil, err
	}
	approver, err := newApprover(mode, ask, rules...)
	if err != nil {
		return nil, err
	}
	approver = s.team.approver(approver, rules)
	model, err := buildModel(t, providerClient(f.net))
	if err != nil {
		return nil, err
	}
	model = failFast(model)
	if f.store != nil {
		s.store, s.shared = f.store, true
	} else if s.store, err = a.openStore(); err != nil {
		return nil, err
	}
	sid, resumed, err := resolveSession(ctx, s.store, f, s.root)
	s.resumed = resumed
	if err != nil {
		return nil, err
	}
	if s.box, err = a.shellBox(&f.sandbox, s.root, mode, names); err != nil {
		return nil, err
	}
	if s.box != nil {
		if err := s.store.SetMeta(ctx, sid, "sandbox", s.box.meta); err != nil {
			return nil, err
		}
	}
	if s.kit, err = buildTools(s.root, "", names, s.box, a.childModels(t, f.net)); err != nil {
		return nil, err
	}
	if f.editorTools != nil {
		s.kit.tools = f.editorTools(s.kit.tools, s.kit.policy)
	}
	s.kit.tools = append(s.kit.tools, s.team.tools()...)
	// Traces, when OTEL_* asks for them: hook commands and MCP servers
	// are told the trace context of what they serve.
	tr, err := a.tracing(ctx)
	if err != nil {
		return nil, err
	}
	var traceParent func(hook.Scope, llm.CallID) string
	if tr != nil {
		s.stopTelemetry, traceParent = tr.stop, tr.obs.TraceParent
	}
	// Hook commands of the config file and the workspace's settings.
	var hooks *hook.Set
	notices := s.kit.notices
	if s.commands, err = a.loadHooks(s.root, f.hooks, s.store, mode, traceParent); err != nil {
		return nil, err
	}
	if s.commands != nil {
		hooks = s.commands.Hooks()
		notices = joinNotices(s.kit.notices, s.commands.Notices)
		if s.kit.shell != nil {
			s.kit.shell.SourceEnv(s.commands.EnvFile(sid))
		}
	}
	// MCP servers from the config file and --mcp: their tools join the
	// built-in ones, their instructions the system prompt, their auth
	// checks every run.
	s.mcpLog = new(mcpLog)
	host := &mcpHost{root: s.root, flags: f.mcp, extra: f.editorMCP, out: a.stderr, events: s.mcpLog.add, model: model, modelName: t.model, approve: approver}
	if t, ok := ask.(*ttyApprover); ok && interactive {
		host.atTerminal(t)
	}
	if tr != nil {
		host.tracer, host.meter = tr.tp, tr.mp
	}
	if c, ok := ask.(*chatApprover); ok {
		host.elicit = c.Elicit // the chat shows a form
	}
	mgr, err := a.mcpTools(ctx, host)
	if err != nil {
		return nil, err
	}
	if mgr != nil {
		s.kit.closers = append(s.kit.closers, mgr.Closers()...)
		// A server that fails to start does not stop the others: say so
		// and go on with the tools of those that started.
		if _, err := mgr.Tools(ctx); err != nil {
			var be *mcp.BootstrapError
			if !errors.As(err, &be) {
				return nil, fmt.Errorf("MCP tools: %w", err)
			}
			fmt.Fprintf(a.stderr, "rein: %v\n", err)
		}
		s.mcp = mgr
		if in := mgr.Instructions(); in != "" {
			s.system += "\n\n" + in
		}
		s.runHooks = mgr.Hooks()
	}
	if tr != nil {
		hooks = tr.obs.Register(hooks)
	}
	maxSteps := f.maxSteps
	if maxSteps == 0 && a.cfg != nil {
		maxSteps = a.cfg.MaxSteps
	}
	s.agent, err = agent.New(&agent.Options{
		Model: model, Provider: t.provider.name, ModelName: t.model, SystemSections: s.team.sections(),
		System: s.system,
		Tools:  s.kit.tools,
		// An MCP server's tools are read again at every step, so a
		// tools/list_changed reaches the next request.
		DynamicTools: s.mcpSets,
		Records:      s.records(sid),
		Store:        s.store,
		Session:      sid,
		Hooks:        hooks,
		Approver:     approver,
		DryRun:       f.dryRun,
		Durable:      f.resume || f.durable,
		Closers:      s.kit.closers,
		// Spilled output stays inside the workspace, where the model's
		// read tool can open the file it is pointed to.
		SpillDir: filepath.Join(s.root, ".rein", "spill"),
		Notices:  joinNotices(notices, s.team.mem.Notices),
		Limits:   agent.Limits{MaxSteps: maxSteps, MaxCost: f.maxCost},
		Cost:     catalogCost,
		// Compact automatically near the context window, and let providers
		// with explicit caching (Anthropic) cache the growing prefix.
		Compaction:  &agent.CompactionOptions{},
		PromptCache: &llm.CacheHint{},
	})
	if err != nil {
		return nil, fmt.Errorf("start the agent: %w", err)
	}
	host.charge = s.agent.Charge // servers' completions count toward --max-cost
	source := "startup"
	if s.resumed {
		source = "resume"
	}
	s.fire(ctx, &command.FireRequest{Event: "SessionStart", Source: source})
	ok = true
	return s, nil
}

func (a *app) runCommand() *cobra.Command {
	f := &agentFlags{existing: true}
	var (
		cont        bool
		jsonOut     bool
		timeout     time.Duration
		showContext bool
		queue       string
	)
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT [-]",
		Short: "Run one turn of the agent and exit",
		Long: `Run sends PROMPT (or stdin, when PROMPT is -) to the model, lets it use the
tools until it answers, and exits. Input piped to stdin after a PROMPT (or
named by a - after it) is appended to the prompt as context. The answer streams to stdout and tool
activity to stderr; --json prints the turn's session events as NDJSON instead,
live, with the answer's text.delta lines and a last "result" line.

Exit codes: 0 completed, 1 the turn ended in error, 2 usage or configuration
error, 3 ended by a limit, a budget, a block or a provider's refusal, 130
cancelled (Ctrl-C).`,
		Example: `  rein run "why does the build fail?"
  git diff | rein run --tools none "review this diff" -
  rein run --model ollama/qwen3 --approve auto "add a test for parse"
  rein run --session 01J... "and now the docs"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if showContext {
				return cobra.MaximumNArgs(1)(cmd, args)
			}
			if f.resume {
				return resumeArgs(args)
			}
			if len(args) == 0 || len(args) > 2 || (len(args) == 2 && args[1] != "-") {
				return usageErrorf("rein run needs one PROMPT argument, PROMPT - (stdin appended as context) or - (the prompt from stdin), got %s\nRun 'rein run --help' for usage.", plural(len(args), "argument"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if showContext {
				return a.showContext(cmd, f)
			}
			if f.resume {
				return a.resumeTurn(cmd.Context(), f, cont, jsonOut, timeout)
			}
			prompt, err := a.runPrompt(args)
			if err != nil {
				return err
			}
			if cont {
				if err := a.continueLatest(cmd.Context(), f); err != nil {
					return err
				}
			}
			if queue != "" {
				return a.runQueued(cmd.Context(), f, prompt, queue, jsonOut, timeout)
			}
			return a.runTurn(cmd.Context(), f, prompt, jsonOut, timeout)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&cont, "continue", "c", false, "continue the workspace's latest session")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the turn's session events as NDJSON on stdout as they are recorded, with text.delta lines and a closing result line (answer, end, usage, cost, session)")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "end the turn after this long (e.g. 5m); exit code 3")
	cmd.Flags().StringVar(&queue, "queue", "", "submit the turn to this queue for a 'rein worker' to run (needs --store postgres://… or sqlite:PATH), and follow it")
	cmd.Flags().BoolVar(&showContext, "show-context", false, "print the system prompt and tools the model would be given, and exit")
	registerResume(cmd, f)
	return cmd
}

// showContext prints what the model will be given.
func (a *app) showContext(cmd *cobra.Command, f *agentFlags) error {
	root, err := workspace(f.cwd)
	if err != nil {
		return err
	}
	sys, err := systemPrompt(f.system, root)
	if err != nil {
		return err
	}
	names, err := parseToolList(f.tools, a.cfg)
	if err != nil {
		return err
	}
	kit, err := buildTools(root, "", names, nil, nil)
	if err != nil {
		return err
	}
	for _, c := range kit.closers {
		defer c.Close()
	}
	team, err := loadTeam(root, names)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintln(w, "# System prompt")
	fmt.Fprintln(w)
	fmt.Fprintln(w, sys)
	for _, sec := range team.sections() {
		fmt.Fprintln(w)
		fmt.Fprintln(w, sec.Text)
	}
	fmt.Fprintln(w)
	showMemory(w, team.mem)
	if err := showBreakdown(cmd.Context(), w, sys, team, kit.tools); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "# Tools")
	for _, t := range append(kit.tools, team.tools()...) {
		sp := t.Spec()
		desc, _, _ := strings.Cut(sp.Description, "\n")
		fmt.Fprintf(w, "%-12s %s\n", sp.Name, desc)
	}
	return nil
}

// runTurn runs one turn and maps its end to an exit code.
func (a *app) runTurn(ctx context.Context, f *agentFlags, prompt string, jsonOut bool, timeout time.Duration) error {
	return a.streamTurn(ctx, f, jsonOut, timeout, func(ctx context.Context, s *setup) iter.Seq2[session.Event, error] {
		req := s.request(prompt)
		req.Children = true // subagents' progress shows as it happens
		return s.agent.Stream(ctx, req)
	})
}

// streamTurn runs the turn start streams, shows it and maps its end to
// an exit code.
func (a *app) streamTurn(ctx context.Context, f *agentFlags, jsonOut bool, timeout time.Duration, start func(context.Context, *setup) iter.Seq2[session.Event, error]) error {
	interactive := isTerminal(os.Stdin)
	s, err := a.build(ctx, f, &ttyApprover{out: a.stderr}, interactive)
	if err != nil {
		return err
	}
	defer s.Close()

	// The turn runs on its own context: the first Ctrl-C cancels it through
	// the agent so the log records why, and the turn is closed cleanly.
	runCtx := context.WithoutCancel(ctx)
	done := make(chan struct{})
	defer close(done)
	var timer <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timer = tm.C
	}
	go func() {
		select {
		case <-ctx.Done():
			s.agent.Cancel("user")
		case <-timer:
			s.agent.Cancel("timeout")
		case <-done:
		}
	}()

	var r renderer
	var jr *jsonRenderer // the result line goes last
	if jsonOut {
		jr = &jsonRenderer{w: bufio.NewWriter(a.stdout)}
		r = jr
	} else {
		r = newTextRenderer(a.stdout, a.stderr, a.outTTY)
	}
	var end *session.TurnEnd
	var last *session.AssistantMessage
	var runErr error
	var sum tally
	began := time.Now()
	for ev, err := range start(runCtx, s) {
		if err != nil {
			runErr = err
			break
		}
		if ev.ParentRun != "" {
			s.kids.show(r, ev)
			continue
		}
		sum.add(ev)
		switch d := ev.Data.(type) {
		case *session.TurnEnd:
			end = d
		case *session.AssistantMessage:
			last = d
		}
		r.event(ev)
	}
	r.flush()
	if jr != nil {
		sid := s.agent.Session()
		if unused(s, end, &sum) {
			sid = "" // not kept
		}
		jr.result(sid, end, runErr)
	} else if a.errTTY {
		fmt.Fprintln(a.stderr, summaryLine(&sum, time.Since(began)))
	}
	a.keepSession(runCtx, s, end, &sum)
	if err := turnExit(end, runErr); err != nil {
		return err
	}
	return refused(last)
}

// turnExit maps how a turn ended to the process's exit code.
func turnExit(end *session.TurnEnd, runErr error) error {
	if end == nil {
		if runErr == nil {
			runErr = errors.New("the turn ended without a record of why")
		}
		return &codeError{code: exitError, err: runErr}
	}
	switch end.Reason {
	case session.EndCompleted:
		return nil
	case session.EndAborted:
		if end.Cause == "user" {
			return &codeError{code: exitCancelled, err: errors.New("cancelled")}
		}
		return &codeError{code: exitStopped, err: fmt.Errorf("the turn was stopped (%s)", end.Cause)}
	case session.EndMaxSteps:
		return &codeError{code: exitStopped, err: errors.New("the turn reached its step limit; raise it with --max-steps or continue with --session")}
	case session.EndBudget:
		return &codeError{code: exitStopped, err: budgetMessage(end, runErr)}
	case session.EndBlocked:
		return &codeError{code: exitStopped, err: fmt.Errorf("the turn was blocked: %s", end.Message)}
	case session.EndMaxTokens:
		return &codeError{code: exitStopped, err: errors.New("the model hit its output token limit; continue with --session")}
	}
	if err := overflowMessage(runErr); err != nil {
		return &codeError{code: exitError, err: err}
	}
	msg := end.Message
	if msg == "" && runErr != nil {
		msg = runErr.Error()
	}
	if msg == "" {
		msg = string(end.Reason)
	}
	return &codeError{code: exitError, err: fmt.Errorf("the turn ended in error: %s", msg)}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ttyApprover asks the person at the terminal, reading /dev/tty.
type ttyApprover struct {
	out io.Writer
}

func (t *ttyApprover) Approve(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
	tty, err := os.Open("/dev/tty")
	if err != nil && req.HookAsked {
		return tool.Approval{Verdict: tool.Deny, Reason: "a hook asks for approval (" + req.Reason + ") and no one can be asked; run at a terminal with --approve ask"}, nil
	}
	if err != nil {
		return tool.Approval{Verdict: tool.Deny, Reason: "no terminal to ask on; use --approve auto or deny"}, nil
	}
	defer tty.Close()
	fmt.Fprintf(t.out, "\nrein: allow %s? [y]es / [n]o / [a]lways for this tool: ", approvalSubject(req))
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(tty).ReadString('\n')
		got <- answer{line, err}
	}()
	var line string
	select {
	case a := <-got:
		if a.err != nil && a.line == "" {
			return tool.Approval{Verdict: tool.Deny, Reason: "no answer"}, nil
		}
		line = a.line
	case <-ctx.Done():
		// Closing the terminal ends the read.
		tty.Close()
		return tool.Approval{Verdict: tool.Deny, Reason: "the turn ended before an answer"}, ctx.Err()
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return tool.Approval{Verdict: tool.Allow, Reason: "approved at the terminal"}, nil
	case "a", "always":
		return tool.Approval{Verdict: tool.Allow, Always: true, Reason: "approved for the session at the terminal"}, nil
	}
	return tool.Approval{Verdict: tool.Deny, Reason: "denied at the terminal"}, nil
}

// approvalSubject names what a call wants to do: the tool and its command
// or path when it has one, else its arguments.
func approvalSubject(req *tool.ApprovalRequest) string {
	what := req.Command
	if what == "" {
		what = req.Path
	}
	if what == "" {
		var args struct {
			Command string `json:"command"`
			Path    string `json:"path"`
		}
		if json.Unmarshal(req.Args, &args) == nil {
			what = args.Command
			if what == "" {
				what = args.Path
			}
		}
	}
	if what == "" {
		what = shortArgs(req.Args)
	}
	return req.Tool + " " + shorten(what, 80)
}

// shorten cuts s to n runes with an ellipsis, on one line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
