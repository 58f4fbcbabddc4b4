package agent

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// A steering, user or context message logged while a call runs does not
// close the call: as in session.Deriver, its result still pairs, so no
// repair is recorded.
func TestHistoryMessageWhileToolRunsIsNoRepair(t *testing.T) {
	tests := []struct {
		name string
		mid  session.Payload
	}{
		{"steering", &session.SteeringMessage{Parts: []llm.Part{&llm.Text{Text: "also the tests"}}, Source: session.SourceSteer}},
		{"context", &session.ContextMessage{Parts: []llm.Part{&llm.Text{Text: "task 3 exited"}}, Source: session.SourceSystem}},
		{"user", &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "and then?"}}, Source: session.SourceUser}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory()
			h.Add(
				session.Event{Seq: 1, Data: &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "c1", Name: "work", Args: json.RawMessage(`{}`)}}}},
				session.Event{Seq: 2, Data: tt.mid},
				session.Event{Seq: 3, Data: &session.ToolResult{CallID: "c1", Parts: []llm.Part{&llm.Text{Text: "done"}}}},
			)
			if got := h.repairs(); len(got) != 0 {
				t.Errorf("repairs = %+v, want none", got)
			}
			msgs := h.Messages()
			var roles []llm.Role
			for _, m := range msgs {
				roles = append(roles, m.Role)
			}
			if diff := cmp.Diff([]llm.Role{llm.RoleAssistant, llm.RoleUser}, roles); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			if _, ok := msgs[1].Parts[0].(*llm.ToolResult); !ok {
				t.Errorf("the result does not come first: %#v", msgs[1].Parts[0])
			}
		})
	}
}

// The next assistant message still closes a call left without a result.
func TestHistoryNextAssistantClosesOpenCall(t *testing.T) {
	h := newHistory()
	h.Add(
		session.Event{Seq: 1, Data: &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "c1", Name: "work"}}}},
		session.Event{Seq: 2, Data: &session.SteeringMessage{Parts: []llm.Part{&llm.Text{Text: "stop"}}}},
		session.Event{Seq: 3, Data: &session.AssistantMessage{Parts: []llm.Part{&llm.Text{Text: "ok"}}}},
		session.Event{Seq: 4, Data: &session.ToolResult{CallID: "c1"}},
	)
	var kinds []string
	for _, r := range h.repairs() {
		kinds = append(kinds, r.Kind)
	}
	if diff := cmp.Diff([]string{"missing-result", "orphan-result"}, kinds); diff != "" {
		t.Errorf("repairs (-want +got):\n%s", diff)
	}
}
