package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/spf13/cobra"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func init() { extraCommands = append(extraCommands, (*app).chatCommand) }

func (a *app) chatCommand() *cobra.Command {
	f := &agentFlags{}
	var cont bool
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with the agent in an interactive terminal UI",
		Long: `Chat opens an interactive session: answers stream as they are written,
tool calls appear as cards with their outcome, and calls that need approval
ask inline (y yes, n no, a always for this tool or command).

Keys: Enter sends (while the agent works it steers the running turn), Esc
cancels the turn, Ctrl+R shows or hides reasoning, Ctrl+C cancels or quits.
Commands: /help, /model [PROVIDER/NAME], /session, /compact [FOCUS], /clear, /quit.`,
		Args: exactArgs(0, "no arguments (type prompts in the UI)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cont {
				if err := a.continueLatest(cmd.Context(), f); err != nil {
					return err
				}
			}
			return a.chat(cmd.Context(), f)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&cont, "continue", "c", false, "resume the workspace's latest session")
	return cmd
}

// chatApprover forwards approval requests to the UI and waits for the answer.
type chatApprover struct {
	mu   sync.Mutex
	send func(tea.Msg)
}

type approvalMsg struct {
	req   *tool.ApprovalRequest
	reply chan tool.Approval
}

func (c *chatApprover) Approve(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
	c.mu.Lock()
	send := c.send
	c.mu.Unlock()
	if send == nil {
		return tool.Approval{Verdict: tool.Deny, Reason: "no one to ask"}, nil
	}
	reply := make(chan tool.Approval, 1)
	send(approvalMsg{req: req, reply: reply})
	select {
	case ap := <-reply:
		return ap, nil
	case <-ctx.Done():
		return tool.Approval{Verdict: tool.Deny, Reason: "the turn ended before an answer"}, ctx.Err()
	}
}

func (a *app) chat(ctx context.Context, f *agentFlags) error {
	if !isTerminal(os.Stdin) {
		return usageErrorf("rein chat needs a terminal; use 'rein run' in scripts and pipes")
	}
	ap := &chatApprover{}
	s, err := a.build(ctx, f, ap, true)
	if err != nil {
		return err
	}
	m := newChatModel(a, f, s, ap)
	defer func() { m.setup.closeWith("prompt_input_exit") }()
	if err := m.loadHistory(ctx); err != nil {
		return err
	}
	p := tea.NewProgram(m, tea.WithContext(context.WithoutCancel(ctx)), tea.WithoutSignalHandler())
	ap.mu.Lock()
	ap.send = p.Send
	ap.mu.Unlock()
	m.send = p.Send
	// A signal (the terminal closed, SIGTERM) ends the chat: the program
	// stops, and closing the agent ends a running turn, recorded.
	ran := make(chan struct{})
	defer close(ran)
	go func() {
		select {
		case <-ctx.Done():
			p.Kill()
		case <-ran:
		}
	}()
	_, err = p.Run()
	if errors.Is(err, tea.ErrProgramKilled) {
		err = nil
	}
	return err
}

// Block kinds of the transcript.
const (
	blockUser = iota
	blockAssistant
	blockReasoning
	blockTool
	blockNotice
	blockError
)

type block struct {
	kind int
	text string
	// tool cards
	callID   llm.CallID
	name     string
	args     string
	status   string // running, ok, error, blocked, cancelled
	started  time.Time
	duration time.Duration

	// lines caches the rendering at width w with reasoning shown or not;
	// nil after any change.
	lines  []string
	linesW int
	linesR bool
}

type eventMsg struct{ ev session.Event }
type runDoneMsg struct{ err error }
type tickMsg struct{}
type compactDoneMsg struct {
	res *agent.CompactResult
	err error
}

type chatModel struct {
	app   *app
	flags *agentFlags
	setup *setup
	ap    *chatApprover
	send  func(tea.Msg)

	blocks        []block
	input         []rune
	running       bool
	queued        []string // prompts typed while a turn was ending
	approval      *approvalMsg
	showReasoning bool
	width, height int

	usage    llm.Usage // the session's totals
	cost     float64
	lastIn   int64 // the last request's prompt tokens
	stepText bool  // text streamed in the current step
}

func newChatModel(a *app, f *agentFlags, s *setup, ap *chatApprover) *chatModel {
	return &chatModel{app: a, flags: f, setup: s, ap: ap, width: 80, height: 24}
}

// loadHistory shows a resumed session's transcript.
func (m *chatModel) loadHistory(ctx context.Context) error {
	events, err := collect(m.setup.store.Events(ctx, m.setup.agent.Session(), 0))
	if err != nil {
		return err
	}
	for _, ev := range events {
		m.apply(ev)
	}
	if len(events) > 0 {
		m.notice(fmt.Sprintf("resumed session %s (%d events)", m.setup.agent.Session(), len(events)))
	}
	return nil
}

func (m *chatModel) Init() tea.Cmd { return nil }

func tick() tea.Cmd {
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *chatModel) notice(s string) { m.blocks = append(m.blocks, block{kind: blockNotice, text: s}) }

// startRun runs prompt on a goroutine that feeds events to the UI.
func (m *chatModel) startRun(prompt string) tea.Cmd {
	m.running = true
	m.blocks = append(m.blocks, block{kind: blockUser, text: prompt})
	ag, send, req := m.setup.agent, m.send, m.setup.request(prompt)
	go func() {
		var runErr error
		for ev, err := range ag.Stream(context.Background(), req) {
			if err != nil {
				runErr = err
				break
			}
			send(eventMsg{ev})
		}
		send(runDoneMsg{runErr})
	}()
	return tick()
}

// apply folds one event into the transcript and the status totals.
func (m *chatModel) apply(ev session.Event) {
	switch d := ev.Data.(type) {
	case *session.UserMessage:
		if ev.Seq != 0 && !m.running {
			m.blocks = append(m.blocks, block{kind: blockUser, text: partsText(d.Parts)})
		}
	case *session.SteeringMessage:
		m.notice("steer delivered: " + shorten(partsText(d.Parts), 60))
	case *session.AssistantChunk:
		if ev.Seq != 0 {
			return
		}
		for _, dl := range d.Deltas {
			switch dl.Kind {
			case "text":
				m.appendText(blockAssistant, dl.Text)
				m.stepText = true
			case "reasoning":
				m.appendText(blockReasoning, dl.Text)
			}
		}
	case *session.AssistantMessage:
		if !m.stepText {
			for _, p := range d.Parts {
				switch p := p.(type) {
				case *llm.Text:
					m.appendText(blockAssistant, p.Text)
				case *llm.Reasoning:
					m.appendText(blockReasoning, p.Text)
				}
			}
		}
		m.stepText = false
		m.usage.Add(d.Usage)
		if d.Provenance != nil {
			m.cost += catalogCost(d.Provenance.Model, d.Usage)
		}
		if in := d.Usage.PromptTokens(); in > 0 {
			m.lastIn = in
		}
		// The next text starts a new block.
		m.blocks = append(m.blocks, block{kind: -1})
	case *session.ToolCall:
		m.blocks = append(m.blocks, block{kind: blockTool, callID: d.CallID, name: d.Name, args: shortArgs(d.Args), status: "running", started: time.Now()})
	case *session.ToolResult:
		for i := len(m.blocks) - 1; i >= 0; i-- {
			b := &m.blocks[i]
			if b.kind == blockTool && b.callID == d.CallID {
				b.duration = d.Duration
				b.status = "ok"
				switch {
				case d.Outcome == session.OutcomeGateBlock || strings.HasPrefix(resultText(d.Parts), "Blocked"):
					b.status = "blocked"
				case d.Outcome == session.OutcomeCancelled || d.Outcome == session.OutcomeInterrupted:
					b.status = "cancelled"
				case d.IsError:
					b.status = "error"
				}
				b.text = firstLine(resultText(d.Parts))
				b.lines = nil
				break
			}
		}
	case *session.Retry:
		m.notice(fmt.Sprintf("retrying in %s: %s", d.Delay.Round(time.Millisecond), d.Kind))
	case *session.TurnEnd:
		switch d.Reason {
		case session.EndCompleted:
		case session.EndAborted:
			m.notice("turn cancelled")
		case session.EndError:
			m.blocks = append(m.blocks, block{kind: blockError, text: "error: " + d.Message})
		default:
			msg := "turn ended: " + string(d.Reason)
			if d.Message != "" {
				msg += ": " + d.Message
			}
			m.notice(msg)
		}
	}
}

// appendText extends the last block of kind, or starts one.
func (m *chatModel) appendText(kind int, s string) {
	if n := len(m.blocks); n > 0 && m.blocks[n-1].kind == kind {
		m.blocks[n-1].text += s
		m.blocks[n-1].lines = nil
		return
	}
	m.blocks = append(m.blocks, block{kind: kind, text: s})
}

func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case eventMsg:
		m.apply(msg.ev)
	case runDoneMsg:
		m.running = false
		if msg.err != nil {
			m.blocks = append(m.blocks, block{kind: blockError, text: "error: " + msg.err.Error()})
		}
		if len(m.queued) > 0 {
			next := strings.Join(m.queued, "\n")
			m.queued = nil
			return m, m.startRun(next)
		}
	case compactDoneMsg:
		m.running = false
		switch {
		case errors.Is(msg.err, agent.ErrNothingToCompact):
			m.notice("nothing to compact yet")
		case msg.err != nil:
			m.blocks = append(m.blocks, block{kind: blockError, text: "compact: " + msg.err.Error()})
		default:
			m.notice(fmt.Sprintf("compacted events %d–%d: about %s → %s tokens", msg.res.FromSeq, msg.res.ToSeq, compact(msg.res.TokensBefore), compact(msg.res.TokensAfter)))
		}
	case tickMsg:
		if m.running {
			return m, tick()
		}
	case approvalMsg:
		m.approval = &msg
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.PasteMsg:
		m.input = append(m.input, []rune(strings.ReplaceAll(msg.Content, "\r", ""))...)
	}
	return m, nil
}

func (m *chatModel) answer(ap tool.Approval) {
	m.approval.reply <- ap
	verdict := "denied"
	if ap.Verdict == tool.Allow {
		verdict = "allowed"
		if ap.Always {
			verdict = "allowed for the session"
		}
	}
	m.notice(fmt.Sprintf("%s %s", approvalSubject(m.approval.req), verdict))
	m.approval = nil
}

func (m *chatModel) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.approval != nil {
		switch k.String() {
		case "y", "Y", "enter":
			m.answer(tool.Approval{Verdict: tool.Allow, Reason: "approved in chat"})
		case "n", "N":
			m.answer(tool.Approval{Verdict: tool.Deny, Reason: "denied in chat"})
		case "a", "A":
			scope := m.approval.req.Tool
			if cmd := m.approval.req.Command; cmd != "" {
				scope = strings.Fields(cmd)[0]
			}
			m.answer(tool.Approval{Verdict: tool.Allow, Always: true, Scope: scope, Reason: "approved for the session in chat"})
		case "esc", "ctrl+c":
			m.answer(tool.Approval{Verdict: tool.Deny, Reason: "denied in chat"})
			m.setup.agent.Cancel("user")
		}
		return m, nil
	}
	switch k.String() {
	case "ctrl+c":
		if m.running {
			m.setup.agent.Cancel("user")
			return m, nil
		}
		return m, tea.Quit
	case "ctrl+d":
		if len(m.input) == 0 {
			return m, tea.Quit
		}
	case "esc":
		if m.running {
			m.setup.agent.Cancel("user")
		}
	case "ctrl+r":
		m.showReasoning = !m.showReasoning
	case "ctrl+u":
		m.input = m.input[:0]
	case "backspace":
		if n := len(m.input); n > 0 {
			m.input = m.input[:n-1]
		}
	case "enter":
		text := strings.TrimSpace(string(m.input))
		m.input = m.input[:0]
		if text == "" {
			return m, nil
		}
		if strings.HasPrefix(text, "/") {
			return m.command(text)
		}
		if m.running {
			if m.setup.agent.Steer(&llm.Text{Text: text}) {
				m.notice("steer queued: " + shorten(text, 60))
			} else {
				m.queued = append(m.queued, text)
				m.notice("queued for the next turn: " + shorten(text, 60))
			}
			return m, nil
		}
		return m, m.startRun(text)
	case "space":
		m.input = append(m.input, ' ')
	default:
		if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt) == 0 {
			m.input = append(m.input, []rune(k.Text)...)
		}
	}
	return m, nil
}

// command runs a slash command.
func (m *chatModel) command(text string) (tea.Model, tea.Cmd) {
	name, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/help":
		m.notice("Enter send (steers a running turn) · Esc cancel · Ctrl+R reasoning · Ctrl+C cancel/quit\n" +
			"/model [PROVIDER/NAME] show or switch the model · /session the session id · /compact [focus] summarise older turns · /clear new session · /quit")
	case "/quit", "/exit":
		return m, tea.Quit
	case "/session":
		m.notice(fmt.Sprintf("session %s in %s (workspace %s)", m.setup.agent.Session(), m.app.storeShown(), m.setup.root))
	case "/compact":
		if m.running {
			m.notice("wait for the turn to end (or Esc) before /compact")
			break
		}
		m.setup.fire(context.Background(), &command.FireRequest{Event: "PreCompact", Trigger: "manual", Instructions: arg})
		m.running = true
		m.notice("compacting…")
		ag, send := m.setup.agent, m.send
		go func() {
			res, err := ag.Compact(context.Background(), &agent.CompactRequest{KeepSteps: 2, Instructions: arg})
			send(compactDoneMsg{res, err})
		}()
		return m, tick()
	case "/clear":
		if m.running {
			m.notice("wait for the turn to end (or Esc) before /clear")
			break
		}
		m.setup.fire(context.Background(), &command.FireRequest{Event: "SessionEnd", Reason: "clear"})
		if err := m.setup.agent.Reset(context.Background()); err != nil {
			m.blocks = append(m.blocks, block{kind: blockError, text: "clear: " + err.Error()})
			break
		}
		m.setup.fire(context.Background(), &command.FireRequest{Event: "SessionStart", Source: "clear"})
		m.blocks, m.usage, m.cost, m.lastIn = nil, llm.Usage{}, 0, 0
		m.notice("new session " + string(m.setup.agent.Session()))
	case "/model":
		if arg == "" {
			m.notice("model " + m.setup.target.String() + " (switch with /model PROVIDER/NAME; see 'rein models')")
			break
		}
		if m.running {
			m.notice("wait for the turn to end (or Esc) before switching models")
			break
		}
		if err := m.switchModel(arg); err != nil {
			m.blocks = append(m.blocks, block{kind: blockError, text: "model: " + err.Error()})
			break
		}
		m.notice("model " + m.setup.target.String())
	default:
		m.notice("unknown command " + name + "; /help lists them")
	}
	return m, nil
}

// switchModel rebuilds the agent on the same session with another model.
func (m *chatModel) switchModel(spec string) error {
	if _, err := resolveTarget(spec, "", m.app.cfg, m.app.getenv); err != nil {
		return err
	}
	f := *m.flags
	f.model, f.baseURL, f.fork = spec, "", ""
	f.session = string(m.setup.agent.Session())
	if err := m.setup.Close(); err != nil {
		return err
	}
	s, err := m.app.build(context.Background(), &f, m.ap, true)
	if err != nil {
		// Reopen the old model so the chat can go on.
		old := *m.flags
		old.session, old.fork = f.session, ""
		if s2, err2 := m.app.build(context.Background(), &old, m.ap, true); err2 == nil {
			m.setup = s2
		}
		return err
	}
	m.setup = s
	m.flags.model = spec
	return nil
}

var (
	styleUser     = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleDim      = lipgloss.NewStyle().Faint(true)
	styleNotice   = lipgloss.NewStyle().Foreground(lipgloss.Color("8"))
	styleError    = lipgloss.NewStyle().Foreground(lipgloss.Color("9"))
	styleOK       = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	styleWarn     = lipgloss.NewStyle().Foreground(lipgloss.Color("11"))
	styleHeading  = lipgloss.NewStyle().Bold(true)
	styleCode     = lipgloss.NewStyle().Foreground(lipgloss.Color("14"))
	styleStatus   = lipgloss.NewStyle().Reverse(true)
	styleApproval = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
)

// View renders the transcript's tail, the input line and the status line.
func (m *chatModel) View() tea.View {
	w := max(m.width, 20)
	var bottom []string
	if m.approval != nil {
		bottom = append(bottom, styleApproval.Render("Allow "+approvalSubject(m.approval.req)+"?  [y]es  [n]o  [a]lways"))
	}
	prompt := "> "
	if m.running {
		prompt = "… "
	}
	bottom = append(bottom, prompt+string(m.input)+"█")
	bottom = append(bottom, styleStatus.Render(padRight(m.status(), w)))

	room := max(m.height-len(bottom), 1)
	// Render from the newest block back until the screen is full, so a
	// frame costs what is visible, not the whole session.
	var chunks [][]string
	n := 0
	for i := len(m.blocks) - 1; i >= 0 && n < room; i-- {
		b := &m.blocks[i]
		if b.lines == nil || b.linesW != w || b.linesR != m.showReasoning || b.status == "running" {
			b.lines, b.linesW, b.linesR = m.renderBlock(*b, w), w, m.showReasoning
		}
		chunks = append(chunks, b.lines)
		n += len(b.lines)
	}
	lines := make([]string, 0, n)
	for i := len(chunks) - 1; i >= 0; i-- {
		lines = append(lines, chunks[i]...)
	}
	if len(lines) > room {
		lines = lines[len(lines)-room:]
	}
	for len(lines) < room {
		lines = append(lines, "")
	}
	v := tea.NewView(strings.Join(append(lines, bottom...), "\n"))
	v.AltScreen = true
	return v
}

func padRight(s string, w int) string {
	if n := lipgloss.Width(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// status is the status line: model, tokens, cost, cache reads, context fill.
func (m *chatModel) status() string {
	u := m.usage
	parts := []string{m.setup.target.String()}
	parts = append(parts, fmt.Sprintf("%s in / %s out", compact(u.PromptTokens()), compact(u.Output)))
	parts = append(parts, fmt.Sprintf("$%.4f", m.cost))
	if p := u.PromptTokens(); p > 0 {
		parts = append(parts, fmt.Sprintf("cache %d%%", u.CacheRead*100/p))
	}
	if info, ok := llm.DefaultCatalog().Lookup(m.setup.target.model); ok && info.ContextWindow > 0 {
		parts = append(parts, fmt.Sprintf("ctx %d%%", m.lastIn*100/int64(info.ContextWindow)))
	}
	if m.running {
		parts = append(parts, "working (Esc cancels)")
	}
	return " " + strings.Join(parts, " · ")
}

func compact(n int64) string {
	if n >= 10_000 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func (m *chatModel) renderBlock(b block, w int) []string {
	wrap := func(s string) []string {
		return strings.Split(lipgloss.NewStyle().Width(w).Render(s), "\n")
	}
	switch b.kind {
	case blockUser:
		return append([]string{""}, wrap(styleUser.Render("you: ")+b.text)...)
	case blockAssistant:
		return renderMarkdown(strings.TrimRight(b.text, "\n"), w)
	case blockReasoning:
		if !m.showReasoning {
			return []string{styleDim.Render(fmt.Sprintf("▸ reasoning (%d chars, Ctrl+R to show)", len(b.text)))}
		}
		out := []string{styleDim.Render("▾ reasoning")}
		for _, l := range wrap(strings.TrimSpace(b.text)) {
			out = append(out, styleDim.Render(l))
		}
		return out
	case blockTool:
		var mark, tail string
		switch b.status {
		case "running":
			mark = styleWarn.Render("⋯")
			tail = fmt.Sprintf("running %s", time.Since(b.started).Round(time.Second))
		case "ok":
			mark = styleOK.Render("✓")
			tail = b.duration.Round(time.Millisecond).String()
		case "blocked", "cancelled":
			mark = styleWarn.Render("⊘")
			tail = b.status + " · " + shorten(b.text, 60)
		default:
			mark = styleError.Render("✗")
			tail = "error · " + shorten(b.text, 60)
		}
		head := fmt.Sprintf("%s %s %s", mark, styleHeading.Render(b.name), shorten(b.args, max(w-len(b.name)-30, 10)))
		return []string{"┌ " + head, "└ " + styleNotice.Render(tail)}
	case blockNotice:
		return wrap(styleNotice.Render("· " + b.text))
	case blockError:
		return wrap(styleError.Render(b.text))
	}
	return nil
}

// renderMarkdown renders the common parts of Markdown: headings, bullets,
// code fences and inline code.
func renderMarkdown(s string, w int) []string {
	var out []string
	inFence := false
	for _, line := range strings.Split(s, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			out = append(out, styleCode.Render("  "+line))
			continue
		}
		switch {
		case strings.HasPrefix(trimmed, "#"):
			out = append(out, styleHeading.Render(strings.TrimSpace(strings.TrimLeft(trimmed, "#"))))
			continue
		case strings.HasPrefix(trimmed, "- ") || strings.HasPrefix(trimmed, "* "):
			line = strings.Replace(line, trimmed[:2], "• ", 1)
		}
		line = inlineCode(line)
		out = append(out, strings.Split(lipgloss.NewStyle().Width(w).Render(line), "\n")...)
	}
	return out
}

// inlineCode styles `code` spans.
func inlineCode(s string) string {
	parts := strings.Split(s, "`")
	if len(parts) < 3 {
		return s
	}
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString(styleCode.Render(p))
		} else {
			if i%2 == 1 {
				b.WriteString("`")
			}
			b.WriteString(p)
		}
	}
	return b.String()
}
