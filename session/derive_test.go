package session_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/reinhq/rein/internal/golden"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

var update = golden.Update // the shared -update flag

// readLog decodes an NDJSON log from testdata.
func readLog(t testing.TB, path string) []session.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []session.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		e, err := session.DecodeEvent(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// checkPaired reports the first way msgs would make an invalid request:
// a tool call not answered by exactly one result in the next message, a
// result anywhere else, or a result that answers no call.
func checkPaired(msgs []llm.Message) error {
	for i, m := range msgs {
		if len(m.Parts) == 0 {
			return fmt.Errorf("message %d (%s) has no parts", i, m.Role)
		}
		var calls []llm.CallID
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.ToolCall:
				if m.Role != llm.RoleAssistant {
					return fmt.Errorf("message %d: tool call %q in a %s message", i, p.ID, m.Role)
				}
				calls = append(calls, p.ID)
			case *llm.ToolResult:
				if m.Role != llm.RoleUser {
					return fmt.Errorf("message %d: tool result %q in a %s message", i, p.CallID, m.Role)
				}
				if i == 0 || msgs[i-1].Role != llm.RoleAssistant {
					return fmt.Errorf("message %d: tool result %q not right after an assistant message", i, p.CallID)
				}
			}
		}
		if m.Role != llm.RoleAssistant {
			continue
		}
		var results []llm.CallID
		if i+1 < len(msgs) {
			seenOther := false
			for _, p := range msgs[i+1].Parts {
				if r, ok := p.(*llm.ToolResult); ok {
					if seenOther {
						return fmt.Errorf("message %d: tool result %q after other content", i+1, r.CallID)
					}
					results = append(results, r.CallID)
				} else {
					seenOther = true
				}
			}
		}
		unique := calls[:0:0]
		for _, c := range calls {
			dup := false
			for _, u := range unique {
				dup = dup || u == c
			}
			if !dup {
				unique = append(unique, c)
			}
		}
		if !slicesEqual(unique, results) {
			return fmt.Errorf("message %d calls %q but message %d answers %q", i, unique, i+1, results)
		}
	}
	return nil
}

func slicesEqual(a, b []llm.CallID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDeriveGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/derive/*.ndjson")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no derive cases: %v", err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".ndjson")
		t.Run(name, func(t *testing.T) {
			events := readLog(t, path)
			msgs := session.Derive(events)
			if err := checkPaired(msgs); err != nil {
				t.Errorf("derived messages are not a valid request: %v", err)
			}
			got, err := json.MarshalIndent(msgs, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(path, ".ndjson") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("derived messages mismatch (-want +got):\n%s", diff)
			}
			// The incremental view agrees with the full one after every event.
			var d session.Deriver
			for i := range events {
				d.Add(events[i])
				if diff := cmp.Diff(session.Derive(events[:i+1]), d.Messages()); diff != "" {
					t.Fatalf("Deriver after seq %d differs from Derive (-want +got):\n%s", events[i].Seq, diff)
				}
			}
		})
	}
}

// TestDeriveLogsAreCanonical checks that the hand-written logs are in the
// codec's own shape: each line decodes and encodes to the same bytes.
func TestDeriveLogsAreCanonical(t *testing.T) {
	paths, _ := filepath.Glob("testdata/derive/*.ndjson")
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
			e, err := session.DecodeEvent(line)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n+1, err)
			}
			got, err := session.AppendEventJSON(nil, e)
			if err != nil {
				t.Fatalf("%s:%d: encode: %v", path, n+1, err)
			}
			if diff := cmp.Diff(string(line), string(got)); diff != "" {
				t.Errorf("%s:%d re-encodes differently (-want +got):\n%s", path, n+1, diff)
			}
		}
	}
}

func TestDeriveBalancedGoldens(t *testing.T) {
	for _, name := range []string{"tool_round_trip", "parallel_calls", "steering", "interrupted", "compaction", "repaired_tail"} {
		if err := session.Balanced(readLog(t, "testdata/derive/"+name+".ndjson")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := session.Balanced(readLog(t, "testdata/derive/unpaired.ndjson")); err == nil {
		t.Errorf("unpaired: Balanced = nil, want an error")
	}
}

func text(s string) []llm.Part { return []llm.Part{&llm.Text{Text: s}} }

func TestDeriveRules(t *testing.T) {
	at := func(seq int64, p session.Payload) session.Event {
		return session.Event{Seq: seq, Time: sessiontest.Base, Session: "s", Turn: "t", Data: p}
	}
	call := func(id string) llm.Part { return &llm.ToolCall{ID: llm.CallID(id), Name: "f"} }
	tests := []struct {
		name   string
		events []session.Event
		want   []llm.Message
	}{
		{
			name:   "empty log",
			events: nil,
			want:   nil,
		},
		{
			name: "context is framed with its source",
			events: []session.Event{
				at(1, &session.ContextMessage{Parts: []llm.Part{&llm.Text{Text: "a"}, &llm.Image{URL: "u"}, &llm.Text{Text: "b"}}, Source: `hook "x"`}),
				at(2, &session.ContextMessage{Parts: text("plain")}),
			},
			want: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
				&llm.Text{Text: "<context source=\"hook &#34;x&#34;\">\na\nb\n</context>"},
				&llm.Image{URL: "u"},
				&llm.Text{Text: "<context>\nplain\n</context>"},
			}}},
		},
		{
			name: "steering is a note, not a prompt",
			events: []session.Event{
				at(1, &session.SteeringMessage{Parts: text("stop"), Source: session.SourceSteer}),
				at(2, &session.SteeringMessage{Parts: text("go on"), Source: "finalize-hook"}),
			},
			want: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
				&llm.Text{Text: "[The user sent this message while you were working.]\nstop"},
				&llm.Text{Text: "[Note from finalize-hook, added while you were working.]\ngo on"},
			}}},
		},
		{
			name: "tool parts on the wrong side are dropped",
			events: []session.Event{
				at(1, &session.UserMessage{Parts: []llm.Part{call("x"), &llm.Text{Text: "hi"}, &llm.ToolResult{CallID: "x"}}}),
				at(2, &session.AssistantMessage{Parts: []llm.Part{&llm.ToolResult{CallID: "y"}}}),
				at(3, &session.AssistantMessage{Parts: []llm.Part{&llm.Text{Text: "ok"}, &llm.ToolResult{CallID: "y"}}}),
			},
			want: []llm.Message{
				{Role: llm.RoleUser, Parts: text("hi")},
				{Role: llm.RoleAssistant, Parts: text("ok")},
			},
		},
		{
			name: "a call id repeated in one message is renamed",
			events: []session.Event{
				at(1, &session.AssistantMessage{Parts: []llm.Part{call("a"), call("a")}}),
				at(2, &session.ToolResult{CallID: "a", Parts: text("r")}),
			},
			want: []llm.Message{
				{Role: llm.RoleAssistant, Parts: []llm.Part{call("a"), call("a_dup1")}},
				{Role: llm.RoleUser, Parts: []llm.Part{
					&llm.ToolResult{CallID: "a", Parts: text("r")},
					&llm.ToolResult{CallID: "a_dup1", IsError: true, Parts: text(session.TextNoResult)},
				}},
			},
		},
		{
			name: "a call left open at the end gets a placeholder",
			events: []session.Event{
				at(1, &session.UserMessage{Parts: text("go")}),
				at(2, &session.AssistantMessage{Parts: []llm.Part{call("a"), call("b")}}),
				at(3, &session.ToolResult{CallID: "b", Parts: text("rb"), IsError: true}),
			},
			want: []llm.Message{
				{Role: llm.RoleUser, Parts: text("go")},
				{Role: llm.RoleAssistant, Parts: []llm.Part{call("a"), call("b")}},
				{Role: llm.RoleUser, Parts: []llm.Part{
					&llm.ToolResult{CallID: "a", IsError: true, Parts: text(session.TextNoResult)},
					&llm.ToolResult{CallID: "b", IsError: true, Parts: text("rb")},
				}},
			},
		},
		{
			name: "a later compaction replaces an earlier summary",
			events: []session.Event{
				at(1, &session.UserMessage{Parts: text("one")}),
				at(2, &session.AssistantMessage{Parts: text("two")}),
				at(3, &session.Compaction{Summary: "S1", FromSeq: 1, ToSeq: 2}),
				at(4, &session.UserMessage{Parts: text("three")}),
				at(5, &session.AssistantMessage{Parts: text("four")}),
				at(6, &session.Compaction{Summary: "S2", FromSeq: 1, ToSeq: 5}),
				at(7, &session.UserMessage{Parts: text("five")}),
			},
			want: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
				&llm.Text{Text: "[The earlier conversation was compacted. Summary:]\nS2"},
				&llm.Text{Text: "five"},
			}}},
		},
		{
			name: "compaction of only bookkeeping events keeps its place",
			events: []session.Event{
				at(1, &session.UserMessage{Parts: text("one")}),
				at(2, &session.AssistantMessage{Parts: text("two")}),
				at(3, &session.StepEnd{Step: 1}),
				at(4, &session.Compaction{Summary: "S", FromSeq: 3, ToSeq: 99}),
			},
			want: []llm.Message{
				{Role: llm.RoleUser, Parts: text("one")},
				{Role: llm.RoleAssistant, Parts: text("two")},
				{Role: llm.RoleUser, Parts: text("[The earlier conversation was compacted. Summary:]\nS")},
			},
		},
		{
			name: "compaction cutting a call from its result keeps pairs valid",
			events: []session.Event{
				at(1, &session.UserMessage{Parts: text("go")}),
				at(2, &session.AssistantMessage{Parts: []llm.Part{call("a")}}),
				at(3, &session.ToolResult{CallID: "a", Parts: text("ra")}),
				at(4, &session.Compaction{Summary: "S", FromSeq: 1, ToSeq: 2}),
			},
			want: []llm.Message{
				{Role: llm.RoleUser, Parts: text("[The earlier conversation was compacted. Summary:]\nS")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := session.Derive(tt.events)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Derive mismatch (-want +got):\n%s", diff)
			}
			if err := checkPaired(got); err != nil {
				t.Errorf("not a valid request: %v", err)
			}
		})
	}
}

func TestDeriverMessagesIsStableAcrossAppend(t *testing.T) {
	var d session.Deriver
	d.Add(session.Event{Seq: 1, Data: &session.UserMessage{Parts: text("a")}})
	got := d.Messages()
	_ = append(got, llm.UserText("caller's own"))
	d.Add(session.Event{Seq: 2, Data: &session.AssistantMessage{Parts: text("b")}})
	want := []llm.Message{{Role: llm.RoleUser, Parts: text("a")}, {Role: llm.RoleAssistant, Parts: text("b")}}
	if diff := cmp.Diff(want, d.Messages()); diff != "" {
		t.Errorf("a caller's append changed the Deriver (-want +got):\n%s", diff)
	}
	if d.Len() != 2 {
		t.Errorf("Len = %d, want 2", d.Len())
	}
}

// fuzzEvents turns bytes into an event sequence over a few call ids, so the
// fuzzer explores orders of calls, results and compactions.
func fuzzEvents(data []byte) []session.Event {
	var events []session.Event
	ids := []llm.CallID{"a", "b", "c", ""}
	for i := 0; i+1 < len(data); i += 2 {
		op, arg := data[i], data[i+1]
		seq := int64(len(events) + 1)
		id := ids[int(arg)%len(ids)]
		var p session.Payload
		switch op % 9 {
		case 0:
			p = &session.UserMessage{Parts: text("u")}
		case 1:
			var parts []llm.Part
			for j := range int(arg % 4) {
				parts = append(parts, &llm.ToolCall{ID: ids[(int(arg)/4+j)%len(ids)], Name: "f"})
			}
			if arg&0x40 != 0 {
				parts = append(parts, &llm.Text{Text: "t"})
			}
			p = &session.AssistantMessage{Parts: parts, Interrupted: arg&0x80 != 0}
		case 2:
			p = &session.ToolResult{CallID: id, Parts: text("r"), IsError: arg&1 != 0}
		case 3:
			p = &session.SteeringMessage{Parts: text("s"), Source: "steer"}
		case 4:
			p = &session.ContextMessage{Parts: text("c"), Source: "hook"}
		case 5:
			p = &session.Compaction{Summary: "sum", FromSeq: int64(arg % 16), ToSeq: int64(arg%16) + int64(arg/16)}
		case 6:
			p = &session.ToolCall{CallID: id, Name: "f"}
		case 7:
			p = &session.StepStart{Step: int(arg)}
		case 8:
			p = &session.UserMessage{Parts: []llm.Part{&llm.ToolResult{CallID: id}, &llm.ToolCall{ID: id}}}
		}
		events = append(events, session.Event{Seq: seq, Data: p})
	}
	return events
}

func FuzzDerive(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 2, 0, 2, 1, 1, 0x41, 3, 0})
	f.Add([]byte{1, 3, 2, 2, 5, 0x21, 0, 0, 1, 1, 2, 3, 8, 1})
	f.Add([]byte{0, 0, 1, 0x42, 2, 1, 5, 0x13, 2, 0, 1, 0x81})
	f.Fuzz(func(t *testing.T, data []byte) {
		events := fuzzEvents(data)
		msgs := session.Derive(events)
		if err := checkPaired(msgs); err != nil {
			t.Fatalf("Derive made an invalid request: %v", err)
		}
		if err := checkUniqueIDs(msgs); err != nil {
			t.Fatalf("Derive made an invalid request: %v", err)
		}
		// Growing the view event by event gives the same messages.
		var d session.Deriver
		for _, e := range events {
			d.Add(e)
			_ = d.Messages()
		}
		if diff := cmp.Diff(msgs, d.Messages()); diff != "" {
			t.Fatalf("incremental view differs (-full +incremental):\n%s", diff)
		}
	})
}

// TestDeriverStepIsAllocationFlat checks that adding a step does not
// rebuild the view: the allocations per step are the same small number
// with 10 or 20,000 events of history.
func TestDeriverStepIsAllocationFlat(t *testing.T) {
	asst := &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: "x", Name: "read"}}}
	res := &session.ToolResult{CallID: "x", Parts: text("r")}
	perStep := func(prior int) float64 {
		var d session.Deriver
		d.Add(history(prior)...)
		seq := int64(prior)
		// Warm up so slice growth is amortised over the measured runs.
		for range 1000 {
			d.Add(session.Event{Seq: seq + 1, Data: asst}, session.Event{Seq: seq + 2, Data: res})
			seq += 2
			d.Messages()
		}
		return testing.AllocsPerRun(200, func() {
			d.Add(session.Event{Seq: seq + 1, Data: asst}, session.Event{Seq: seq + 2, Data: res})
			seq += 2
			d.Messages()
		})
	}
	small, large := perStep(10), perStep(20000)
	if small > 6 || large > 6 {
		t.Errorf("allocations per step: %.1f with 10 prior events, %.1f with 20,000; want at most 6 either way", small, large)
	}
}
