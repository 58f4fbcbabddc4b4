package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
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

// trace records hook and tool activity in order.
type trace struct {
	mu  sync.Mutex
	log []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.log = append(tr.log, s)
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.log)
}

// tracingHooks records every point a call passes.
func tracingHooks(tr *trace) *hook.Set {
	return new(hook.Set).
		ToolGate("t", traced[*hook.ToolInput, hook.GateDecision](tr, "gate")).
		PreToolUse("t", traced[*hook.ToolInput, hook.GateDecision](tr, "pre-tool-use")).
		Approval("t", traced[*hook.ToolInput, hook.ApprovalDecision](tr, "approval")).
		ToolError("t", traced[*hook.ToolErrorInput, hook.SubstituteDecision](tr, "tool-error")).
		ToolResult("t", traced[*hook.ToolResultInput, hook.ResultDecision](tr, "tool-result")).
		PostTool("t", func(_ context.Context, in *hook.PostToolInput) error {
			tr.add("post failed=" + boolStr(in.Failed) + " " + in.ErrorType)
			return nil
		}).
		Dispatched("t", func(_ context.Context, in *hook.DispatchedInput) error {
			tr.add("dispatched " + in.Outcome)
			return nil
		})
}

// traced is a handler that records point and decides nothing.
func traced[In any, D any](tr *trace, point string) func(context.Context, In) (D, error) {
	return func(context.Context, In) (D, error) {
		tr.add(point)
		var none D
		return none, nil
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestB08_PipelineOrder(t *testing.T) {
	tr := &trace{}
	failing := funcTool("fail", func(ctx context.Context, c *tool.Call) (*tool.Result, error) {
		tr.add("execute")
		return nil, errBoom
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{failing}, Hooks: tracingHooks(tr)},
		llmtest.CallTool("c1", "fail", `{}`), llmtest.Reply("ok"))
	h.run("go")
	h.events()
	want := []string{"gate", "pre-tool-use", "approval", "execute", "tool-error", "tool-result", "post failed=true error", "dispatched execute"}
	if diff := cmp.Diff(want, tr.get()); diff != "" {
		t.Errorf("pipeline (-want +got):\n%s", diff)
	}
}

func denyGate(reason string) *hook.Set {
	return new(hook.Set).ToolGate("deny", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
		return &hook.Deny{Reason: reason}, nil
	})
}

func TestB09_GateDenyText(t *testing.T) {
	for _, tt := range []struct{ reason, want string }{
		{"not today", "Blocked: not today"},
		{"", "Blocked: Tool execution was blocked"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			ran := false
			tl := funcTool("t", func(context.Context, *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("x"), nil })
			h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}, Hooks: denyGate(tt.reason)}, llmtest.CallTool("c1", "t", `{}`), llmtest.Reply("ok"))
			h.run("go")
			evs := h.events()
			r := results(evs)["c1"]
			if got := resultText(r); got != tt.want || !r.IsError || r.Outcome != session.OutcomeGateBlock {
				t.Errorf("result = %q error=%v outcome=%s, want %q", got, r.IsError, r.Outcome, tt.want)
			}
			if ran {
				t.Error("the body ran")
			}
			if n := len(ofType[*session.ToolCall](evs)); n != 0 {
				t.Errorf("%d tool.call events for a call that never started", n)
			}
		})
	}
}

func TestB09_DenyEmitsNoFailureEvent(t *testing.T) {
	tr := &trace{}
	hs := tracingHooks(tr)
	hs.ToolGate("deny", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) { return &hook.Deny{}, nil })
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Hooks: hs}, llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("ok"))
	h.run("go")
	h.events()
	want := []string{"gate", "dispatched gate-block"}
	if diff := cmp.Diff(want, tr.get()); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
}

func TestB10_GateSubstituteStillTransformedAndPosted(t *testing.T) {
	tr := &trace{}
	hs := new(hook.Set).
		ToolGate("sub", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
			return &hook.Substitute{Result: tool.Text("cached")}, nil
		}).
		ToolResult("upper", func(_ context.Context, in *hook.ToolResultInput) (hook.ResultDecision, error) {
			tr.add("transform " + in.Outcome)
			return &hook.RewriteResult{Result: tool.Text(strings.ToUpper(textOfResult(in.Result)))}, nil
		}).
		PostTool("post", func(_ context.Context, in *hook.PostToolInput) error { tr.add("post"); return nil })
	ran := false
	tl := funcTool("t", func(context.Context, *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("x"), nil })
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}, Hooks: hs}, llmtest.CallTool("c1", "t", `{}`), llmtest.Reply("ok"))
	h.run("go")
	r := results(h.events())["c1"]
	if got := resultText(r); got != "CACHED" || r.Outcome != session.OutcomeSubstitute {
		t.Errorf("result = %q (%s), want CACHED substitute", got, r.Outcome)
	}
	if ran {
		t.Error("the body ran")
	}
	if diff := cmp.Diff([]string{"transform substitute", "post"}, tr.get()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func textOfResult(r *tool.Result) string { return partsText(r.Parts) }

func TestB10_DenyWinsOverSubstitute(t *testing.T) {
	hs := new(hook.Set).
		ToolGate("sub", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
			return &hook.Substitute{Result: tool.Text("cached")}, nil
		}).
		ToolGate("deny", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
			return &hook.Deny{Reason: "no"}, nil
		})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Hooks: hs}, llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("ok"))
	h.run("go")
	if got := resultText(results(h.events())["c1"]); got != "Blocked: no" {
		t.Errorf("result = %q, want Blocked: no", got)
	}
}

func TestB11_UnknownTool(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}}, llmtest.CallTool("c1", "mcp__github__create_issue", `{}`), llmtest.Reply("ok"))
	res := h.run("go")
	r := results(h.events())["c1"]
	if got := resultText(r); got != "Unknown tool: mcp__github__create_issue" || !r.IsError || r.Outcome != session.OutcomeUnknown {
		t.Errorf("result = %q error=%v outcome=%s", got, r.IsError, r.Outcome)
	}
	if res.Reason != session.EndCompleted {
		t.Errorf("turn ended %s; the model should get to correct itself", res.Reason)
	}
}

func TestB11_UnknownToolSubstitutable(t *testing.T) {
	hs := new(hook.Set).UnknownTool("alias", func(_ context.Context, in *hook.UnknownToolInput) (hook.SubstituteDecision, error) {
		return &hook.Substitute{Result: tool.Text("use echo instead of " + in.Call.Name)}, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs}, llmtest.CallTool("c1", "ekko", `{}`), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	if got := resultText(results(evs)["c1"]); got != "use echo instead of ekko" {
		t.Errorf("result = %q", got)
	}
	if len(ofType[*session.HookDecision](evs)) != 1 {
		t.Errorf("want one hook.decision for the substitute\n%s", dump(evs))
	}
}

func TestB12_InvalidArgumentsLetTheModelCorrect(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"malformed JSON", `{"text": "unterminated`, "Validation error: "},
		{"missing property", `{}`, "Validation error: "},
		{"wrong type", `{"text": {"a": 1}}`, "Validation error: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}},
				llmtest.MalformedCall("c1", "echo", tt.args),
				llmtest.CallTool("c2", "echo", `{"text":"fixed"}`),
				llmtest.Reply("ok"))
			res := h.run("go")
			evs := h.events()
			r := results(evs)["c1"]
			if !strings.HasPrefix(resultText(r), tt.want) || r.Outcome != session.OutcomeInvalidInput || !r.IsError {
				t.Errorf("result = %q outcome=%s", resultText(r), r.Outcome)
			}
			if resultText(results(evs)["c2"]) != "fixed" || res.Reason != session.EndCompleted {
				t.Errorf("the corrected call did not run: %s", dump(evs))
			}
		})
	}
}

func TestB12_EmptyArgumentsMeanEmptyObject(t *testing.T) {
	var got json.RawMessage
	tl := funcTool("t", func(_ context.Context, c *tool.Call) (*tool.Result, error) { got = c.Args; return tool.Text("ok"), nil })
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}}, llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "t"}), llmtest.Reply("ok"))
	h.run("go")
	h.events()
	if string(got) != "{}" {
		t.Errorf("args = %q, want {}", got)
	}
}

func TestB13_CoercionsRunAndAreRecorded(t *testing.T) {
	var got struct {
		N    int      `json:"n"`
		On   bool     `json:"on"`
		Tags []string `json:"tags"`
	}
	tl := &tool.Func{
		ToolSpec: tool.Spec{Name: "t", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"on":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}}}}`)},
		Fn: func(_ context.Context, c *tool.Call) (*tool.Result, error) {
			return tool.Text("ok"), json.Unmarshal(c.Args, &got)
		},
	}
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}}, llmtest.CallTool("c1", "t", `{"n":"5","on":"true","tags":"x"}`), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	if got.N != 5 || !got.On || len(got.Tags) != 1 {
		t.Errorf("tool got %+v", got)
	}
	calls := ofType[*session.ToolCall](evs)
	if len(calls) != 1 || len(calls[0].Coerced) != 3 {
		t.Fatalf("coercions not recorded: %+v", calls)
	}
}

func TestB14_EditRevalidatedAndRejected(t *testing.T) {
	ran := false
	hs := new(hook.Set).PreToolUse("break", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
		return &hook.EditArgs{Args: json.RawMessage(`{"text": {"nested": true}}`)}, nil
	})
	e := echoTool().(*tool.Func)
	fn := e.Fn
	e.Fn = func(ctx context.Context, c *tool.Call) (*tool.Result, error) { ran = true; return fn(ctx, c) }
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{e}, Hooks: hs}, llmtest.CallTool("c1", "echo", `{"text":"ok"}`), llmtest.Reply("ok"))
	h.run("go")
	r := results(h.events())["c1"]
	if ran || r.Outcome != session.OutcomeInvalidInput || !strings.HasPrefix(resultText(r), "Validation error") {
		t.Errorf("ran=%v result=%q (%s)", ran, resultText(r), r.Outcome)
	}
}

func TestB14_GateEditIsValidatedToo(t *testing.T) {
	hs := new(hook.Set).ToolGate("edit", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
		return &hook.EditArgs{Args: json.RawMessage(`{"text":"edited"}`)}, nil
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Hooks: hs}, llmtest.CallTool("c1", "echo", `{"text":"orig"}`), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	if got := resultText(results(evs)["c1"]); got != "edited" {
		t.Errorf("result = %q, want edited", got)
	}
	if c := ofType[*session.ToolCall](evs)[0]; string(c.Args) != `{"text":"edited"}` {
		t.Errorf("tool.call args = %s; the log must show what ran", c.Args)
	}
}

func TestB15_ToolErrorAndPanic(t *testing.T) {
	tests := []struct {
		name string
		fn   func(context.Context, *tool.Call) (*tool.Result, error)
		want string
		code string
	}{
		{"error", func(context.Context, *tool.Call) (*tool.Result, error) { return nil, errBoom }, "Tool error: boom", agent.CodeToolError},
		{"panic", func(context.Context, *tool.Call) (*tool.Result, error) { panic("kaput") }, "Tool error: panic: kaput", agent.CodeToolPanic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &agent.Options{Tools: []tool.Tool{funcTool("t", tt.fn)}}, llmtest.CallTool("c1", "t", `{}`), llmtest.Reply("recovered"))
			res := h.run("go")
			r := results(h.events())["c1"]
			if resultText(r) != tt.want || r.Code != tt.code || !r.IsError {
				t.Errorf("result = %q code=%s", resultText(r), r.Code)
			}
			if res.Text != "recovered" {
				t.Errorf("the run did not continue: %q", res.Text)
			}
		})
	}
}

func TestB15_ToolErrorSubstitutable(t *testing.T) {
	hs := new(hook.Set).ToolError("friendly", func(_ context.Context, in *hook.ToolErrorInput) (hook.SubstituteDecision, error) {
		return &hook.Substitute{Result: tool.Errorf("the disk is busy, try later (%v)", in.Err)}, nil
	})
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: []tool.Tool{funcTool("t", func(context.Context, *tool.Call) (*tool.Result, error) { return nil, errBoom })}},
		llmtest.CallTool("c1", "t", `{}`), llmtest.Reply("ok"))
	h.run("go")
	if got := resultText(results(h.events())["c1"]); got != "the disk is busy, try later (boom)" {
		t.Errorf("result = %q", got)
	}
}

func TestB16_ExactlyOnePostEventPerExecutedCall(t *testing.T) {
	var mu sync.Mutex
	posts := map[llm.CallID]int{}
	hs := new(hook.Set).PostTool("count", func(_ context.Context, in *hook.PostToolInput) error {
		mu.Lock()
		posts[in.Call.ID]++
		mu.Unlock()
		return nil
	})
	tools := []tool.Tool{echoTool(), funcTool("bad", func(context.Context, *tool.Call) (*tool.Result, error) { return nil, errBoom }),
		funcTool("crash", func(context.Context, *tool.Call) (*tool.Result, error) { panic("x") })}
	h := newHarness(t, &agent.Options{Hooks: hs, Tools: tools},
		llmtest.CallTools(call("a", "echo", `{"text":"1"}`), call("b", "bad", `{}`), call("c", "crash", `{}`), call("d", "nope", `{}`), call("e", "echo", `{}`)),
		llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	want := map[llm.CallID]int{"a": 1, "b": 1, "c": 1}
	if diff := cmp.Diff(want, posts); diff != "" {
		t.Errorf("post events (-want +got):\n%s", diff)
	}
	if n := len(ofType[*session.ToolResult](evs)); n != 5 {
		t.Errorf("%d results for 5 calls", n)
	}
}

func TestB17_OutputOverBudgetIsSpilled(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("line of output\n", 200)
	tl := funcTool("t", func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text(big), nil })
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}, SpillDir: dir, Limits: agent.Limits{StepOutputBytes: 500}},
		llmtest.CallTool("c1", "t", `{}`), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	text := resultText(results(evs)["c1"])
	if len(text) >= len(big) || !strings.Contains(text, dir) || !strings.Contains(text, "summarise") {
		t.Fatalf("result not spilled: %q", text[:min(len(text), 300)])
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("spill files = %d, want 1", len(files))
	}
	data, _ := os.ReadFile(dir + "/" + files[0].Name())
	if string(data) != big {
		t.Errorf("spilled file holds %d bytes, want %d", len(data), len(big))
	}
	guards := agent.Summarize(evs).Guards
	if len(guards) != 1 || guards[0].Decision != "spill" {
		t.Errorf("spill not recorded: %+v", guards)
	}
}

func TestB11_AliasResolvesThroughToolSet(t *testing.T) {
	set, err := tool.NewSet(echoTool())
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Alias("mcp__util__echo", "echo"); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &agent.Options{ToolSet: set}, llmtest.CallTool("c1", "mcp__util__echo", `{"text":"aliased"}`), llmtest.Reply("ok"))
	h.run("go")
	if got := resultText(results(h.events())["c1"]); got != "aliased" {
		t.Errorf("result = %q", got)
	}
	if names := h.m.Requests()[0].Tools; len(names) != 1 || names[0].Name != "echo" {
		t.Errorf("offered tools = %+v", names)
	}
}

func TestToolStateCommittedOnSuccessOnly(t *testing.T) {
	states := tool.NewMemStateStore()
	counter := funcTool("count", func(_ context.Context, c *tool.Call) (*tool.Result, error) {
		n, _ := c.State.Get("n")
		c.State.Set("n", n+"I")
		if strings.Contains(string(c.Args), "fail") {
			return nil, errBoom
		}
		return tool.Text(n + "I"), nil
	})
	h := newHarness(t, &agent.Options{State: states, Tools: []tool.Tool{counter}},
		llmtest.CallTool("c1", "count", `{}`), llmtest.CallTool("c2", "count", `{"x":"fail"}`), llmtest.CallTool("c3", "count", `{}`), llmtest.Reply("ok"))
	h.run("go")
	rs := results(h.events())
	if resultText(rs["c1"]) != "I" || resultText(rs["c3"]) != "II" {
		t.Errorf("c1=%q c3=%q; the failed call's write must be discarded", resultText(rs["c1"]), resultText(rs["c3"]))
	}
	got, _ := states.Load(context.Background(), string(h.a.Session()), "count")
	if got["n"] != "II" {
		t.Errorf("stored state = %v", got)
	}
}

func TestProgressReachesTheHost(t *testing.T) {
	var mu sync.Mutex
	var got []string
	tl := funcTool("long", func(_ context.Context, c *tool.Call) (*tool.Result, error) {
		c.Progress(tool.Progress{Message: "half", Done: 0.5})
		return tool.Text("ok"), nil
	})
	// Progress reaches hosts as transient events on the bus.
	hooks := new(hook.Set).Observe("progress", session.TypeToolProgress, func(ev session.Event) {
		p := ev.Data.(*session.ToolProgress)
		mu.Lock()
		got = append(got, string(p.CallID)+" "+p.Message)
		mu.Unlock()
	})
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}, Hooks: hooks}, llmtest.CallTool("c1", "long", `{}`), llmtest.Reply("ok"))
	h.run("go")
	h.a.Close() // every event has reached the observer
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"c1 half"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestHookAskReachesTheApproverAsAsked: a call an approval handler
// answered Ask reaches the approver flagged HookAsked, so a policy that
// allows by default still puts it to someone — here no one, so it is
// refused — while a call no handler asked about is allowed.
func TestHookAskReachesTheApproverAsAsked(t *testing.T) {
	hs := new(hook.Set).Approval("guard", func(_ context.Context, in *hook.ToolInput) (hook.ApprovalDecision, error) {
		if strings.Contains(string(in.Call.Args), "push") {
			return &hook.Ask{Reason: "pushing needs a person"}, nil
		}
		return nil, nil
	})
	var flagged []bool
	policy := tool.NewPolicy(&tool.PolicyOptions{Default: tool.Allow})
	ap := approver(func(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
		flagged = append(flagged, req.HookAsked)
		return policy.Approve(ctx, req)
	})
	h := newHarness(t, &agent.Options{Hooks: hs, Approver: ap, Tools: []tool.Tool{echoTool()}},
		llmtest.CallTools(call("c1", "echo", `{"text":"push"}`), call("c2", "echo", `{"text":"fine"}`)), llmtest.Reply("ok"))
	h.run("go")
	rs := results(h.events())
	if got := resultText(rs["c1"]); !strings.Contains(got, "pushing needs a person") || !strings.Contains(got, "no approver") {
		t.Errorf("asked call = %q, want a refusal naming the hook's reason", got)
	}
	if got := resultText(rs["c2"]); got != "fine" {
		t.Errorf("call no hook asked about = %q, want it run", got)
	}
	// echo is read-only: only the call the hook asked about reaches the
	// approver.
	if diff := cmp.Diff([]bool{true}, flagged); diff != "" {
		t.Errorf("HookAsked of the approver's requests (-want +got):\n%s", diff)
	}
}
