package agent_test

import (
	"context"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

// With RunRequest.Children a Stream consumer gets the children's events,
// a grandchild's included, as they happen: before the subagent.end that
// closes each, and each carrying its own session and parent run.
func TestStreamYieldsTheChildrensEvents(t *testing.T) {
	f := newFamily(t, nil,
		llmtest.CallTools(spawnCall("c1", `{"task":"task-A: ask your own helper","label":"helper"}`)),
		llmtest.Reply("done"))
	f.rt.route("task-A",
		llmtest.CallTools(spawnCall("g1", `{"task":"task-B: say hi","label":"grand"}`)),
		llmtest.Reply("the grandchild said hi"))
	f.rt.route("task-B", llmtest.Reply("hi"))
	defer f.close()

	var lin agent.Lineage
	var parentRun session.RunID
	depth := map[string]int{}   // agent → depth seen
	deltas := map[string]bool{} // agent → a text delta was seen
	ended := map[string]bool{}  // agent → its subagent.end was seen
	for ev, err := range f.a.Stream(context.Background(), &agent.RunRequest{Prompt: "go", Children: true}) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if ev.ParentRun == "" && parentRun == "" {
			parentRun = ev.Run
		}
		if end, ok := ev.Data.(*session.SubagentEnd); ok {
			ended[end.Name] = true
		}
		if ev.Agent == "" {
			continue
		}
		if ended[ev.Agent] {
			t.Errorf("%s's %s came after its subagent.end", ev.Agent, ev.Data.EventType())
		}
		if ev.Session == f.a.Session() || ev.ParentRun == "" {
			t.Errorf("a child's event names session %s, parent run %q", ev.Session, ev.ParentRun)
		}
		depth[ev.Agent] = lin.Depth(ev)
		if _, ok := ev.Data.(*session.AssistantChunk); ok && ev.Seq == 0 {
			deltas[ev.Agent] = true
		}
	}
	if depth["helper"] != 1 || depth["grand"] != 2 {
		t.Errorf("depths = %v; want helper at 1, grand at 2", depth)
	}
	if !deltas["helper"] || !deltas["grand"] {
		t.Errorf("stream deltas seen of %v; want both children's", deltas)
	}
	if !ended["helper"] {
		t.Error("no subagent.end for the helper in the parent's stream")
	}
}

// Without it the stream is the parent's own.
func TestStreamWithoutChildrenIsTheParentsOwn(t *testing.T) {
	f := newFamily(t, nil,
		llmtest.CallTools(spawnCall("c1", `{"task":"task-A: say hi","label":"helper"}`)),
		llmtest.Reply("done"))
	f.rt.route("task-A", llmtest.Reply("hi"))
	defer f.close()
	for ev, err := range f.a.Stream(context.Background(), &agent.RunRequest{Prompt: "go"}) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if ev.Session != f.a.Session() {
			t.Errorf("the stream yielded %s of session %s", ev.Data.EventType(), ev.Session)
		}
	}
}

// A consumer that stops on a child's event ends the parent's run, child
// and all, with balanced logs.
func TestStreamBreakOnAChildsEventCancels(t *testing.T) {
	f := newFamily(t, nil,
		llmtest.CallTools(spawnCall("c1", `{"task":"task-A: wait","label":"helper"}`)),
		llmtest.Reply("done"))
	f.rt.route("task-A", llmtest.Reply("hi"))
	defer f.close()
	for ev, err := range f.a.Stream(context.Background(), &agent.RunRequest{Prompt: "go", Children: true}) {
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if ev.Agent == "helper" {
			break
		}
	}
	evs := readAll(t, f.store, f.a.Session())
	ends := ofType[*session.TurnEnd](evs)
	if len(ends) != 1 || ends[0].Cause != "stream-closed" {
		t.Errorf("the parent's turn ended %+v; want cancelled, stream-closed", ends)
	}
}
