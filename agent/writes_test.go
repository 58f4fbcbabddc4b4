package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// writeLog is a store that records the event types of each append, in
// order, as one line per write.
type writeLog struct {
	session.Store
	mu     sync.Mutex
	writes []string
}

func (s *writeLog) Append(ctx context.Context, id session.ID, evs ...session.Event) error {
	if err := s.Store.Append(ctx, id, evs...); err != nil {
		return err
	}
	types := make([]string, len(evs))
	for i := range evs {
		types[i] = evs[i].Data.EventType()
	}
	s.mu.Lock()
	s.writes = append(s.writes, strings.Join(types, " "))
	s.mu.Unlock()
	return nil
}

func (s *writeLog) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

// A step that runs a tool takes two writes: the answer with its call
// before the tool runs, then the result and the step's end with the next
// step's start (or the turn's end). The tool sees its call on the log,
// and an observer sees each event only once it is written.
func TestStepWritesTwiceAndCallIsWrittenBeforeItRuns(t *testing.T) {
	st := &writeLog{Store: session.NewMemStore()}
	var (
		mu     sync.Mutex
		seen   []string
		onLog  []bool
		before int
	)
	probe := funcTool("probe", func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		found := false
		for ev, err := range st.Events(ctx, session.ID(call.Session), 0) {
			if err != nil {
				return nil, err
			}
			if tc, ok := ev.Data.(*session.ToolCall); ok && tc.CallID == call.ID {
				found = true
			}
		}
		mu.Lock()
		onLog = append(onLog, found)
		mu.Unlock()
		return tool.Text("ok"), nil
	})
	hs := new(hook.Set).Observe("probe", "*", func(ev session.Event) {
		written := 0
		for _, w := range st.all() {
			written += len(strings.Fields(w))
		}
		mu.Lock()
		defer mu.Unlock()
		if ev.Seq > int64(written) {
			before++
		}
		seen = append(seen, ev.Data.EventType())
	})
	h := newHarness(t, &agent.Options{Store: st, Tools: []tool.Tool{probe}, Hooks: hs},
		llmtest.CallTool("c1", "probe", `{}`), llmtest.CallTool("c2", "probe", `{}`), llmtest.Reply("done"))
	if res := h.run("go"); res.Text != "done" {
		t.Fatalf("text = %q", res.Text)
	}
	want := []string{
		"turn.start user.message step.start request.header",
		"assistant.message tool.call",
		"tool.result step.end step.start",
		"assistant.message tool.call",
		"tool.result step.end step.start",
		"assistant.message step.end",
		"turn.end",
	}
	if diff := cmp.Diff(want, st.all()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	h.a.Close() // the observer has had every event
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]bool{true, true}, onLog); diff != "" {
		t.Errorf("call on the log when its tool ran (-want +got):\n%s", diff)
	}
	n := 0
	for _, w := range want {
		n += len(strings.Fields(w))
	}
	if before > 0 || len(seen) != n {
		t.Errorf("observer saw %d events, %d of them before they were written", len(seen), before)
	}
}
