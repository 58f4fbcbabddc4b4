package main

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/reinhq/rein/mcp"
)

// elicitMsg is an MCP server's request for input, waiting for its answer.
type elicitMsg struct {
	req   *mcp.ElicitRequest
	reply chan *mcp.ElicitResult
}

// elicitForm is a request for input being answered above the editor, one
// field at a time: Enter takes the editor's text as the field's value and
// goes to the next, Esc declines, Ctrl+C cancels.
type elicitForm struct {
	elicitMsg
	field   int
	content map[string]any
	shown   []string // the fields answered, as shown
	problem string   // why Enter did not go on
	draft   string   // the editor's text before the form opened
}

func (m *chatModel) openForm(msg elicitMsg) {
	if m.form != nil {
		msg.reply <- &mcp.ElicitResult{Action: mcp.ElicitDecline, Reason: "another request for input was being answered"}
		return
	}
	m.form = &elicitForm{elicitMsg: msg, content: map[string]any{}, draft: m.ed.value()}
	m.ed.ta.Reset()
	m.top = nil
}

func (f *elicitForm) view(w int) []string {
	out := []string{styleApproval.Render(shorten(fmt.Sprintf("MCP server %s asks: %s", f.req.Server, f.req.Message), w))}
	if f.req.Mode == mcp.ElicitURL {
		return append(out, styleApproval.Render(shorten("Open "+f.req.URL+"?  [y]es  [n]o  [c]ancel", w)))
	}
	out = append(out, f.shown...)
	if f.field < len(f.req.Fields) {
		out = append(out, shorten(strings.TrimSpace(fieldPrompt(f.req.Fields[f.field])), w))
	}
	hint := "Enter answers the field · Esc declines · Ctrl+C cancels"
	if f.problem != "" {
		hint = f.problem
	}
	return append(out, styleNotice.Render(hint))
}

func (m *chatModel) formKey(k tea.KeyPressMsg) {
	f := m.form
	switch ks := k.String(); {
	case ks == "ctrl+c":
		m.closeForm(&mcp.ElicitResult{Action: mcp.ElicitCancel, Reason: "cancelled in chat"}, "cancelled")
	case ks == "esc":
		m.closeForm(&mcp.ElicitResult{Action: mcp.ElicitDecline, Reason: "declined in chat"}, "declined")
	case f.req.Mode == mcp.ElicitURL:
		switch strings.ToLower(ks) {
		case "y", "enter":
			openBrowser(f.req.URL)
			m.closeForm(&mcp.ElicitResult{Action: mcp.ElicitAccept}, "opened "+f.req.URL)
		case "n":
			m.closeForm(&mcp.ElicitResult{Action: mcp.ElicitDecline, Reason: "declined in chat"}, "declined")
		case "c":
			m.closeForm(&mcp.ElicitResult{Action: mcp.ElicitCancel, Reason: "cancelled in chat"}, "cancelled")
		}
	case ks == "enter":
		m.answerField()
	default:
		m.ed.ta, _ = m.ed.ta.Update(k)
	}
}

// answerField takes the editor's text as the current field's value; after
// the last field the form is sent.
func (m *chatModel) answerField() {
	f := m.form
	fd := f.req.Fields[f.field]
	v := strings.TrimSpace(m.ed.value())
	label := fd.Title
	if label == "" {
		label = fd.Name
	}
	if v == "" && fd.Required {
		f.problem = label + " is required (Esc declines the whole form)"
		return
	}
	f.problem = ""
	if v != "" {
		f.content[fd.Name] = fieldValue(fd, v)
	}
	f.shown = append(f.shown, "  "+label+": "+v)
	m.ed.ta.Reset()
	if f.field++; f.field == len(f.req.Fields) {
		m.closeForm(&mcp.ElicitResult{Action: mcp.ElicitAccept, Content: f.content}, "answered")
	}
}

// closeForm sends the answer, notes it in the transcript and gives the
// editor its text back.
func (m *chatModel) closeForm(res *mcp.ElicitResult, how string) {
	f := m.form
	f.reply <- res
	m.form = nil
	m.notice(fmt.Sprintf("MCP server %s asked %q: %s", f.req.Server, f.req.Message, how))
	m.ed.show(f.draft)
}
