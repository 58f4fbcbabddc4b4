package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// historyKeep is how many earlier prompts the editor recalls.
const historyKeep = 1000

// historyPath is the file of prompts sent in chats, one JSON string a
// line, shared by every chat of the user.
func historyPath() string { return filepath.Join(stateDir(), "chat_history.jsonl") }

// editor is the chat's input: several lines, a cursor that moves, pastes
// that keep their newlines, and the prompts of earlier chats on Up and
// Down. Enter sends (the chat handles it); Alt+Enter, Ctrl+J and
// Shift+Enter start a new line.
type editor struct {
	ta      textarea.Model
	history []string
	pos     int    // the entry shown while browsing; len(history) is the draft
	draft   string // what was typed before browsing began
	path    string // where sent prompts are appended; "" keeps none
}

func newEditor() editor {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Placeholder = ""
	ta.CharLimit = 0
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = 8
	ta.MaxContentHeight = 5000
	ta.SetPromptFunc(2, func(pi textarea.PromptInfo) string {
		if pi.LineNumber == 0 {
			return "> "
		}
		return "  "
	})
	km := textarea.DefaultKeyMap()
	km.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j", "shift+enter"))
	// PgUp and PgDn scroll the transcript; Ctrl+D quits on an empty line.
	km.PageUp.SetEnabled(false)
	km.PageDown.SetEnabled(false)
	km.DeleteCharacterForward = key.NewBinding(key.WithKeys("delete"))
	ta.KeyMap = km
	st := textarea.DefaultDarkStyles()
	st.Focused.CursorLine = lipgloss.NewStyle()
	st.Focused.Base = lipgloss.NewStyle()
	ta.SetStyles(st)
	ta.SetWidth(80)
	ta.Focus()
	return editor{ta: ta}
}

func (e *editor) setWidth(w int) { e.ta.SetWidth(max(w, 20)) }

func (e *editor) view() string { return e.ta.View() }

func (e *editor) value() string { return e.ta.Value() }

func (e *editor) empty() bool { return e.ta.Length() == 0 }

func (e *editor) reset() {
	e.ta.Reset()
	e.pos = len(e.history)
}

// paste inserts pasted text at the cursor with its line breaks, whatever
// the terminal sent for them.
func (e *editor) paste(s string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	e.ta.InsertString(strings.ReplaceAll(s, "\r", "\n"))
}

// key edits the text, or browses the history when Up is pressed on the
// first line or Down on the last.
func (e *editor) key(k tea.KeyPressMsg) {
	switch k.String() {
	case "up":
		if e.ta.Line() == 0 && e.pos > 0 {
			if e.pos == len(e.history) {
				e.draft = e.ta.Value()
			}
			e.pos--
			e.show(e.history[e.pos])
			return
		}
	case "down":
		if e.ta.Line() == e.ta.LineCount()-1 && e.pos < len(e.history) {
			e.pos++
			if e.pos == len(e.history) {
				e.show(e.draft)
			} else {
				e.show(e.history[e.pos])
			}
			return
		}
	}
	e.ta, _ = e.ta.Update(k)
}

func (e *editor) show(s string) {
	e.ta.SetValue(s)
	e.ta.MoveToEnd()
}

// submitted clears the editor after text was sent and remembers it.
func (e *editor) submitted(text string) {
	e.ta.Reset()
	e.draft = ""
	if n := len(e.history); n == 0 || e.history[n-1] != text {
		e.history = append(e.history, text)
		e.save(text)
	}
	e.pos = len(e.history)
}

// loadHistory reads the last prompts of earlier chats from path, which
// sent prompts are then appended to. A missing or unreadable file starts
// an empty history: recall is a convenience, never a reason to fail.
func (e *editor) loadHistory(path string) {
	e.path = path
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			e.history = append(e.history, s)
		}
	}
	if n := len(e.history); n > historyKeep {
		e.history = append([]string(nil), e.history[n-historyKeep:]...)
		if n > 2*historyKeep {
			e.rewrite()
		}
	}
	e.pos = len(e.history)
}

// save appends one prompt to the history file, readable by the user only.
func (e *editor) save(text string) {
	if e.path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(e.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(e.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(text)
	f.Write(append(b, '\n'))
}

// rewrite keeps the file to the entries the editor recalls.
func (e *editor) rewrite() {
	var b strings.Builder
	for _, s := range e.history {
		j, _ := json.Marshal(s)
		b.Write(j)
		b.WriteByte('\n')
	}
	tmp := e.path + ".tmp"
	if os.WriteFile(tmp, []byte(b.String()), 0o600) == nil {
		os.Rename(tmp, e.path)
	}
}
