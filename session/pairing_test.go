package session_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// seqd numbers payloads into events from seq 1.
func seqd(ps ...session.Payload) []session.Event {
	evs := make([]session.Event, len(ps))
	for i, p := range ps {
		evs[i] = session.Event{Seq: int64(i + 1), Data: p}
	}
	return evs
}

func calls(ids ...llm.CallID) *session.AssistantMessage {
	var parts []llm.Part
	for _, id := range ids {
		parts = append(parts, &llm.ToolCall{ID: id, Name: "f"})
	}
	return &session.AssistantMessage{Parts: parts}
}

func result(id llm.CallID, s string) *session.ToolResult {
	return &session.ToolResult{CallID: id, Parts: text(s)}
}

func answered(id llm.CallID, s string) *llm.ToolResult {
	return &llm.ToolResult{CallID: id, Parts: text(s)}
}

func unanswered(id llm.CallID) *llm.ToolResult {
	return &llm.ToolResult{CallID: id, IsError: true, Parts: text(session.TextNoResult)}
}

func asst(ids ...llm.CallID) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Parts: calls(ids...).Parts}
}

func userOf(ps ...llm.Part) llm.Message { return llm.Message{Role: llm.RoleUser, Parts: ps} }

func dupOf(id, nid llm.CallID) session.Repair {
	return session.Repair{Kind: session.RepairDuplicateID, CallID: id, Detail: session.DetailDuplicateID + string(nid)}
}

func missing(id llm.CallID) session.Repair {
	return session.Repair{Kind: session.RepairMissingResult, CallID: id, Detail: session.DetailMissingResult}
}

func orphan(id llm.CallID) session.Repair {
	return session.Repair{Kind: session.RepairOrphanResult, CallID: id, Detail: session.DetailOrphanResult}
}

// checkUniqueIDs reports a call id the messages use twice.
func checkUniqueIDs(msgs []llm.Message) error {
	seen := map[llm.CallID]bool{}
	for i, m := range msgs {
		for _, c := range m.ToolCalls() {
			if seen[c.ID] || c.ID == "" {
				return fmt.Errorf("message %d: call id %q is empty or used before", i, c.ID)
			}
			seen[c.ID] = true
		}
	}
	return nil
}

func TestDeriverPairing(t *testing.T) {
	ok := &session.AssistantMessage{Parts: text("ok")}
	tests := []struct {
		name    string
		events  []session.Event
		want    []llm.Message
		repairs []session.Repair
	}{
		{
			name:    "a call left without a result by the next message",
			events:  seqd(calls("a"), ok),
			want:    []llm.Message{asst("a"), userOf(unanswered("a")), {Role: llm.RoleAssistant, Parts: text("ok")}},
			repairs: []session.Repair{missing("a")},
		},
		{
			name:    "a call still open when the request is built",
			events:  seqd(calls("a", "b"), result("b", "rb")),
			want:    []llm.Message{asst("a", "b"), userOf(unanswered("a"), answered("b", "rb"))},
			repairs: []session.Repair{missing("a")},
		},
		{
			name:    "an orphan result",
			events:  seqd(&session.UserMessage{Parts: text("hi")}, ok, result("ghost", "boo")),
			want:    []llm.Message{userOf(text("hi")...), {Role: llm.RoleAssistant, Parts: text("ok")}},
			repairs: []session.Repair{orphan("ghost")},
		},
		{
			name:    "a second result for one call",
			events:  seqd(calls("a"), result("a", "first"), result("a", "second")),
			want:    []llm.Message{asst("a"), userOf(answered("a", "first"))},
			repairs: []session.Repair{orphan("a")},
		},
		{
			name:    "a call id repeated in one message",
			events:  seqd(calls("a", "b", "a"), result("a", "r1"), result("b", "rb"), result("a", "r2")),
			want:    []llm.Message{asst("a", "b", "a_dup1"), userOf(answered("a", "r1"), answered("b", "rb"), answered("a_dup1", "r2"))},
			repairs: []session.Repair{dupOf("a", "a_dup1")},
		},
		{
			name: "a call id repeated across responses, several times",
			events: seqd(
				calls("x"), result("x", "1"),
				calls("x"), result("x", "2"),
				calls("x"), result("x", "3"),
			),
			want: []llm.Message{
				asst("x"), userOf(answered("x", "1")),
				asst("x_dup1"), userOf(answered("x_dup1", "2")),
				asst("x_dup2"), userOf(answered("x_dup2", "3")),
			},
			repairs: []session.Repair{dupOf("x", "x_dup1")}, // each kind and id once
		},
		{
			name:    "a renamed id skips one the log uses",
			events:  seqd(calls("x", "x_dup1"), result("x", "1"), result("x_dup1", "2"), calls("x"), result("x", "3")),
			want:    []llm.Message{asst("x", "x_dup1"), userOf(answered("x", "1"), answered("x_dup1", "2")), asst("x_dup2"), userOf(answered("x_dup2", "3"))},
			repairs: []session.Repair{dupOf("x", "x_dup2")},
		},
		{
			name:    "an empty call id",
			events:  seqd(calls(""), result("", "r")),
			want:    []llm.Message{asst("_dup1"), userOf(answered("_dup1", "r"))},
			repairs: []session.Repair{dupOf("", "_dup1")},
		},
		{
			name: "a call id repeated after a compaction",
			events: seqd(
				calls("x"), result("x", "1"),
				&session.Compaction{Summary: "S", FromSeq: 1, ToSeq: 2},
				calls("x"), result("x", "2"),
			),
			want: []llm.Message{
				userOf(text("[The earlier conversation was compacted. Summary:]\nS")...),
				asst("x_dup1"), userOf(answered("x_dup1", "2")),
			},
			repairs: []session.Repair{dupOf("x", "x_dup1")},
		},
		{
			name: "a result a compaction cut from its call is no repair",
			events: seqd(
				&session.UserMessage{Parts: text("go")}, calls("a"), result("a", "ra"),
				&session.Compaction{Summary: "S", FromSeq: 1, ToSeq: 2},
			),
			want: []llm.Message{userOf(text("[The earlier conversation was compacted. Summary:]\nS")...)},
		},
		{
			name: "an orphan result after a compaction",
			events: seqd(
				calls("a"), result("a", "ra"),
				&session.Compaction{Summary: "S", FromSeq: 1, ToSeq: 2},
				ok, result("ghost", "boo"),
			),
			want: []llm.Message{
				userOf(text("[The earlier conversation was compacted. Summary:]\nS")...),
				{Role: llm.RoleAssistant, Parts: text("ok")},
			},
			repairs: []session.Repair{orphan("ghost")},
		},
		{
			name: "repairs already on the log",
			events: seqd(
				calls("lost"),
				&session.Repair{Kind: session.RepairMissingResult, CallID: "lost", Detail: "recorded before"},
				ok, result("ghost", "boo"),
				&session.Repair{Kind: session.RepairOrphanResult, CallID: "ghost"},
				calls("lost"), result("lost", "r"),
				&session.Repair{Kind: session.RepairDuplicateID, CallID: "lost"},
			),
			want: []llm.Message{
				asst("lost"), userOf(unanswered("lost")), {Role: llm.RoleAssistant, Parts: text("ok")},
				asst("lost_dup1"), userOf(answered("lost_dup1", "r")),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d session.Deriver
			d.Add(tt.events...)
			got := d.Messages()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.repairs, d.Repairs()); diff != "" {
				t.Errorf("repairs (-want +got):\n%s", diff)
			}
			if reps := d.Repairs(); len(reps) != 0 {
				t.Errorf("repairs reported a second time: %+v", reps)
			}
			if err := checkPaired(got); err != nil {
				t.Errorf("not a valid request: %v", err)
			}
			if err := checkUniqueIDs(got); err != nil {
				t.Error(err)
			}
			// Event by event, the view and the repairs are the same.
			var inc session.Deriver
			for _, e := range tt.events {
				inc.Add(e)
				inc.Messages()
			}
			if diff := cmp.Diff(got, inc.Messages()); diff != "" {
				t.Errorf("incremental view (-batch +incremental):\n%s", diff)
			}
			if diff := cmp.Diff(tt.repairs, inc.Repairs()); diff != "" {
				t.Errorf("incremental repairs (-want +got):\n%s", diff)
			}
		})
	}
}

// Repairs counts a call without a result as missing when it is asked,
// and reports a repair once the step that needed it is over, not again.
func TestDeriverRepairsAtRequestTime(t *testing.T) {
	var d session.Deriver
	d.Add(seqd(calls("a"))...)
	if diff := cmp.Diff([]session.Repair{missing("a")}, d.Repairs()); diff != "" {
		t.Errorf("at the request (-want +got):\n%s", diff)
	}
	// The loop records it; the next message closes the call again.
	d.Add(
		session.Event{Seq: 2, Data: &session.Repair{Kind: session.RepairMissingResult, CallID: "a", Detail: session.DetailMissingResult}},
		session.Event{Seq: 3, Data: &session.AssistantMessage{Parts: text("done")}},
	)
	if reps := d.Repairs(); len(reps) != 0 {
		t.Errorf("reported again: %+v", reps)
	}
	// A normal step: results are in before the request, so no repair.
	d.Add(session.Event{Seq: 4, Data: calls("b")}, session.Event{Seq: 5, Data: result("b", "rb")})
	if reps := d.Repairs(); len(reps) != 0 {
		t.Errorf("repairs for a paired step: %+v", reps)
	}
}

func TestDedupeCalls(t *testing.T) {
	tests := []struct {
		name    string
		logged  []llm.CallID // call ids the log used before
		parts   []llm.CallID
		want    []llm.CallID
		repairs []session.Repair
	}{
		{name: "new ids", logged: []llm.CallID{"a"}, parts: []llm.CallID{"b", "c"}, want: []llm.CallID{"b", "c"}},
		{name: "repeated in the response", parts: []llm.CallID{"a", "a"}, want: []llm.CallID{"a", "a_dup1"}, repairs: []session.Repair{dupOf("a", "a_dup1")}},
		{name: "used before in the session", logged: []llm.CallID{"x"}, parts: []llm.CallID{"x"}, want: []llm.CallID{"x_dup1"}, repairs: []session.Repair{dupOf("x", "x_dup1")}},
		{name: "empty", parts: []llm.CallID{""}, want: []llm.CallID{"_dup1"}, repairs: []session.Repair{dupOf("", "_dup1")}},
		{
			name:    "a new id taken by the log or a later call",
			logged:  []llm.CallID{"x", "x_dup1"},
			parts:   []llm.CallID{"x", "x_dup2", "x"},
			want:    []llm.CallID{"x_dup3", "x_dup2", "x_dup4"},
			repairs: []session.Repair{dupOf("x", "x_dup3"), dupOf("x", "x_dup4")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d session.Deriver
			if len(tt.logged) > 0 {
				d.Add(seqd(calls(tt.logged...))...)
				d.Repairs()
			}
			in := calls(tt.parts...).Parts
			before := fmt.Sprint(ids(in))
			out, reps := d.DedupeCalls(in)
			if diff := cmp.Diff(tt.want, ids(out)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.repairs, reps); diff != "" {
				t.Errorf("repairs (-want +got):\n%s", diff)
			}
			if after := fmt.Sprint(ids(in)); after != before {
				t.Errorf("the input changed: %s, was %s", after, before)
			}
			if reps == nil && &out[0] != &in[0] {
				t.Error("parts were copied though nothing was renamed")
			}
			// Logged as deduped, the response needs no repair in the view.
			d.Add(session.Event{Seq: 2, Data: &session.AssistantMessage{Parts: out}})
			var want []session.Repair
			for _, id := range tt.want {
				want = append(want, missing(id)) // no results were added
			}
			if diff := cmp.Diff(want, d.Repairs()); diff != "" {
				t.Errorf("view repairs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, ids(d.Messages()[len(d.Messages())-2].Parts)); diff != "" {
				t.Errorf("view ids (-want +got):\n%s", diff)
			}
		})
	}
}

// A model that always sends the same call id is renamed in O(1) per
// response: the k-th repeat does not try k names.
func TestDedupeCallsSameIDEveryStep(t *testing.T) {
	var d session.Deriver
	seq := int64(0)
	for i := range 1000 {
		out, reps := d.DedupeCalls(calls("call_0").Parts)
		want := llm.CallID("call_0")
		if i > 0 {
			want = session.DedupeID("call_0", i)
		}
		if got := ids(out); got[0] != want || len(reps) != min(i, 1) {
			t.Fatalf("response %d: ids %v, repairs %+v; want %s", i, got, reps, want)
		}
		d.Add(session.Event{Seq: seq + 1, Data: &session.AssistantMessage{Parts: out}}, session.Event{Seq: seq + 2, Data: result(want, "r")})
		seq += 2
	}
	if reps := d.Repairs(); len(reps) != 0 {
		t.Errorf("view repairs after deduped responses: %+v", reps)
	}
	allocs := testing.AllocsPerRun(100, func() { d.DedupeCalls(calls("call_0").Parts) })
	if allocs > 8 {
		t.Errorf("DedupeCalls of a repeated id after 1000 repeats: %.0f allocations, want a few", allocs)
	}
}

func ids(parts []llm.Part) []llm.CallID {
	var out []llm.CallID
	for _, p := range parts {
		if c, ok := p.(*llm.ToolCall); ok {
			out = append(out, c.ID)
		}
	}
	return out
}

func TestDedupeID(t *testing.T) {
	for _, tt := range []struct {
		id   llm.CallID
		n    int
		want llm.CallID
	}{{"toolu_1", 1, "toolu_1_dup1"}, {"", 2, "_dup2"}, {"c", 120, "c_dup120"}} {
		if got := session.DedupeID(tt.id, tt.n); got != tt.want {
			t.Errorf("DedupeID(%q, %d) = %q, want %q", tt.id, tt.n, got, tt.want)
		}
	}
}

// TestDeriverAfterDuplicateIsAllocationFlat checks that a repeated id
// does not make later steps rescan the history: a step after one costs
// the same few allocations with 100 or 10,000 prior steps.
func TestDeriverAfterDuplicateIsAllocationFlat(t *testing.T) {
	perStep := func(prior int) float64 {
		var d session.Deriver
		d.Add(stepsAfterDuplicate(prior)...)
		d.Repairs()
		seq := int64(2 * prior)
		var steps [][2]session.Event
		for i := range 1300 {
			id := llm.CallID(fmt.Sprintf("n%d", i))
			steps = append(steps, [2]session.Event{
				{Seq: seq + 1, Data: calls(id)},
				{Seq: seq + 2, Data: result(id, "r")},
			})
			seq += 2
		}
		next := 0
		step := func() {
			d.Add(steps[next][:]...)
			next++
			d.Messages()
		}
		for range 1000 { // so slice growth is amortised over the measured runs
			step()
		}
		return testing.AllocsPerRun(200, step)
	}
	small, large := perStep(100), perStep(10000)
	if small > 4 || large > 4 {
		t.Errorf("allocations per step after a duplicate: %.1f with 100 prior steps, %.1f with 10,000; want at most 4 either way", small, large)
	}
}

// A compaction that re-pairs a renamed call's results renames a copy:
// messages returned before keep what they showed.
func TestDeriverRebuildKeepsHeldResults(t *testing.T) {
	var d session.Deriver
	d.Add(seqd(calls("a", "a"), result("a", "r1"), result("a", "r2"))...)
	held := d.Messages()
	second := held[1].Parts[1].(*llm.ToolResult)
	d.Add(session.Event{Seq: 4, Data: &session.Compaction{Summary: "S", FromSeq: 2, ToSeq: 2}})
	want := []llm.Message{
		asst("a", "a_dup1"),
		userOf(answered("a", "r2"), unanswered("a_dup1"), &llm.Text{Text: "[The earlier conversation was compacted. Summary:]\nS"}),
	}
	if diff := cmp.Diff(want, d.Messages()); diff != "" {
		t.Errorf("view after the compaction (-want +got):\n%s", diff)
	}
	if second.CallID != "a_dup1" || held[1].Parts[1] != second {
		t.Errorf("a message returned before changed: %+v", held[1].Parts[1])
	}
}
