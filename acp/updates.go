package acp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/todo"
)

// maxDiffBytes bounds the files read to show a diff of an edit.
const maxDiffBytes = 1 << 20

// translator turns one session's events into session/update
// notifications. Live, text streams from the transient chunk events; in a
// replay (session/load) it comes from the recorded messages, and the
// user's prompts are sent too. The approver announces calls from another
// goroutine, hence the lock.
type translator struct {
	id     sdk.SessionId
	cwd    string
	replay bool
	send   func(sdk.SessionId, sdk.SessionUpdate)
	fs     *sandbox.Policy

	mu       sync.Mutex
	streamed bool // text or reasoning streamed since the last message
	calls    map[llm.CallID]*callView
	plan     []sdk.PlanEntry // the last plan sent
}

// callView is what the editor was told about one tool call.
type callView struct {
	name string
	path string  // absolute, for file tools
	old  *string // the file before an edit; nil when it did not exist
	edit bool
	plan []session.TodoItem // what a todo call writes
}

func newTranslator(id sdk.SessionId, cwd string, replay bool, send func(sdk.SessionId, sdk.SessionUpdate)) *translator {
	return &translator{id: id, cwd: cwd, replay: replay, send: send,
		fs: &sandbox.Policy{Root: cwd}, calls: map[llm.CallID]*callView{}}
}

// event sends the updates one event stands for.
func (t *translator) event(ev session.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch d := ev.Data.(type) {
	case *session.AssistantChunk:
		// Recorded chunks (Seq > 0) repeat what the message holds.
		if ev.Seq != 0 || t.replay {
			return
		}
		for _, dl := range d.Deltas {
			switch dl.Kind {
			case "text":
				t.streamed = true
				t.send(t.id, sdk.UpdateAgentMessageText(dl.Text))
			case "reasoning":
				t.streamed = true
				t.send(t.id, sdk.UpdateAgentThoughtText(dl.Text))
			}
		}
	case *session.AssistantMessage:
		t.message(d)
	case *session.UserMessage:
		if t.replay && (d.Source == "" || d.Source == session.SourceUser) {
			for _, p := range d.Parts {
				if tx, ok := p.(*llm.Text); ok {
					t.send(t.id, sdk.UpdateUserMessageText(tx.Text))
				}
			}
		}
	case *session.ToolCall:
		t.announce(d.CallID, d.Name, d.Args)
		t.send(t.id, sdk.UpdateToolCall(sdk.ToolCallId(d.CallID), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress)))
	case *session.ToolResult:
		t.result(d)
	case *session.TodoWrite:
		t.sendPlan(d.Items)
	}
}

// sendPlan sends the todo list as the plan, unless it is the plan sent
// last: a todo call's result and a todo.write event say the same.
func (t *translator) sendPlan(items []session.TodoItem) {
	entries := make([]sdk.PlanEntry, 0, len(items))
	for _, it := range items {
		entries = append(entries, sdk.PlanEntry{Content: it.Content, Priority: sdk.PlanEntryPriorityMedium, Status: planStatus(it.Status)})
	}
	if slices.EqualFunc(entries, t.plan, func(a, b sdk.PlanEntry) bool {
		return a.Content == b.Content && a.Status == b.Status
	}) && t.plan != nil {
		return
	}
	t.plan = entries
	t.send(t.id, sdk.UpdatePlan(entries...))
}

func (t *translator) message(m *session.AssistantMessage) {
	if !t.streamed {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				if p.Text != "" {
					t.send(t.id, sdk.UpdateAgentMessageText(p.Text))
				}
			case *llm.Reasoning:
				if p.Text != "" {
					t.send(t.id, sdk.UpdateAgentThoughtText(p.Text))
				}
			}
		}
	}
	t.streamed = false
	for _, p := range m.Parts {
		if c, ok := p.(*llm.ToolCall); ok {
			t.announce(c.ID, c.Name, c.Args)
		}
	}
}

// announceCall tells the editor about a call once, before it asks for
// permission or runs: the approver's way in.
func (t *translator) announceCall(id llm.CallID, name string, args json.RawMessage) *callView {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.announce(id, name, args)
}

// announce is announceCall with t.mu held.
func (t *translator) announce(id llm.CallID, name string, args json.RawMessage) *callView {
	if v := t.calls[id]; v != nil {
		return v
	}
	d := describe(name, args, t.cwd)
	v := &callView{name: name, path: d.path, edit: d.kind == sdk.ToolKindEdit && d.path != ""}
	if v.edit && !t.replay {
		// The file before the call runs, for the diff after it.
		if b, err := t.fs.ReadFile(d.path, nil, maxDiffBytes); err == nil {
			s := string(b)
			v.old = &s
		}
	}
	if name == todo.Name {
		var w struct {
			Items []session.TodoItem `json:"items"`
		}
		if json.Unmarshal(args, &w) == nil {
			v.plan = w.Items
		}
	}
	t.calls[id] = v
	opts := []sdk.ToolCallStartOpt{sdk.WithStartKind(d.kind), sdk.WithStartStatus(sdk.ToolCallStatusPending)}
	if len(args) > 0 && json.Valid(args) {
		opts = append(opts, sdk.WithStartRawInput(json.RawMessage(args)))
	}
	if loc := d.locations(); loc != nil {
		opts = append(opts, sdk.WithStartLocations(loc))
	}
	t.send(t.id, sdk.StartToolCall(sdk.ToolCallId(id), d.title, opts...))
	return v
}

func (t *translator) result(r *session.ToolResult) {
	v := t.calls[r.CallID]
	if v == nil {
		v = t.announce(r.CallID, r.Name, nil)
	}
	status := sdk.ToolCallStatusCompleted
	if r.IsError {
		status = sdk.ToolCallStatusFailed
	}
	var content []sdk.ToolCallContent
	if v.edit && !r.IsError && !t.replay {
		if b, err := t.fs.ReadFile(v.path, nil, maxDiffBytes); err == nil {
			if v.old != nil {
				content = append(content, sdk.ToolDiffContent(v.path, string(b), *v.old))
			} else {
				content = append(content, sdk.ToolDiffContent(v.path, string(b)))
			}
		}
	}
	for _, p := range r.Parts {
		if tx, ok := p.(*llm.Text); ok && tx.Text != "" {
			content = append(content, sdk.ToolContent(sdk.TextBlock(tx.Text)))
		}
	}
	opts := []sdk.ToolCallUpdateOpt{sdk.WithUpdateStatus(status)}
	if content != nil {
		opts = append(opts, sdk.WithUpdateContent(content))
	}
	t.send(t.id, sdk.UpdateToolCall(sdk.ToolCallId(r.CallID), opts...))
	if v.plan != nil && !r.IsError {
		t.sendPlan(v.plan)
	}
	delete(t.calls, r.CallID)
}

func planStatus(s string) sdk.PlanEntryStatus {
	switch s {
	case "in_progress":
		return sdk.PlanEntryStatusInProgress
	case "completed":
		return sdk.PlanEntryStatusCompleted
	}
	return sdk.PlanEntryStatusPending
}

// description is how the editor shows a call of one of rein's tools.
type description struct {
	kind  sdk.ToolKind
	title string
	path  string // absolute; empty when the call names no file
	line  int    // 1-based; 0 when none
}

func (d description) locations() []sdk.ToolCallLocation {
	if d.path == "" {
		return nil
	}
	loc := sdk.ToolCallLocation{Path: d.path}
	if d.line > 0 {
		loc.Line = sdk.Ptr(d.line)
	}
	return []sdk.ToolCallLocation{loc}
}

// describe gives a call of rein's built-in tools a kind, a title and the
// file it acts on; other tools (MCP servers') are shown by name.
func describe(name string, args json.RawMessage, cwd string) description {
	var a struct {
		Path    string `json:"path"`
		Pattern string `json:"pattern"`
		Command string `json:"command"`
		Offset  int    `json:"offset"`
	}
	_ = json.Unmarshal(args, &a) // a call that does not parse is shown by name
	abs := callPath(args, cwd)
	switch name {
	case "read":
		return description{kind: sdk.ToolKindRead, title: "Read " + orName(a.Path, name), path: abs, line: a.Offset}
	case "write":
		return description{kind: sdk.ToolKindEdit, title: "Write " + orName(a.Path, name), path: abs}
	case "edit", "multi_edit":
		return description{kind: sdk.ToolKindEdit, title: "Edit " + orName(a.Path, name), path: abs}
	case "ls":
		return description{kind: sdk.ToolKindRead, title: "List " + orName(a.Path, "."), path: abs}
	case "glob":
		return description{kind: sdk.ToolKindSearch, title: "Find " + quote(a.Pattern), path: abs}
	case "grep":
		return description{kind: sdk.ToolKindSearch, title: "Search for " + quote(a.Pattern), path: abs}
	case "shell":
		title := "Run " + quote(a.Command)
		if a.Command == "" {
			title = "Run a command"
		}
		return description{kind: sdk.ToolKindExecute, title: title}
	case "task_output", "task_wait":
		return description{kind: sdk.ToolKindExecute, title: "Check a background task"}
	case "task_kill":
		return description{kind: sdk.ToolKindExecute, title: "Stop a background task"}
	case todo.Name:
		return description{kind: sdk.ToolKindThink, title: "Update the plan"}
	}
	return description{kind: sdk.ToolKindOther, title: name}
}

func orName(s, name string) string {
	if s == "" {
		return name
	}
	return s
}

func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return fmt.Sprintf("`%s`", s)
}
