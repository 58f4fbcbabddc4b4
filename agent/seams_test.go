package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// rebuildReplaced rebuilds, from the log alone, the request of each step
// a before-request hook replaced: the request in the decision's detail,
// with the history derived from the events before it when its messages
// were the derived ones.
func rebuildReplaced(t *testing.T, evs []session.Event) []*llm.Request {
	t.Helper()
	var out []*llm.Request
	for i, ev := range evs {
		d, ok := ev.Data.(*session.HookDecision)
		if !ok || d.Point != string(hook.PointRequest) || d.Decision != hook.DecisionReplace {
			continue
		}
		var rec agent.ReplacedRequest
		if err := json.Unmarshal(d.Detail, &rec); err != nil {
			t.Fatalf("detail of seq %d: %v", ev.Seq, err)
		}
		if rec.Derived {
			rec.Request.Messages = session.Derive(evs[:i])
		}
		h, ok := evs[i-1].Data.(*session.RequestHeader)
		if !ok || h.Reason != "replace" || h.Model != rec.Request.Model || len(h.Tools) != len(rec.Request.Tools) {
			t.Errorf("no matching request.header before the decision: %+v", evs[i-1].Data)
		}
		out = append(out, rec.Request)
	}
	return out
}

func TestReplacedRequestIsRebuiltFromTheLog(t *testing.T) {
	temp := 0.25
	hooks := new(hook.Set).Request("router", func(_ context.Context, in *hook.RequestInput) (hook.RequestDecision, error) {
		r := *in.Request
		r.Model, r.Temperature, r.MaxTokens = "cheap-model", &temp, 321
		if in.Step == 2 {
			// A rewritten conversation is recorded whole.
			r.Messages = append(slices.Clone(r.Messages), llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: "be brief"}}})
		}
		return &hook.ReplaceRequest{Request: &r}, nil
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Hooks: hooks, System: "Be careful."},
		llmtest.CallTool("c1", "echo", `{"text":"hi"}`), llmtest.Reply("done"))
	h.run("go")
	evs := h.events()
	sent := h.m.Requests()
	rebuilt := rebuildReplaced(t, evs)
	if len(rebuilt) != 2 || len(sent) != 2 {
		t.Fatalf("rebuilt %d requests, sent %d", len(rebuilt), len(sent))
	}
	for i := range sent {
		want, _ := json.Marshal(sent[i])
		got, _ := json.Marshal(rebuilt[i])
		if string(want) != string(got) {
			t.Errorf("request %d rebuilt from the log differs:\nsent    %s\nrebuilt %s", i+1, want, got)
		}
	}
	// One decision per replaced request, and the next step's header is
	// written again for the agent's own request.
	if n := len(ofType[*session.HookDecision](evs)); n != 2 {
		t.Errorf("%d hook.decision events, want 2", n)
	}
}

// traceModel records the order in which middleware sees a request.
type traceModel struct {
	mu    sync.Mutex
	trace []string
}

func (m *traceModel) wrap(name string) llm.Middleware {
	return func(next llm.Model) llm.Model {
		return llm.ModelFunc(func(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
			m.mu.Lock()
			m.trace = append(m.trace, name)
			m.mu.Unlock()
			return next.Stream(ctx, req)
		})
	}
}

func TestModelMiddlewareWrapsEveryRequestOutermostFirst(t *testing.T) {
	tm := &traceModel{}
	agentHooks := new(hook.Set).WrapModel(tm.wrap("agent-1")).WrapModel(tm.wrap("agent-2"))
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Hooks: agentHooks},
		llmtest.CallTool("c1", "echo", `{"text":"hi"}`), llmtest.Reply("done"))
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go", Hooks: new(hook.Set).WrapModel(tm.wrap("run"))})
	if err != nil || res.Text != "done" {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	want := []string{"agent-1", "agent-2", "run", "agent-1", "agent-2", "run"}
	if diff := cmp.Diff(want, tm.trace); diff != "" {
		t.Errorf("middleware order (-want +got):\n%s", diff)
	}
}

// closer is a tool holding a resource.
type closer struct {
	tool.Tool
	closed bool
}

func (c *closer) Close() error { c.closed = true; return nil }

func TestToolMiddlewareWrapsCallsAndDryRunToolsAreClosed(t *testing.T) {
	var seen []string
	mw := func(next tool.Tool) tool.Tool {
		return &wrapped{Tool: next, fn: func(c *tool.Call) { seen = append(seen, string(c.ID)) }}
	}
	c := &closer{Tool: echoTool()}
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{c}, DryRun: true, Hooks: new(hook.Set).WrapTool(mw)},
		llmtest.CallTool("c1", "echo", `{"text":"hi"}`), llmtest.Reply("done"))
	h.run("go")
	if diff := cmp.Diff([]string{"c1"}, seen); diff != "" {
		t.Errorf("middleware saw (-want +got):\n%s", diff)
	}
	if got := resultText(results(h.events())["c1"]); got != "hi" {
		t.Errorf("read-only tool under dry run = %q", got)
	}
	if err := h.a.Close(); err != nil {
		t.Fatal(err)
	}
	if !c.closed {
		t.Error("a tool that holds a resource was not closed under DryRun")
	}
}

type wrapped struct {
	tool.Tool
	fn func(*tool.Call)
}

func (w *wrapped) Unwrap() tool.Tool { return w.Tool }

func (w *wrapped) Call(ctx context.Context, c *tool.Call) (*tool.Result, error) {
	w.fn(c)
	return w.Tool.Call(ctx, c)
}

var _ io.Closer = (*closer)(nil)

func TestGateStopBlocksTheCallAndEndsTheTurn(t *testing.T) {
	hooks := new(hook.Set).ToolGate("halt", func(_ context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		return &hook.Stop{Reason: "out of scope"}, nil
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Hooks: hooks},
		llmtest.CallTools(call("c1", "echo", `{"text":"a"}`), call("c2", "echo", `{"text":"b"}`)), llmtest.Reply("never"))
	res := h.run("go")
	rs := results(h.events())
	if res.Reason != session.EndBlocked || h.m.Calls() != 1 {
		t.Fatalf("reason=%s calls=%d", res.Reason, h.m.Calls())
	}
	if got := resultText(rs["c1"]); got != "Blocked: out of scope; the turn was stopped" {
		t.Errorf("c1 = %q", got)
	}
	if got := resultText(rs["c2"]); got != "tool call aborted before dispatch" {
		t.Errorf("c2 = %q", got)
	}
}
