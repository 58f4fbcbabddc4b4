package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// harness is one agent under test with its scripted model and store.
type harness struct {
	t      *testing.T
	a      *agent.Agent
	m      *llmtest.Model
	store  session.Store
	sleeps *sleepLog
	seeded bool // the store was seeded with a log that is not balanced
}

type sleepLog struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleepLog) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepLog) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// newHarness builds an agent over a MemStore with instant retries. opts
// may be nil; its Model, Store and Sleep are filled in when unset.
func newHarness(t *testing.T, opts *agent.Options, script ...llmtest.Entry) *harness {
	t.Helper()
	if opts == nil {
		opts = &agent.Options{}
	}
	h := &harness{t: t, m: llmtest.NewModel(script...), sleeps: &sleepLog{}}
	if opts.Model == nil {
		opts.Model = h.m
		if opts.Provider == "" {
			opts.Provider = llmtest.Provider
		}
		if opts.ModelName == "" {
			opts.ModelName = "scripted"
		}
	}
	if opts.Store == nil {
		opts.Store = session.NewMemStore()
	}
	if opts.Sleep == nil {
		opts.Sleep = h.sleeps.sleep
	}
	if opts.Jitter == nil {
		opts.Jitter = func() float64 { return 0.5 }
	}
	h.store = opts.Store
	a, err := agent.New(opts)
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	h.a = a
	// Every test's log must be balanced and paired once the agent closes.
	t.Cleanup(func() {
		a.Close()
		if h.seeded {
			return // the test checks the part the agent wrote
		}
		evs := readAll(t, h.store, a.Session())
		if err := session.Balanced(evs); err != nil {
			t.Errorf("log not balanced after the test: %v\n%s", err, dump(evs))
		}
	})
	return h
}

// run runs a prompt and fails the test on a Go error.
func (h *harness) run(prompt string) *agent.Result {
	h.t.Helper()
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: prompt})
	if err != nil {
		h.t.Fatalf("Run: %v", err)
	}
	return res
}

// events returns the whole session log and checks it is balanced.
func (h *harness) events() []session.Event {
	h.t.Helper()
	evs := readAll(h.t, h.store, h.a.Session())
	if err := session.Balanced(evs); err != nil {
		h.t.Fatalf("log not balanced: %v\n%s", err, dump(evs))
	}
	return evs
}

func readAll(t *testing.T, st session.Store, id session.ID) []session.Event {
	t.Helper()
	var evs []session.Event
	for ev, err := range st.Events(context.Background(), id, 0) {
		if err != nil {
			t.Fatalf("Events: %v", err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func types(evs []session.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, ev.Data.EventType())
	}
	return out
}

func dump(evs []session.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		data, _ := json.Marshal(ev.Data)
		fmt.Fprintf(&b, "%3d %-18s %s %s\n", ev.Seq, ev.Data.EventType(), ev.Turn, data)
	}
	return b.String()
}

// ofType returns the payloads of type P in order.
func ofType[P session.Payload](evs []session.Event) []P {
	var out []P
	for _, ev := range evs {
		if p, ok := ev.Data.(P); ok {
			out = append(out, p)
		}
	}
	return out
}

func lastEnd(t *testing.T, evs []session.Event) *session.TurnEnd {
	t.Helper()
	ends := ofType[*session.TurnEnd](evs)
	if len(ends) == 0 {
		t.Fatalf("no turn.end in\n%s", dump(evs))
	}
	return ends[len(ends)-1]
}

// partsText joins the text parts of ps.
func partsText(ps []llm.Part) string { return llm.Message{Parts: ps}.Text() }

func resultText(r *session.ToolResult) string { return partsText(r.Parts) }

// results returns the text of each tool.result, by call id.
func results(evs []session.Event) map[llm.CallID]*session.ToolResult {
	out := map[llm.CallID]*session.ToolResult{}
	for _, r := range ofType[*session.ToolResult](evs) {
		out[r.CallID] = r
	}
	return out
}

// lastUserText returns the text of the last user message of a request.
func requestTexts(req *llm.Request) []string {
	var out []string
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				out = append(out, string(m.Role)+": "+p.Text)
			case *llm.ToolResult:
				out = append(out, "result "+string(p.CallID)+": "+partsText(p.Parts))
			case *llm.ToolCall:
				out = append(out, "call "+string(p.ID)+" "+p.Name)
			}
		}
	}
	return out
}

func containsText(req *llm.Request, sub string) bool {
	for _, s := range requestTexts(req) {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// echoTool returns its "text" argument.
func echoTool() tool.Tool {
	return &tool.Func{
		ToolSpec: tool.Spec{Name: "echo", Description: "Echo text.", Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`), Annotations: &tool.Annotations{ReadOnly: true}},
		Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(call.Args, &in); err != nil {
				return nil, err
			}
			return tool.Text(in.Text), nil
		},
	}
}

// funcTool is a tool with an open schema running fn.
func funcTool(name string, fn func(ctx context.Context, call *tool.Call) (*tool.Result, error)) *tool.Func {
	return &tool.Func{ToolSpec: tool.Spec{Name: name, Description: name, Schema: json.RawMessage(`{"type":"object"}`)}, Fn: fn}
}

// gateTool blocks until released or its context is done.
type gateTool struct {
	name    string
	started chan llm.CallID
	release chan struct{}
	ignore  bool // ignore cancellation
	set     bool // stage a write of the tool's state first
}

func newGateTool(name string) *gateTool {
	return &gateTool{name: name, started: make(chan llm.CallID, 16), release: make(chan struct{})}
}

func (g *gateTool) Spec() tool.Spec {
	return tool.Spec{Name: g.name, Schema: json.RawMessage(`{"type":"object"}`)}
}

func (g *gateTool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	if g.set {
		call.State.Set("seen", string(call.ID))
	}
	g.started <- call.ID
	if g.ignore {
		<-g.release
		return tool.Text("done anyway"), nil
	}
	select {
	case <-g.release:
		return tool.Text(g.name + " done"), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func waitStarted(t *testing.T, ch chan llm.CallID) llm.CallID {
	t.Helper()
	select {
	case id := <-ch:
		return id
	case <-time.After(5 * time.Second):
		t.Fatal("tool never started")
	}
	return ""
}

// checkNoLeak fails when goroutines started after before are still alive
// once they have had a few seconds to wind down.
func checkNoLeak(t *testing.T, before int) {
	t.Helper()
	if testwait.For(3*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		return
	}
	buf := make([]byte, 1<<16)
	buf = buf[:runtime.Stack(buf, true)]
	t.Fatalf("%d goroutines left (had %d):\n%s", runtime.NumGoroutine(), before, buf)
}

var errBoom = errors.New("boom")

func call(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: llm.CallID(id), Name: name, Args: json.RawMessage(args)}
}

func numGoroutines() int { return runtime.NumGoroutine() }

func newObserverSet() *hook.Set {
	return new(hook.Set).Observe("noop", "*", func(session.Event) {})
}
