package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

func init() { extraCommands = append(extraCommands, (*app).replayCommand) }

func (a *app) replayCommand() *cobra.Command {
	var (
		cwd    string
		strict bool
		quiet  bool
		pace   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "replay ID|FILE",
		Short: "Re-run a recorded session offline",
		Long: `Replay re-runs a recorded session without a model provider: the recorded
responses play back as the model, and the tools run for real in a temporary
copy of the session's workspace (or of --cwd; an empty directory when neither
is known). Where the live run differs from the record — a different tool
result, a different request — the difference is reported.

FILE is an NDJSON log ('rein sessions export ID' writes one); ID is a session
in the store. No API key is needed.`,
		Example: `  rein replay examples/sessions/hello.ndjson
  rein replay --cwd . 01J...`,
		Args: exactArgs(1, "a session ID or an NDJSON FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := a.loadRecording(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer src.close()
			events, workDir := src.events, src.workDir
			if cwd != "" {
				workDir = cwd
			}
			if !cmd.Flags().Changed("pace") && !isTerminal(os.Stdout) {
				pace = 0 // no one is watching
			}
			rep, err := replaySession(cmd.Context(), events, &replayOptions{
				WorkDir: workDir, Out: a.stdout, Info: a.stderr, Quiet: quiet, Pace: pace, Children: src.children, TTY: a.outTTY,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "replayed %s, %s, %s; %s\n",
				plural(rep.turns, "turn"), plural(rep.responses, "model response"), plural(rep.toolCalls, "tool call"), plural(len(rep.divergences), "divergence"))
			if strict && len(rep.divergences) > 0 {
				return &codeError{code: exitError, err: fmt.Errorf("the replay diverged from the record in %s", plural(len(rep.divergences), "place"))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&cwd, "cwd", "C", "", "copy this directory as the replay's workspace")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when the replay diverges from the record")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only divergences and the summary")
	cmd.Flags().DurationVar(&pace, "pace", 20*time.Millisecond, "pause between streamed words, to watch at reading speed (0: as fast as possible; default 0 when stdout is not a terminal)")
	return cmd
}

// exactArgs is cobra.ExactArgs with a message that says what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s needs %s (got %s)\nRun '%s --help' for usage.", cmd.CommandPath(), what, plural(len(args), "argument"), cmd.CommandPath())
		}
		return nil
	}
}

// recordingSource is a loaded recording: its events, its work directory
// when known, and its subagents' logs when they can be read (from the
// store; a file holds only its own log).
type recordingSource struct {
	events   []session.Event
	workDir  string
	children func(session.ID) ([]session.Event, error)
	close    func() error
}

// loadRecording reads a session from a file, or from the store by id or
// a unique prefix of it, leaving the store open for its children.
func (a *app) loadRecording(ctx context.Context, arg string) (*recordingSource, error) {
	if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
		f, err := os.Open(arg)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		events, err := readNDJSON(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		return &recordingSource{events: events, close: func() error { return nil }}, nil
	}
	st, err := a.openStore()
	if err != nil {
		return nil, err
	}
	info, err := findSession(ctx, st, arg)
	if err != nil {
		st.Close()
		var ue *usageError
		if errors.As(err, &ue) {
			return nil, usageErrorf("%q is neither a file nor a session in the store: %v", arg, err)
		}
		return nil, err
	}
	events, err := collect(st.Events(ctx, info.ID, 0))
	if err != nil {
		st.Close()
		return nil, err
	}
	children := func(id session.ID) ([]session.Event, error) { return collect(st.Events(ctx, id, 0)) }
	return &recordingSource{events: events, workDir: info.WorkDir, children: children, close: st.Close}, nil
}

// readNDJSON decodes an exported session log.
func readNDJSON(r io.Reader) ([]session.Event, error) {
	var events []session.Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		ev, err := session.DecodeEvent(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, errors.New("no events: is this an NDJSON session log?")
	}
	return events, nil
}

func collect(seq iter.Seq2[session.Event, error]) ([]session.Event, error) {
	var out []session.Event
	for ev, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// replayOptions configure replaySession.
type replayOptions struct {
	WorkDir   string    // copied into a temporary workspace; "" starts empty
	Out, Info io.Writer // the answer text; tool activity and divergences
	Quiet     bool
	Pace      time.Duration // pause between streamed words
	TTY       *os.File      // Out's file when it is a terminal: text streams live
	// Children reads a subagent's recorded session, for its spawn to be
	// replayed too; nil when the record holds only the parent's log (a
	// file), and spawns then play back their recorded results.
	Children func(session.ID) ([]session.Event, error)

	root, spill string // the replay's workspace, which children share
}

// replayReport is what a replay found, children included.
type replayReport struct {
	mu                          sync.Mutex
	turns, responses, toolCalls int
	divergences                 []string
}

// count adds to the report's counters.
func (r *replayReport) count(turns, responses, toolCalls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turns, r.responses, r.toolCalls = r.turns+turns, r.responses+responses, r.toolCalls+toolCalls
}

// diverger reports a divergence on info, prefixed with whose it is.
func (r *replayReport) diverger(info io.Writer, prefix string) func(format string, args ...any) {
	return func(format string, args ...any) {
		msg := prefix + fmt.Sprintf(format, args...)
		r.mu.Lock()
		r.divergences = append(r.divergences, msg)
		r.mu.Unlock()
		fmt.Fprintln(info, "divergence:", msg)
	}
}

// recordedTurn is one prompt of the record with what followed it.
type recordedTurn struct {
	prompt []llm.Part
}

// recordedResponse is one assistant message and the history it answered.
type recordedResponse struct {
	msg     *session.AssistantMessage
	history []llm.Message
}

// recording is what a replay needs of a recorded log.
type recording struct {
	turns     []recordedTurn
	responses []recordedResponse
	results   map[llm.CallID]string
	header    *session.RequestHeader
	spawns    map[llm.CallID]*session.SubagentStart
}

func readRecording(events []session.Event) *recording {
	rec := &recording{results: map[llm.CallID]string{}, spawns: map[llm.CallID]*session.SubagentStart{}}
	var (
		openTurn bool
		deriver  session.Deriver
	)
	for _, ev := range events {
		switch d := ev.Data.(type) {
		case *session.TurnStart:
			openTurn = d.Trigger == session.TriggerPrompt || d.Trigger == ""
		case *session.UserMessage:
			if openTurn && (d.Source == "" || d.Source == session.SourceUser) {
				rec.turns = append(rec.turns, recordedTurn{prompt: d.Parts})
				openTurn = false
			}
		case *session.RequestHeader:
			if rec.header == nil {
				rec.header = d
			}
		case *session.AssistantMessage:
			rec.responses = append(rec.responses, recordedResponse{msg: d, history: deriver.Messages()})
		case *session.ToolResult:
			rec.results[d.CallID] = resultText(d.Parts)
		case *session.SubagentStart:
			if d.CallID != "" {
				rec.spawns[d.CallID] = d
			}
		}
		deriver.Add(ev)
	}
	return rec
}

// setup is the provider, model name, system prompt and tool names the
// record's first request header names.
func (rec *recording) setup() (provider, model, system string, names []string) {
	names = defaultTools
	h := rec.header
	if h == nil {
		return "replay", "recorded", "", names
	}
	var sb strings.Builder
	for i, t := range h.System {
		if i > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(t.Text)
	}
	if h.Tools != nil {
		names = nil
		for _, n := range h.Tools {
			if n == "task_output" || n == "task_kill" || n == "task_wait" {
				continue
			}
			names = append(names, n)
		}
	}
	return h.Provider, h.Model, sb.String(), names
}

// replaySession re-runs the prompts of events with the recorded responses
// as the model and the tools live, and the subagents it spawned the same
// way when opts.Children can read their logs.
func replaySession(ctx context.Context, events []session.Event, opts *replayOptions) (*replayReport, error) {
	tmp, err := os.MkdirTemp("", "rein-replay-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	o := *opts
	o.root, o.spill = filepath.Join(tmp, "workspace"), filepath.Join(tmp, "spill")
	if err := os.Mkdir(o.root, 0o700); err != nil {
		return nil, err
	}
	if o.WorkDir != "" {
		if err := copyTree(o.WorkDir, o.root); err != nil {
			return nil, fmt.Errorf("copy the workspace %s: %w", o.WorkDir, err)
		}
	}
	if o.Quiet {
		o.Out, o.Info, o.TTY = io.Discard, io.Discard, nil
	}
	rep := &replayReport{}
	if _, err := replayIn(ctx, events, &o, rep, ""); err != nil {
		return nil, err
	}
	return rep, nil
}

// replayIn replays one recorded log in o.root and returns its last
// answer; prefix names a subagent's divergences.
func replayIn(ctx context.Context, events []session.Event, o *replayOptions, rep *replayReport, prefix string) (string, error) {
	rec := readRecording(events)
	if len(rec.turns) == 0 {
		return "", usageErrorf("the recording has no prompt to replay")
	}
	diverge := rep.diverger(o.Info, prefix)
	model := &replayModel{responses: rec.responses, diverge: diverge, pace: o.Pace}
	provider, modelName, system, names := rec.setup()
	kit, err := buildTools(o.root, o.spill, knownTools(names), nil, nil)
	if err != nil {
		return "", err
	}
	if slices.Contains(names, agent.SpawnToolName) || len(rec.spawns) > 0 {
		kit.tools = append(kit.tools, replaySpawnTool(rec, o, rep, prefix))
	}
	approver, _ := newApprover("auto", nil)
	ag, err := agent.New(&agent.Options{
		Model: model, Provider: provider, ModelName: modelName,
		System:   system,
		Tools:    kit.tools,
		Approver: approver,
		Closers:  kit.closers,
		Retry:    &agent.RetryPolicy{MaxRetries: -1},
	})
	if err != nil {
		return "", fmt.Errorf("start the replay: %w", err)
	}
	defer ag.Close()
	var answer string
	for i, t := range rec.turns {
		fmt.Fprintf(o.Info, "» %s\n", shorten(partsText(t.prompt), 200))
		answer = replayTurn(ctx, ag, t, rec, o, rep, diverge, i)
	}
	played := model.played()
	rep.count(len(rec.turns), played, 0)
	if n := len(rec.responses) - played; n > 0 {
		diverge("%d recorded model responses were never requested", n)
	}
	return answer, nil
}

// replayTurn replays one turn, checking each tool result against the
// record, and returns the turn's answer.
func replayTurn(ctx context.Context, ag *agent.Agent, t recordedTurn, rec *recording, o *replayOptions, rep *replayReport, diverge func(string, ...any), i int) string {
	r := newTextRenderer(o.Out, o.Info, o.TTY)
	defer r.flush()
	answer := ""
	for ev, err := range ag.Stream(ctx, &agent.RunRequest{Parts: t.prompt}) {
		if err != nil {
			diverge("turn %d ended in error: %v", i+1, err)
			break
		}
		r.event(ev)
		switch d := ev.Data.(type) {
		case *session.AssistantMessage:
			if txt := resultText(d.Parts); txt != "" {
				answer = txt
			}
		case *session.ToolResult:
			rep.count(0, 0, 1)
			want, ok := rec.results[d.CallID]
			got := resultText(d.Parts)
			switch {
			case !ok:
				diverge("tool call %s (%s) has no recorded result", d.CallID, d.Name)
			case normalizeResult(want) != normalizeResult(got):
				diverge("tool call %s (%s): result differs\n  recorded: %s\n  replayed: %s", d.CallID, d.Name, shorten(want, 200), shorten(got, 200))
			}
		}
	}
	return answer
}

// volatile matches the parts of a tool result that differ from run to run
// without meaning anything: durations.
var volatile = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m|h)\b`)

// normalizeResult blanks the volatile parts of a tool result's text.
func normalizeResult(s string) string { return volatile.ReplaceAllString(s, "<duration>") }

// knownTools keeps the names rein can build.
func knownTools(names []string) []string {
	var out []string
	for _, n := range names {
		for _, d := range defaultTools {
			if n == d {
				out = append(out, n)
			}
		}
	}
	return out
}

func partsText(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// copyTree copies the regular files and directories of src into dst,
// leaving out .git and anything that is not a plain file.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if d.Name() == ".git" && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			defer in.Close()
			info, err := in.Stat()
			if err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil
	})
}
