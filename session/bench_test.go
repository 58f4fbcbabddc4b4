package session_test

import (
	"fmt"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// history returns a realistic log of at least n events.
func history(n int) []session.Event {
	l := sessiontest.NewLog("bench")
	for i := 0; len(l.Events) < n; i++ {
		l.FullTurn(fmt.Sprintf("prompt %d", i), fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i))
	}
	return l.Events[:n]
}

// BenchmarkDeriverStep measures adding one step — an assistant message with
// a tool call and its result — to a view of the given size, and reading
// the messages. The cost must not grow with the history.
func BenchmarkDeriverStep(b *testing.B) {
	asst := &session.AssistantMessage{Parts: []llm.Part{&llm.Text{Text: "checking"}, &llm.ToolCall{ID: "x", Name: "read", Args: []byte(`{"path":"a"}`)}}}
	res := &session.ToolResult{CallID: "x", Name: "read", Parts: []llm.Part{&llm.Text{Text: "contents"}}}
	for _, prior := range []int{10, 1000, 100000} {
		b.Run(fmt.Sprintf("prior=%d", prior), func(b *testing.B) {
			var d session.Deriver
			d.Add(history(prior)...)
			seq := int64(prior)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				d.Add(session.Event{Seq: seq + 1, Data: asst}, session.Event{Seq: seq + 2, Data: res})
				seq += 2
				if len(d.Messages()) == 0 {
					b.Fatal("no messages")
				}
			}
		})
	}
}

// BenchmarkDerive measures the full projection of a 100,000-event log.
func BenchmarkDerive(b *testing.B) {
	events := history(100000)
	b.ReportAllocs()
	for b.Loop() {
		if len(session.Derive(events)) == 0 {
			b.Fatal("no messages")
		}
	}
}

func codecEvents() map[string]session.Event {
	l := sessiontest.NewLog("bench").StartTurn("prompt").OpenStep("let me look", "c1").Result("c1", "package main\n\nfunc main() {}\n")
	return map[string]session.Event{
		"assistant.message": l.Events[3],
		"tool.result":       l.Events[5],
		"step.start":        l.Events[2],
	}
}

// BenchmarkEncodeEvent measures AppendEventJSON into a reused buffer.
func BenchmarkEncodeEvent(b *testing.B) {
	for name, e := range codecEvents() {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = session.AppendEventJSON(buf[:0], e)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// BenchmarkDecodeEvent measures DecodeEvent of one line.
func BenchmarkDecodeEvent(b *testing.B) {
	for name, e := range codecEvents() {
		line, _ := e.MarshalJSON()
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := session.DecodeEvent(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemStoreAppend measures appending one step's events (five) to
// a MemStore.
func BenchmarkMemStoreAppend(b *testing.B) {
	st := session.NewMemStore()
	defer st.Close()
	id, _ := st.Create(b.Context(), nil)
	step := sessiontest.NewLog(id).StartTurn("p").Step("look", "c1").Events[2:7]
	b.ReportAllocs()
	seq := int64(0)
	batch := make([]session.Event, len(step))
	for b.Loop() {
		for i, e := range step {
			e.Seq = seq + int64(i) + 1
			batch[i] = e
		}
		seq += int64(len(batch))
		if err := st.Append(b.Context(), id, batch...); err != nil {
			b.Fatal(err)
		}
	}
}

// stepsAfterDuplicate returns a log of n steps, each a call and its
// result, whose second step repeats the first one's call id.
func stepsAfterDuplicate(n int) []session.Event {
	evs := make([]session.Event, 0, 2*n)
	for i := range n {
		id := llm.CallID(fmt.Sprintf("c%d", i))
		if i == 1 {
			id = "c0"
		}
		evs = append(evs,
			session.Event{Seq: int64(2*i + 1), Data: &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: id, Name: "read"}}}},
			session.Event{Seq: int64(2*i + 2), Data: &session.ToolResult{CallID: id, Parts: []llm.Part{&llm.Text{Text: "r"}}}})
	}
	return evs
}

// BenchmarkDeriveAfterDuplicate measures one step (Add of a call and its
// result, then Messages) after a log whose call ids repeated once, at 100
// and 10,000 prior steps: the cost must be the same. In "fresh-id" every
// step has a new id (made while the timer is stopped); in "same-id" every
// step repeats one id, as some servers send, so each step is renamed.
func BenchmarkDeriveAfterDuplicate(b *testing.B) {
	for _, same := range []bool{false, true} {
		for _, prior := range []int{100, 10000} {
			name := fmt.Sprintf("fresh-id/prior=%d", prior)
			if same {
				name = fmt.Sprintf("same-id/prior=%d", prior)
			}
			b.Run(name, func(b *testing.B) {
				var d session.Deriver
				d.Add(stepsAfterDuplicate(prior)...)
				d.Repairs()
				seq, made := int64(2*prior), 0
				steps := make([][2]session.Event, 1024)
				fill := func() {
					for i := range steps {
						id := llm.CallID("c0")
						if !same {
							id = llm.CallID(fmt.Sprintf("n%d", made))
						}
						made++
						steps[i] = [2]session.Event{
							{Seq: seq + 1, Data: &session.AssistantMessage{Parts: []llm.Part{&llm.ToolCall{ID: id, Name: "read"}}}},
							{Seq: seq + 2, Data: &session.ToolResult{CallID: id, Parts: []llm.Part{&llm.Text{Text: "r"}}}},
						}
						seq += 2
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if i%len(steps) == 0 {
						b.StopTimer()
						fill()
						b.StartTimer()
					}
					d.Add(steps[i%len(steps)][:]...)
					if len(d.Messages()) == 0 {
						b.Fatal("no messages")
					}
				}
			})
		}
	}
}
