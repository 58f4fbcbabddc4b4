package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/mcp"
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
