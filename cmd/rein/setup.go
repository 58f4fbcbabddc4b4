package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

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

// build makes the agent. ask answers approvals in ask mode (nil: deny).
func (a *app) build(ctx context.Context, f *agentFlags, ask tool.Approver, interactive bool) (*setup, error) {
	s := &setup{}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	b := &building{f: f, ask: ask, interactive: interactive}
	steps := []func(context.Context, *setup, *building) error{
		a.buildWorkspace, a.buildApprover, a.buildSession, a.buildTools, a.buildHooks, a.buildMCP, a.buildAgent,
	}
	for _, step := range steps {
		if err := step(ctx, s, b); err != nil {
			return nil, err
		}
	}
	source := "startup"
	if s.resumed {
		source = "resume"
	}
	s.fire(ctx, &command.FireRequest{Event: "SessionStart", Source: source})
	ok = true
	return s, nil
}

// building is what the steps of build pass on to one another.
type building struct {
	f           *agentFlags
	ask         tool.Approver
	interactive bool

	names    []string // the built-in tools asked for
	approver tool.Approver
	model    llm.Model
	sid      session.ID
	tr       *tracing // nil when OTEL_* asks for nothing
	hooks    *hook.Set
	notices  func() []string
	host     *mcpHost
}

// buildWorkspace resolves the model, the workspace, the system prompt,
// the tools asked for and the workspace's memory files and skills.
func (a *app) buildWorkspace(_ context.Context, s *setup, b *building) error {
	spec := cmp.Or(b.f.model, a.getenv("REIN_MODEL"))
	t, err := resolveTarget(spec, b.f.baseURL, a.cfg, a.getenv)
	if err != nil {
		return err
	}
	s.target = t
	if s.root, err = workspace(b.f.cwd); err != nil {
		return err
	}
	if s.system, err = systemPrompt(b.f.system, s.root); err != nil {
		return err
	}
	if b.names, err = parseToolList(cmp.Or(b.f.tools, a.getenv("REIN_TOOLS")), a.cfg); err != nil {
		return err
	}
	s.team, err = loadTeam(s.root, b.names)
	return err
}

// buildApprover settles the approval mode (flag, environment, config,
// then ask at a terminal and deny elsewhere) and its rules, and the model.
func (a *app) buildApprover(_ context.Context, s *setup, b *building) error {
	mode := cmp.Or(b.f.approve, a.getenv("REIN_APPROVE"))
	if mode == "" && a.cfg != nil {
		mode = a.cfg.Approve
	}
	if mode == "" {
		mode = "deny"
		if b.interactive {
			mode = "ask"
		}
	}
	s.approve = mode
	rules, err := permissionRules(s.root, &b.f.perms, func(w string) { fmt.Fprintln(a.stderr, "rein: "+w) })
	if err != nil {
		return err
	}
	approver, err := newApprover(mode, b.ask, rules...)
	if err != nil {
		return err
	}
	b.approver = s.team.approver(approver, rules)
	model, err := buildModel(s.target, providerClient(b.f.net))
	if err != nil {
		return err
	}
	b.model = failFast(model)
	return nil
}

// buildSession opens the store and the session the flags name.
func (a *app) buildSession(ctx context.Context, s *setup, b *building) error {
	var err error
	if b.f.store != nil {
		s.store, s.shared = b.f.store, true
	} else if s.store, err = a.openStore(); err != nil {
		return err
	}
	b.sid, s.resumed, err = resolveSession(ctx, s.store, b.f, s.root)
	return err
}

// buildTools makes the shell's sandbox and the built-in tools, the
// editor's in place of some when an editor runs rein, and the skills'.
func (a *app) buildTools(ctx context.Context, s *setup, b *building) error {
	var err error
	if s.box, err = a.shellBox(&b.f.sandbox, s.root, s.approve, b.names); err != nil {
		return err
	}
	if s.box != nil {
		if err := s.store.SetMeta(ctx, b.sid, "sandbox", s.box.meta); err != nil {
			return err
		}
	}
	if s.kit, err = buildTools(s.root, "", b.names, s.box, a.childModels(s.target, b.f.net)); err != nil {
		return err
	}
	if b.f.editorTools != nil {
		s.kit.tools = b.f.editorTools(s.kit.tools, s.kit.policy)
	}
	s.kit.tools = append(s.kit.tools, s.team.tools()...)
	return nil
}

// buildHooks starts traces, when OTEL_* asks for them, and loads the
// hook commands of the config file and the workspace's settings; hook
// commands and MCP servers are told the trace context of what they serve.
func (a *app) buildHooks(ctx context.Context, s *setup, b *building) error {
	var err error
	if b.tr, err = a.tracing(ctx); err != nil {
		return err
	}
	var traceParent func(hook.Scope, llm.CallID) string
	if b.tr != nil {
		s.stopTelemetry, traceParent = b.tr.stop, b.tr.obs.TraceParent
	}
	b.notices = s.kit.notices
	if s.commands, err = a.loadHooks(s.root, b.f.hooks, s.store, s.approve, traceParent); err != nil {
		return err
	}
	if s.commands != nil {
		b.hooks = s.commands.Hooks()
		b.notices = joinNotices(s.kit.notices, s.commands.Notices)
		if s.kit.shell != nil {
			s.kit.shell.SourceEnv(s.commands.EnvFile(b.sid))
		}
	}
	return nil
}

// buildMCP starts the MCP servers of the config file and --mcp: their
// tools join the built-in ones, their instructions the system prompt,
// their auth checks every run.
func (a *app) buildMCP(ctx context.Context, s *setup, b *building) error {
	s.mcpLog = new(mcpLog)
	host := &mcpHost{root: s.root, flags: b.f.mcp, extra: b.f.editorMCP, out: a.stderr, events: s.mcpLog.add,
		model: b.model, modelName: s.target.model, approve: b.approver}
	b.host = host
	if t, ok := b.ask.(*ttyApprover); ok && b.interactive {
		host.atTerminal(t)
	}
	if b.tr != nil {
		host.tracer, host.meter = b.tr.tp, b.tr.mp
	}
	if c, ok := b.ask.(*chatApprover); ok {
		host.elicit = c.Elicit // the chat shows a form
	}
	mgr, err := a.mcpTools(ctx, host)
	if err != nil || mgr == nil {
		return err
	}
	s.kit.closers = append(s.kit.closers, mgr.Closers()...)
	// A server that fails to start does not stop the others: say so and
	// go on with the tools of those that started.
	if _, err := mgr.Tools(ctx); err != nil {
		var be *mcp.BootstrapError
		if !errors.As(err, &be) {
			return fmt.Errorf("MCP tools: %w", err)
		}
		fmt.Fprintf(a.stderr, "rein: %v\n", err)
	}
	s.mcp = mgr
	if in := mgr.Instructions(); in != "" {
		s.system += "\n\n" + in
	}
	s.runHooks = mgr.Hooks()
	return nil
}

// buildAgent makes the agent of all the parts.
func (a *app) buildAgent(_ context.Context, s *setup, b *building) error {
	hooks := b.hooks
	if b.tr != nil {
		hooks = b.tr.obs.Register(hooks)
	}
	maxSteps := b.f.maxSteps
	if maxSteps == 0 && a.cfg != nil {
		maxSteps = a.cfg.MaxSteps
	}
	var err error
	s.agent, err = agent.New(&agent.Options{
		Model: b.model, Provider: s.target.provider.name, ModelName: s.target.model, SystemSections: s.team.sections(),
		System: s.system,
		Tools:  s.kit.tools,
		// An MCP server's tools are read again at every step, so a
		// tools/list_changed reaches the next request.
		DynamicTools: s.mcpSets,
		Records:      s.records(b.sid),
		Store:        s.store,
		Session:      b.sid,
		Hooks:        hooks,
		Approver:     b.approver,
		DryRun:       b.f.dryRun,
		Durable:      b.f.resume || b.f.durable,
		Closers:      s.kit.closers,
		// Spilled output stays inside the workspace, where the model's
		// read tool can open the file it is pointed to.
		SpillDir: filepath.Join(s.root, ".rein", "spill"),
		Notices:  joinNotices(b.notices, s.team.mem.Notices),
		Limits:   agent.Limits{MaxSteps: maxSteps, MaxCost: b.f.maxCost},
		Cost:     catalogCost,
		// Compact automatically near the context window, and let providers
		// with explicit caching (Anthropic) cache the growing prefix.
		Compaction:  &agent.CompactionOptions{},
		PromptCache: &llm.CacheHint{},
	})
	if err != nil {
		return fmt.Errorf("start the agent: %w", err)
	}
	b.host.charge = s.agent.Charge // servers' completions count toward --max-cost
	return nil
}
