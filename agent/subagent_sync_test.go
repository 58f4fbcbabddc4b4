package agent_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func TestB62_ATopLevelSpawnOverTheCapWaitsForASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wait := newBlockTool("wait")
		f := newFamily(t, &agent.Options{Tools: []tool.Tool{wait.tool()}, Subagents: &agent.SubagentOptions{MaxConcurrent: 1}},
			llmtest.CallTools(spawnCall("c1", `{"task":"task-Q1","label":"q1"}`), spawnCall("c2", `{"task":"task-Q2","label":"q2"}`)),
			llmtest.Reply("both done"))
		f.rt.route("task-Q1", llmtest.CallTool("w1", "wait", `{}`), llmtest.Reply("q1 done"))
		f.rt.route("task-Q2", llmtest.CallTool("w2", "wait", `{}`), llmtest.Reply("q2 done"))
		done := f.start("go")
		<-wait.started
		synctest.Wait() // the other spawn waits for the slot
		if n := len(wait.started); n != 0 {
			t.Fatalf("%d more children started while the slot was taken", n)
		}
		close(wait.release)
		if res := <-done; res.Text != "both done" {
			t.Errorf("parent answered %q", res.Text)
		}
		evs := readAll(t, f.store, f.a.Session())
		queued := ofType[*session.SubagentQueued](evs)
		if len(queued) != 1 {
			t.Fatalf("want one subagent.queued, got\n%s", dump(evs))
		}
		var order []string
		for _, ev := range evs {
			switch p := ev.Data.(type) {
			case *session.SubagentStart:
				order = append(order, "start "+p.Name)
			case *session.SubagentEnd:
				order = append(order, "end "+p.Name)
			}
		}
		first := map[string]string{"q1": "q2", "q2": "q1"}[queued[0].Name]
		want := []string{"start " + first, "end " + first, "start " + queued[0].Name, "end " + queued[0].Name}
		if strings.Join(order, ",") != strings.Join(want, ",") {
			t.Errorf("order = %v; want %v", order, want)
		}
		f.close()
	})
}

func TestB62_ANestedSpawnOverTheCapIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wait := newBlockTool("wait")
		f := newFamily(t, &agent.Options{Tools: []tool.Tool{wait.tool()}, Subagents: &agent.SubagentOptions{MaxConcurrent: 1}},
			llmtest.CallTools(spawnCall("c1", `{"task":"task-N"}`)), llmtest.Reply("done"))
		n := f.rt.route("task-N",
			llmtest.CallTools(spawnCall("g1", `{"task":"task-G1"}`), spawnCall("g2", `{"task":"task-G2"}`)),
			llmtest.Reply("n done"))
		f.rt.route("task-G1", llmtest.CallTool("w1", "wait", `{}`), llmtest.Reply("g done"))
		f.rt.route("task-G2", llmtest.CallTool("w2", "wait", `{}`), llmtest.Reply("g done"))
		done := f.start("go")
		<-wait.started
		synctest.Wait()
		close(wait.release)
		<-done
		reqs := n.Requests()
		if len(reqs) != 2 {
			t.Fatalf("the child made %d requests; want 2", len(reqs))
		}
		text := resultsText(reqs[1].Messages)
		refused := strings.Count(text, "the most one subagent may run at once")
		answered := strings.Count(text, "g done")
		if refused != 1 || answered != 1 {
			t.Errorf("the child's spawn results: %q; want one refused, one answered", text)
		}
		f.close()
	})
}

func TestSubagentsInParallelTakeTheTimeOfOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFamily(t, nil,
			llmtest.CallTools(spawnCall("c1", `{"task":"task-P1"}`), spawnCall("c2", `{"task":"task-P2"}`), spawnCall("c3", `{"task":"task-P3"}`)),
			llmtest.Reply("all done"))
		for _, k := range []string{"task-P1", "task-P2", "task-P3"} {
			f.rt.route(k, llmtest.Reply(k+" done").WithDelay(time.Second))
		}
		began := time.Now()
		if res := <-f.start("go"); res.Text != "all done" || len(res.Children) != 3 {
			t.Fatalf("parent answered %q with %d children", res.Text, len(res.Children))
		}
		if took := time.Since(began); took < time.Second || took >= 2*time.Second {
			t.Errorf("three children of one second each took %s; want about one second", took)
		}
		f.close()
	})
}

func TestSubagentsNoGoroutineLeftAfterCloseWithChildrenRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wait := newBlockTool("wait")
		f := newFamily(t, &agent.Options{Tools: []tool.Tool{wait.tool()}},
			llmtest.CallTools(spawnCall("c1", `{"task":"task-L1"}`), spawnCall("c2", `{"task":"task-L2"}`)))
		f.rt.route("task-L1", llmtest.CallTool("w1", "wait", `{}`))
		f.rt.route("task-L2", llmtest.CallTool("w2", "wait", `{}`))
		done := f.start("go")
		<-wait.started
		<-wait.started
		f.close()
		if res := <-done; res.Reason != session.EndAborted || res.Cause != "close" {
			t.Errorf("parent ended %s (%s); want aborted (close)", res.Reason, res.Cause)
		}
		for _, c := range childEnds(t, f) {
			if c.Reason != session.EndAborted || c.Cause != "close" {
				t.Errorf("child %s ended %s (%s); want aborted (close)", c.Name, c.Reason, c.Cause)
			}
		}
		// synctest.Test fails if a goroutine of the bubble is still blocked.
	})
}

// childEnds returns the children the parent's log records as ended.
func childEnds(t *testing.T, f *family) []*session.SubagentEnd {
	return ofType[*session.SubagentEnd](readAll(t, f.store, f.a.Session()))
}
