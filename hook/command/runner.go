package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// Options configures a Runner. The zero value is usable.
type Options struct {
	// Dir is the project directory: the commands' working directory, the
	// "cwd" they are told and $REIN_PROJECT_DIR / $CLAUDE_PROJECT_DIR.
	// Empty means the process's working directory.
	Dir string
	// Shell runs each command as Shell -c COMMAND. Empty means /bin/sh.
	Shell string
	// Env is added to the commands' environment ("NAME=value").
	Env []string
	// PassEnv names variables of rein's environment that look like
	// secrets (API keys, tokens, passwords) and are passed anyway. Others
	// like them are withheld, and their values are cut from hook output.
	PassEnv []string
	// BaseEnv is the environment commands inherit; nil means os.Environ().
	BaseEnv []string
	// DefaultTimeout bounds a command whose entry sets none; zero means
	// DefaultTimeout (60 s).
	DefaultTimeout time.Duration
	// MaxOutput bounds the bytes kept of each of a command's stdout and
	// stderr; zero means DefaultMaxOutput (64 KiB).
	MaxOutput int
	// Transcript returns the path of a session's NDJSON log or export, told
	// to commands as transcript_path. Nil means an empty path.
	Transcript func(session.ID) string
	// OnReport, when set, is called once per command run with what it did,
	// from the goroutine that ran the hook point. A host shows warnings and
	// system messages from here.
	OnReport func(Report)
	// Logger receives non-blocking hook errors and system messages; nil
	// discards them.
	Logger *slog.Logger
}

// Report describes one command run: what ran, how it ended and what it
// decided. Payload turns it into a hook.decision event.
type Report struct {
	Event    string
	Matcher  string
	Command  string
	Source   string
	Session  session.ID
	Turn     session.TurnID
	CallID   llm.CallID
	Tool     string
	ExitCode int // -1 when the process was killed or did not start
	Duration time.Duration
	TimedOut bool
	// Decision is continue, deny, allow, ask, edit, stop, nudge, context
	// or error (a non-blocking error, or a failure that failed closed).
	Decision      string
	Reason        string
	SystemMessage string
	Stderr        string // bounded, with rein's secrets cut out
}

// Payload returns the report as a hook.decision event payload; Detail
// carries the command, exit code and duration.
func (r *Report) Payload() *session.HookDecision {
	detail, _ := json.Marshal(struct {
		Event      string `json:"event"`
		Command    string `json:"command"`
		Source     string `json:"source,omitempty"`
		ExitCode   int    `json:"exit_code"`
		DurationMS int64  `json:"duration_ms"`
		TimedOut   bool   `json:"timed_out,omitempty"`
		System     string `json:"system_message,omitempty"`
	}{r.Event, r.Command, r.Source, r.ExitCode, r.Duration.Milliseconds(), r.TimedOut, r.SystemMessage})
	return &session.HookDecision{
		Point: pointOf(r.Event), Hook: r.Command, Decision: r.Decision,
		Reason: r.Reason, CallID: r.CallID, Detail: detail,
	}
}

func pointOf(event string) string {
	switch event {
	case PreToolUse:
		return string(hook.PointPreToolUse)
	case PostToolUse, PostToolUseFailure:
		return string(hook.PointToolResult)
	case UserPromptSubmit:
		return string(hook.PointPrompt)
	case Stop:
		return string(hook.PointFinalize)
	}
	return event
}

// Runner runs configured hook commands at rein's hook points. Build its
// handlers with Hooks, feed Notices to the agent so context from hooks
// reaches the model, and call Fire for the session events the host owns
// (SessionStart, SessionEnd, PreCompact). A Runner is safe for concurrent
// use; it starts no goroutine that outlives a hook point.
type Runner struct {
	entries []Entry
	opts    Options
	env     []string
	secrets []string

	mu        sync.Mutex
	pending   []string
	stops     map[turnKey]string
	nudged    map[turnKey]bool
	approvals map[llm.CallID]hook.ApprovalDecision
}

type turnKey struct {
	s session.ID
	t session.TurnID
}

// New returns a Runner for entries (from Load or Parse). Entries rein does
// not run (other hook types, unsupported events) are kept for listings
// and skipped.
func New(entries []Entry, opts *Options) (*Runner, error) {
	r := &Runner{stops: map[turnKey]string{}, nudged: map[turnKey]bool{}, approvals: map[llm.CallID]hook.ApprovalDecision{}}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Shell == "" {
		r.opts.Shell = "/bin/sh"
	}
	if r.opts.DefaultTimeout <= 0 {
		r.opts.DefaultTimeout = DefaultTimeout
	}
	if r.opts.MaxOutput <= 0 {
		r.opts.MaxOutput = DefaultMaxOutput
	}
	if r.opts.Logger == nil {
		r.opts.Logger = slog.New(slog.DiscardHandler)
	}
	for i := range entries {
		e := entries[i]
		if !e.Active() {
			continue
		}
		if toolEvent(e.Event) {
			m, err := compileMatcher(e.Matcher)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %s matcher %q: %v", ErrConfig, e.Source, e.Event, e.Matcher, err)
			}
			e.match = m
		}
		r.entries = append(r.entries, e)
	}
	base := r.opts.BaseEnv
	if base == nil {
		base = environ()
	}
	r.env, r.secrets = buildEnv(base, r.opts.PassEnv, r.opts.Env, r.opts.Dir)
	return r, nil
}

// Entries returns the entries the Runner runs, in configuration order.
func (r *Runner) Entries() []Entry { return r.entries }

func (r *Runner) has(event string) bool {
	for i := range r.entries {
		if r.entries[i].Event == event {
			return true
		}
	}
	return false
}

// name is a handler's name in hook.decision events: the event and its
// commands.
func (r *Runner) name(event string) string {
	var cmds []string
	for i := range r.entries {
		if e := &r.entries[i]; e.Event == event && !containsStr(cmds, e.Command) {
			cmds = append(cmds, e.Command)
		}
	}
	s := event + ": " + strings.Join(cmds, "; ")
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Hooks returns a hook.Set with a handler at each point some entry needs:
// PreToolUse at the pre-tool-use point (with an approval handler for its
// allow/ask answers), PostToolUse and PostToolUseFailure at the
// tool-result point, UserPromptSubmit at prompt submit, Stop at finalize,
// and a step-end handler that ends a turn a hook asked to stop.
func (r *Runner) Hooks() *hook.Set {
	s := new(hook.Set)
	if len(r.entries) == 0 {
		return s
	}
	if r.has(UserPromptSubmit) {
		s.Prompt(r.name(UserPromptSubmit), r.prompt)
	}
	if r.has(PreToolUse) {
		s.PreToolUse(r.name(PreToolUse), r.preToolUse)
		s.Approval(r.name(PreToolUse), r.approval)
		s.Dispatched("command-approvals", r.dispatched)
	}
	if r.has(PostToolUse) || r.has(PostToolUseFailure) {
		s.ToolResult(r.name(PostToolUse), r.postToolUse)
	}
	if r.has(Stop) {
		s.Finalize(r.name(Stop), r.stop)
	}
	s.StepEnd("command-stop", r.stepEnd)
	return s
}

// Notices returns, and forgets, the context hooks added since the last
// call: additionalContext, and the plain output of prompt-submit and
// session-start hooks. Set it as agent.Options.Notices so the next request
// sees it as context.
func (r *Runner) Notices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending
	r.pending = nil
	return p
}

func (r *Runner) addContext(ctx []string) {
	if len(ctx) == 0 {
		return
	}
	r.mu.Lock()
	r.pending = append(r.pending, ctx...)
	r.mu.Unlock()
}

func (r *Runner) setStop(k turnKey, reason string) {
	r.mu.Lock()
	if _, ok := r.stops[k]; !ok {
		r.stops[k] = reason
	}
	r.mu.Unlock()
}

func (r *Runner) takeStop(k turnKey) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason, ok := r.stops[k]
	delete(r.stops, k)
	return reason, ok
}

// result is one command's run and answer.
type result struct {
	e   *Entry
	out outcome
	ans answer
}

// call is one firing of an event.
type call struct {
	event string
	scope hook.Scope
	tool  string
	id    llm.CallID
	in    input
}

// fire runs every entry of c.event that matches c.tool, in parallel, and
// returns their results in configuration order. A command that timed out
// or could not run is an error: the boundary fails closed.
func (r *Runner) fire(ctx context.Context, c *call) ([]result, error) {
	var sel []*Entry
	var seen []string
	for i := range r.entries {
		e := &r.entries[i]
		if e.Event != c.event || !e.Matches(c.tool) || containsStr(seen, e.Command) {
			continue
		}
		seen = append(seen, e.Command)
		sel = append(sel, e)
	}
	if len(sel) == 0 {
		return nil, nil
	}
	c.in.SessionID = string(c.scope.Session)
	c.in.Turn = string(c.scope.Turn)
	c.in.Agent = c.scope.Agent
	c.in.Cwd = r.opts.Dir
	c.in.HookEventName = c.event
	if r.opts.Transcript != nil && c.scope.Session != "" {
		c.in.TranscriptPath = r.opts.Transcript(c.scope.Session)
	}
	var payload [2][]byte // rein spelling, Claude spelling
	for _, e := range sel {
		k := 0
		if e.Claude {
			k = 1
		}
		if payload[k] != nil {
			continue
		}
		in := c.in
		if c.tool != "" {
			in.ToolName = outName(c.tool, e.Claude)
		}
		b, err := json.Marshal(&in)
		if err != nil {
			return nil, fmt.Errorf("encode %s hook input: %w", c.event, err)
		}
		payload[k] = b
	}
	res := make([]result, len(sel))
	runOne := func(i int) {
		e := sel[i]
		p := payload[0]
		if e.Claude {
			p = payload[1]
		}
		res[i].e = e
		res[i].out = r.run(ctx, e.Command, e.Timeout, p)
		if res[i].out.err == nil {
			res[i].ans = decode(c.event, &res[i].out)
		}
	}
	if len(sel) == 1 {
		runOne(0)
	} else {
		var wg sync.WaitGroup
		for i := range sel {
			wg.Go(func() { runOne(i) })
		}
		wg.Wait()
	}
	var errs []error
	for i := range res {
		if err := res[i].out.err; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		for i := range res {
			r.report(ctx, c, &res[i], "")
		}
		return nil, errors.Join(errs...)
	}
	return res, nil
}

// report records one command run on the session log (through hook.Note)
// and tells OnReport and the logger about it; decision
// overrides the answer's own kind when set.
func (r *Runner) report(ctx context.Context, c *call, x *result, decision string) {
	a := &x.ans
	rep := Report{
		Event: c.event, Matcher: x.e.Matcher, Command: x.e.Command, Source: x.e.Source,
		Session: c.scope.Session, Turn: c.scope.Turn, CallID: c.id, Tool: c.tool,
		ExitCode: x.out.exit, Duration: x.out.dur, TimedOut: x.out.timedOut,
		SystemMessage: a.system, Stderr: x.out.stderr,
	}
	switch {
	case x.out.err != nil:
		rep.Decision, rep.Reason = "error", x.out.err.Error()
	case decision != "":
		rep.Decision = decision
	case a.stop:
		rep.Decision, rep.Reason = "stop", a.stopReason
	case a.kind == kindBlock:
		rep.Decision, rep.Reason = "deny", a.reason
	case a.kind == kindAsk:
		rep.Decision, rep.Reason = "ask", a.reason
	case a.kind == kindAllow:
		rep.Decision, rep.Reason = "allow", a.reason
	case a.update != nil:
		rep.Decision = "edit"
	case a.warning != "":
		rep.Decision, rep.Reason = "error", a.warning
	case len(a.context) > 0:
		rep.Decision = "context"
	default:
		rep.Decision = "continue"
	}
	if rep.Reason == "" && a.warning != "" {
		rep.Reason = a.warning
	}
	lg := r.opts.Logger
	if rep.Decision == "error" {
		lg.Warn("hook command failed", "event", c.event, "command", x.e.Command, "exit", rep.ExitCode, "reason", rep.Reason)
	}
	if a.system != "" {
		lg.Info("hook message", "event", c.event, "command", x.e.Command, "message", a.system)
	}
	// Every command run is on the session log with what it did, except
	// the plain continues of commands that said nothing.
	if rep.Decision != "continue" || rep.ExitCode != 0 {
		hook.Note(ctx, rep.Payload())
	}
	if r.opts.OnReport != nil {
		r.opts.OnReport(rep)
	}
}

func (r *Runner) prompt(ctx context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
	text := textOf(in.Parts)
	c := &call{event: UserPromptSubmit, scope: in.Scope, in: input{Prompt: &text}}
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	var deny, ctxs []string
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		switch {
		case a.stop:
			deny = append(deny, a.stopReason)
		case a.kind == kindBlock:
			deny = append(deny, a.reason)
		}
		ctxs = append(ctxs, a.context...)
	}
	if len(deny) > 0 {
		return &hook.Deny{Reason: strings.Join(deny, "; ")}, nil
	}
	r.addContext(ctxs)
	return nil, nil
}

// selects reports whether some entry of event matches the tool.
func (r *Runner) selects(event, tool string) bool {
	for i := range r.entries {
		if e := &r.entries[i]; e.Event == event && e.Matches(tool) {
			return true
		}
	}
	return false
}

func (r *Runner) preToolUse(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
	name := in.Call.Name
	if !r.selects(PreToolUse, name) {
		return nil, nil
	}
	c := &call{event: PreToolUse, scope: in.Scope, tool: name, id: in.Call.ID,
		in: input{ToolInput: outInput(name, in.Call.Args), ToolUseID: string(in.Call.ID)}}
	res, err := r.fire(ctx, c)
	if err != nil || len(res) == 0 {
		return nil, err
	}
	var deny, ctxs []string
	perm, permReason := kindContinue, ""
	args, edited := in.Call.Args, false
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		if a.stop {
			r.setStop(turnKey{in.Session, in.Turn}, a.stopReason)
			deny = append(deny, a.stopReason)
		}
		switch a.kind {
		case kindBlock:
			deny = append(deny, a.reason)
		case kindAsk, kindAllow:
			if a.kind > perm {
				perm, permReason = a.kind, a.reason
			}
		}
		if a.update != nil {
			next, err := applyUpdate(name, args, a.update)
			if err != nil {
				deny = append(deny, "hook "+quote(res[i].e.Command)+" returned an updatedInput that is not a JSON object")
				continue
			}
			args, edited = next, true
		}
		ctxs = append(ctxs, a.context...)
	}
	r.addContext(ctxs)
	if len(deny) > 0 {
		return &hook.Deny{Reason: strings.Join(deny, "; ")}, nil
	}
	if perm != kindContinue {
		var d hook.ApprovalDecision = &hook.Allow{Reason: permReason}
		if perm == kindAsk {
			d = &hook.Ask{Reason: permReason}
		}
		r.mu.Lock()
		r.approvals[in.Call.ID] = d
		r.mu.Unlock()
	}
	if edited {
		return &hook.EditArgs{Args: args}, nil
	}
	return nil, nil
}

// approval answers with the allow or ask a PreToolUse hook gave the call.
func (r *Runner) approval(ctx context.Context, in *hook.ToolInput) (hook.ApprovalDecision, error) {
	r.mu.Lock()
	d := r.approvals[in.Call.ID]
	delete(r.approvals, in.Call.ID)
	r.mu.Unlock()
	return d, nil
}

// dispatched forgets a permission answer of a call that never reached
// approval (denied, invalid after an edit).
func (r *Runner) dispatched(ctx context.Context, in *hook.DispatchedInput) error {
	r.mu.Lock()
	delete(r.approvals, in.Call.ID)
	r.mu.Unlock()
	return nil
}

func (r *Runner) postToolUse(ctx context.Context, in *hook.ToolResultInput) (hook.ResultDecision, error) {
	if in.Outcome != "" && in.Outcome != "execute" {
		return nil, nil // the call never ran: no post hook
	}
	event := PostToolUse
	if in.Result != nil && in.Result.IsError {
		event = PostToolUseFailure
	}
	name := in.Call.Name
	if !r.selects(event, name) {
		return nil, nil
	}
	resp := &toolResponse{}
	if in.Result != nil {
		resp.Output, resp.IsError = in.Result.TextOf(), in.Result.IsError
	}
	c := &call{scope: in.Scope, tool: name, id: in.Call.ID,
		in: input{ToolInput: outInput(name, in.Call.Args), ToolUseID: string(in.Call.ID)}}
	if resp.IsError {
		c.in.Error = resp.Output
	} else {
		c.in.ToolResponse = resp
	}
	c.event = event
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	var ctxs []string
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		if a.stop {
			r.setStop(turnKey{in.Session, in.Turn}, a.stopReason)
		}
		if a.kind == kindBlock {
			ctxs = append(ctxs, event+" hook on "+name+": "+a.reason)
		}
		ctxs = append(ctxs, a.context...)
	}
	r.addContext(ctxs)
	return nil, nil
}

func (r *Runner) stop(ctx context.Context, in *hook.FinalizeInput) (hook.FinalizeDecision, error) {
	k := turnKey{in.Session, in.Turn}
	if reason, ok := r.takeStop(k); ok {
		return &hook.Stop{Reason: reason}, nil
	}
	r.mu.Lock()
	active := r.nudged[k]
	r.mu.Unlock()
	c := &call{event: Stop, scope: in.Scope, in: input{StopHookActive: &active}}
	if in.Message != nil {
		t := textOf(in.Message.Parts)
		c.in.LastMessage = &t
	}
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	var block []string
	var stop *hook.Stop
	for i := range res {
		a := &res[i].ans
		switch {
		case a.stop:
			r.report(ctx, c, &res[i], "stop")
			if stop == nil {
				stop = &hook.Stop{Reason: a.stopReason}
			}
		case a.kind == kindBlock:
			r.report(ctx, c, &res[i], "nudge")
			block = append(block, a.reason)
		default:
			r.report(ctx, c, &res[i], "")
		}
		r.addContext(a.context)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if stop != nil {
		delete(r.nudged, k)
		return stop, nil
	}
	if len(block) > 0 {
		r.nudged[k] = true
		return &hook.Nudge{Text: strings.Join(block, "\n")}, nil
	}
	delete(r.nudged, k)
	return nil, nil
}

// stepEnd ends a turn a hook asked to stop (continue: false).
func (r *Runner) stepEnd(ctx context.Context, in *hook.StepEndInput) (hook.StepEndDecision, error) {
	if reason, ok := r.takeStop(turnKey{in.Session, in.Turn}); ok {
		return &hook.Stop{Reason: reason}, nil
	}
	return nil, nil
}

// FireRequest is a session event the host fires itself.
type FireRequest struct {
	// Event is SessionStart, SessionEnd or PreCompact.
	Event   string
	Session session.ID
	// Source is SessionStart's startup, resume, clear or compact.
	Source string
	// Reason is SessionEnd's reason: clear, logout, prompt_input_exit, other.
	Reason string
	// Trigger is PreCompact's manual or auto; Instructions its custom
	// instructions.
	Trigger      string
	Instructions string
}

// FireResult is what the hooks of a fired event answered.
type FireResult struct {
	// Blocked joins the reasons of hooks that blocked (exit 2, "block").
	Blocked string
	// Stop is the stopReason of a hook that answered continue: false.
	Stop string
	// Context is the context the hooks added; it is also queued for
	// Notices.
	Context []string
}

// Fire runs the hooks of a session event rein's hook points do not cover:
// SessionStart (its context reaches the next request through Notices),
// SessionEnd and PreCompact. A command that times out is an error.
func (r *Runner) Fire(ctx context.Context, req *FireRequest) (*FireResult, error) {
	switch req.Event {
	case SessionStart, SessionEnd, PreCompact:
	default:
		return nil, fmt.Errorf("command: Fire handles SessionStart, SessionEnd and PreCompact, not %q; the other events run through Hooks", req.Event)
	}
	c := &call{event: req.Event, scope: hook.Scope{Session: req.Session},
		in: input{Source: req.Source, Reason: req.Reason, Trigger: req.Trigger}}
	if req.Event == PreCompact {
		c.in.Instructions = &req.Instructions
	}
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	out := &FireResult{}
	var block []string
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		if a.stop && out.Stop == "" {
			out.Stop = a.stopReason
		}
		if a.kind == kindBlock {
			block = append(block, a.reason)
		}
		out.Context = append(out.Context, a.context...)
	}
	out.Blocked = strings.Join(block, "; ")
	r.addContext(out.Context)
	return out, nil
}

func textOf(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
