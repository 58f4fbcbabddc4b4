package command

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// Transcripts keeps, for each session, a transcript file in the format
// hook programs parse (as Claude Code writes it): JSON lines of
// {"type": "user"|"assistant", "message": {"role", "content": [...]}},
// with text, tool_use and tool_result blocks, tools named as in
// Vocabulary. It is written from the session's log in any store and
// brought up to date each time a hook is told its path, reading only the
// events appended since. A Transcripts is safe for concurrent use.
type Transcripts struct {
	store session.Store
	dir   string

	mu   sync.Mutex
	seen map[session.ID]int64 // the last event written, per session
}

// NewTranscripts writes the transcripts of store's sessions under dir,
// one SESSION.jsonl each.
func NewTranscripts(store session.Store, dir string) *Transcripts {
	return &Transcripts{store: store, dir: dir, seen: map[session.ID]int64{}}
}

// Sync appends the session's events recorded since the last Sync to its
// transcript and returns the file's path.
func (t *Transcripts) Sync(ctx context.Context, id session.ID) (string, error) {
	path := filepath.Join(t.dir, string(id)+".jsonl")
	t.mu.Lock()
	defer t.mu.Unlock()
	after, known := t.seen[id]
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return "", fmt.Errorf("command: transcript directory: %w; check that %s is writable", err, t.dir)
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !known {
		flag |= os.O_TRUNC // written anew from the log's first event
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return "", fmt.Errorf("command: transcript: %w; check that %s is writable", err, t.dir)
	}
	defer f.Close()
	var buf []byte
	for ev, err := range t.store.Events(ctx, id, after) {
		if err != nil {
			return "", fmt.Errorf("command: transcript of session %s: %w", id, err)
		}
		after = ev.Seq
		if line := transcriptLine(&ev); line != nil {
			buf = append(append(buf, line...), '\n')
		}
	}
	if _, err := f.Write(buf); err != nil {
		return "", fmt.Errorf("command: transcript: %w", err)
	}
	t.seen[id] = after
	return path, nil
}

// block is one content block of a transcript message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type transcriptMessage struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

type transcriptEntry struct {
	Type      string            `json:"type"`
	SessionID string            `json:"sessionId"`
	UUID      string            `json:"uuid"`
	Timestamp string            `json:"timestamp"`
	Message   transcriptMessage `json:"message"`
}

// transcriptLine is ev as a transcript line, or nil for events a
// transcript does not show.
func transcriptLine(ev *session.Event) []byte {
	e := transcriptEntry{SessionID: string(ev.Session), UUID: fmt.Sprintf("%s-%d", ev.Session, ev.Seq),
		Timestamp: ev.Time.UTC().Format(time.RFC3339Nano)}
	switch d := ev.Data.(type) {
	case *session.UserMessage:
		e.Type, e.Message = "user", transcriptMessage{Role: "user", Content: blocks(d.Parts)}
	case *session.AssistantMessage:
		e.Type, e.Message = "assistant", transcriptMessage{Role: "assistant", Content: blocks(d.Parts)}
	case *session.ToolResult:
		text := textOf(d.Parts)
		e.Type = "user"
		e.Message = transcriptMessage{Role: "user", Content: []block{{Type: "tool_result", ToolUseID: string(d.CallID), Content: &text, IsError: d.IsError}}}
	default:
		return nil
	}
	b, err := json.Marshal(&e)
	if err != nil {
		return nil
	}
	return b
}

func blocks(parts []llm.Part) []block {
	out := []block{}
	for _, p := range parts {
		switch p := p.(type) {
		case *llm.Text:
			out = append(out, block{Type: "text", Text: p.Text})
		case *llm.ToolCall:
			out = append(out, block{Type: "tool_use", ID: string(p.ID), Name: theirName(p.Name, nil), Input: outInput(p.Name, p.Args)})
		}
	}
	return out
}
