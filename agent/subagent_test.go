package agent_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/agentdef"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func TestB60_ChildRunsInItsOwnSessionLinkedFromTheParentsLog(t *testing.T) {
	var lin agent.Lineage
	depths := map[session.ID]int{}
	seen := make(chan struct{}, 1024)
	hs := (&hook.Set{}).Observe("depth", "", func(ev session.Event) {
		depths[ev.Session] = max(depths[ev.Session], lin.Depth(ev))
		seen <- struct{}{}
	})
	f := newFamily(t, &agent.Options{Hooks: hs},
		llmtest.CallTools(spawnCall("c1", `{"task":"task-A: say hi","label":"helper"}`)),
		llmtest.Reply("the helper said hi"))
	f.rt.route("task-A", llmtest.Reply("hi from the child"))
	res, err := f.a.Run(context.Background(), &agent.RunRequest{Prompt: "ask a helper"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	evs := readAll(t, f.store, f.a.Session())
	starts, ends := ofType[*session.SubagentStart](evs), ofType[*session.SubagentEnd](evs)
	if len(starts) != 1 || len(ends) != 1 {
		t.Fatalf("want one subagent.start and one subagent.end, got\n%s", dump(evs))
	}
	st, end := starts[0], ends[0]
	if st.ChildSession == "" || st.ChildSession == f.a.Session() || st.Name != "helper" || st.Depth != 1 || st.CallID != "c1" {
		t.Errorf("subagent.start = %+v", st)
	}
	want := &session.SubagentEnd{ChildSession: st.ChildSession, ChildRun: st.ChildRun, Name: "helper", Depth: 1, CallID: "c1",
		Reason: session.EndCompleted, Answer: "hi from the child", Steps: 1, Usage: llmtest.DefaultUsage,
		ByModel: map[string]session.SubagentUsage{"scripted": {Steps: 1, Usage: llmtest.DefaultUsage}}}
	if d := cmp.Diff(want, end); d != "" {
		t.Errorf("subagent.end (-want +got):\n%s", d)
	}
	child := readAll(t, f.store, st.ChildSession)
	for _, ev := range child {
		if ev.ParentRun != res.Run || ev.Agent != "helper" || ev.Run != st.ChildRun {
			t.Fatalf("child event %d %s has run %q parent_run %q agent %q; want run %q parent_run %q agent helper",
				ev.Seq, ev.Data.EventType(), ev.Run, ev.ParentRun, ev.Agent, st.ChildRun, res.Run)
		}
	}
	info, err := f.store.Info(context.Background(), st.ChildSession)
	if err != nil || info.Parent != f.a.Session() {
		t.Errorf("child session info = %+v, %v; want parent %s", info, err, f.a.Session())
	}
	reqs := f.rt.parent.Requests()
	if got := reqs[len(reqs)-1].Messages; !strings.Contains(lastToolResult(got), "hi from the child") {
		t.Errorf("the parent's next request does not carry the child's answer: %q", lastToolResult(got))
	}
	f.close() // waits for the observers
	for range len(evs) + len(child) {
		<-seen
	}
	if depths[st.ChildSession] != 1 || depths[f.a.Session()] != 0 {
		t.Errorf("observed depths = %v; want the child at 1, the parent at 0", depths)
	}
}

func lastToolResult(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if t := resultsText(msgs[i : i+1]); t != "" {
			return t
		}
	}
	return ""
}

// resultsText is the text of the tool results in msgs.
func resultsText(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Parts {
			if tr, ok := p.(*llm.ToolResult); ok {
				b.WriteString(userText([]llm.Message{{Role: llm.RoleUser, Parts: tr.Parts}}))
			}
		}
	}
	return b.String()
}

func TestB61_ForkSeesExactlyTheParentsBalancedPrefix(t *testing.T) {
	f := newFamily(t, &agent.Options{System: "You are the parent."},
		llmtest.Reply("noted"),
		llmtest.CallTools(spawnCall("c1", `{"task":"task-F: continue","fork":true}`)),
		llmtest.Reply("fork done"))
	fork := f.rt.route("task-F", llmtest.Reply("forked answer"))
	ctx := context.Background()
	if _, err := f.a.Run(ctx, &agent.RunRequest{Prompt: "remember 42"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := f.a.Run(ctx, &agent.RunRequest{Prompt: "now fork"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	parentReq := f.rt.parent.Requests()[1] // the spawning step's request
	childReq := fork.Requests()[0]
	// Consecutive user messages are sent as one: the fork's task joins
	// the parent's last prompt.
	n := len(parentReq.Messages)
	if len(childReq.Messages) != n {
		t.Fatalf("the fork's request has %d messages; want the parent's %d\nparent: %s\nfork: %s", len(childReq.Messages), n, userText(parentReq.Messages), userText(childReq.Messages))
	}
	if d := cmp.Diff(parentReq.Messages[:n-1], childReq.Messages[:n-1]); d != "" {
		t.Errorf("the fork's history is not the parent's prefix (-parent +fork):\n%s", d)
	}
	last, joined := parentReq.Messages[n-1], childReq.Messages[n-1]
	if d := cmp.Diff(last.Parts, joined.Parts[:len(last.Parts)]); d != "" {
		t.Errorf("the fork's last message does not start with the parent's (-parent +fork):\n%s", d)
	}
	if got := userText(childReq.Messages[n-1:]); !strings.HasSuffix(got, "task-F: continue\n") {
		t.Errorf("the fork's task is not after the prefix: %q", got)
	}
	for _, m := range childReq.Messages {
		for _, p := range m.Parts {
			if _, ok := p.(*llm.ToolCall); ok {
				t.Errorf("the fork sees a tool call: %+v", p)
			}
		}
	}
	if d := cmp.Diff(parentReq.System, childReq.System); d != "" {
		t.Errorf("the fork's system prompt differs (-parent +fork):\n%s", d)
	}
	st := ofType[*session.SubagentStart](readAll(t, f.store, f.a.Session()))
	if len(st) != 1 || !st[0].Fork || st[0].ForkSeq == 0 {
		t.Errorf("subagent.start = %+v; want a fork with its seq", st)
	}
	f.close()
}

func TestB62_PastTheDepthLimitASpawnIsRefused(t *testing.T) {
	// A fork keeps the parent's tools, the spawn tool too: its spawn is
	// refused with a result that says why.
	f := newFamily(t, &agent.Options{Subagents: &agent.SubagentOptions{MaxDepth: 1}},
		llmtest.CallTools(spawnCall("c1", `{"task":"task-D: go deeper","fork":true}`), spawnCall("c2", `{"task":"task-E: fresh"}`)),
		llmtest.Reply("done"))
	d := f.rt.route("task-D",
		llmtest.CallTools(spawnCall("g1", `{"task":"task-G: deepest"}`)),
		llmtest.Reply("could not go deeper"))
	e := f.rt.route("task-E", llmtest.Reply("fresh done"))
	if _, err := f.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := lastToolResult(d.Requests()[1].Messages)
	if !strings.Contains(got, "depth limit is 1") {
		t.Errorf("the child's spawn result = %q; want it to name the depth limit", got)
	}
	// A fresh child at the limit is not offered the spawn tool at all.
	for _, ts := range e.Requests()[0].Tools {
		if ts.Name == agent.SpawnToolName {
			t.Errorf("a child at the depth limit is offered %s", ts.Name)
		}
	}
	f.close()
}

func TestB63_CancellingTheParentCancelsTheChildWithTheSameCause(t *testing.T) {
	wait := newBlockTool("wait")
	f := newFamily(t, &agent.Options{Tools: []tool.Tool{wait.tool()}},
		llmtest.CallTools(spawnCall("c1", `{"task":"task-C: wait"}`)))
	f.rt.route("task-C", llmtest.CallTool("w1", "wait", `{}`))
	done := f.start("go")
	<-wait.started
	f.a.Cancel("user")
	res := <-done
	if res.Reason != session.EndAborted || res.Cause != "user" {
		t.Errorf("parent ended %s (%s); want aborted (user)", res.Reason, res.Cause)
	}
	ends := ofType[*session.SubagentEnd](readAll(t, f.store, f.a.Session()))
	if len(ends) != 1 || ends[0].Reason != session.EndAborted || ends[0].Cause != "user" {
		t.Fatalf("subagent.end = %+v; want aborted (user)", ends)
	}
	te := ofType[*session.TurnEnd](readAll(t, f.store, ends[0].ChildSession))
	if len(te) != 1 || te[0].Cause != "user" {
		t.Errorf("child turn.end = %+v; want aborted (user)", te)
	}
	f.close()
}

func TestB63_CancellingTheSpawnCallCancelsThatChildOnly(t *testing.T) {
	wait := newBlockTool("wait")
	f := newFamily(t, &agent.Options{Tools: []tool.Tool{wait.tool()}},
		llmtest.CallTools(spawnCall("c1", `{"task":"task-C: wait"}`)),
		llmtest.Reply("went on without it"))
	f.rt.route("task-C", llmtest.CallTool("w1", "wait", `{}`))
	done := f.start("go")
	<-wait.started
	if err := f.a.CancelTool("c1", "not needed"); err != nil {
		t.Fatalf("CancelTool: %v", err)
	}
	res := <-done
	if res.Reason != session.EndCompleted || res.Text != "went on without it" {
		t.Errorf("parent ended %s %q; want completed", res.Reason, res.Text)
	}
	ends := ofType[*session.SubagentEnd](readAll(t, f.store, f.a.Session()))
	if len(ends) != 1 || ends[0].Reason != session.EndAborted || ends[0].Cause != agent.CauseCallCancelled {
		t.Errorf("subagent.end = %+v; want aborted (%s)", ends, agent.CauseCallCancelled)
	}
	f.close()
}

// danger is a tool the tests count the runs of.
func danger(runs *int) tool.Tool {
	return &tool.Func{ToolSpec: tool.Spec{Name: "danger", Description: "does harm", Schema: []byte(`{"type":"object"}`)},
		Fn: func(context.Context, *tool.Call) (*tool.Result, error) { *runs++; return tool.Text("harm done"), nil }}
}

func denyDanger(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
	if in.Call.Name == "danger" {
		return &hook.Deny{Reason: "danger is not allowed"}, nil
	}
	return nil, nil
}

func TestB64_TheParentsEnforcementDecidesTheChildsCalls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     func(*agent.Options)
		wantRuns int
		wantCode string
	}{
		{"enforced gate", func(o *agent.Options) { o.Enforce = (&hook.Set{}).ToolGate("no-danger", denyDanger) }, 0, agent.CodeBlocked},
		{"enforced pre-tool-use", func(o *agent.Options) { o.Enforce = (&hook.Set{}).PreToolUse("no-danger", denyDanger) }, 0, agent.CodeBlocked},
		{"approver", func(o *agent.Options) {
			o.Approver = tool.ApproverFunc(func(_ context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
				if req.Tool != "danger" {
					return tool.Approval{Verdict: tool.Allow}, nil
				}
				return tool.Approval{Verdict: tool.Deny, Reason: "no"}, nil
			})
		}, 0, agent.CodeApprovalDenied},
		{"the parent's own hooks stay its own", func(o *agent.Options) { o.Hooks = (&hook.Set{}).ToolGate("local", denyDanger) }, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			opts := &agent.Options{Tools: []tool.Tool{danger(&runs)}}
			tc.opts(opts)
			f := newFamily(t, opts,
				llmtest.CallTools(spawnCall("c1", `{"task":"task-X: do harm"}`)),
				llmtest.Reply("done"))
			f.rt.route("task-X", llmtest.CallTool("d1", "danger", `{}`), llmtest.Reply("tried"))
			if _, err := f.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
				t.Fatalf("Run: %v", err)
			}
			sid := ofType[*session.SubagentStart](readAll(t, f.store, f.a.Session()))[0].ChildSession
			results := ofType[*session.ToolResult](readAll(t, f.store, sid))
			if runs != tc.wantRuns || len(results) != 1 || results[0].Code != tc.wantCode {
				t.Errorf("danger ran %d times, child results %+v; want %d runs, code %q", runs, results, tc.wantRuns, tc.wantCode)
			}
			f.close()
		})
	}
}

func TestB65_TheParentsSummaryCountsEachChildByModel(t *testing.T) {
	price := func(model string, u llm.Usage) float64 {
		return float64(u.Total()) * map[string]float64{"scripted": 0.001, "small": 0.0001}[model]
	}
	small := llmtest.NewModel(llmtest.Reply("cheap answer"))
	defs := []agentdef.Definition{{Name: "cheap", Description: "a small model", Model: "small"}}
	spawn := agent.SpawnTool(&agent.SpawnToolOptions{Definitions: defs, Models: func(name string) (*agent.Target, error) {
		if name != "small" {
			return nil, errors.New("unknown model")
		}
		return &agent.Target{Provider: llmtest.Provider, Model: "small", Client: small}, nil
	}})
	store := session.NewMemStore()
	parent := llmtest.NewModel(llmtest.CallTools(spawnCall("c1", `{"task":"summarise","agent":"cheap"}`)), llmtest.Reply("done"))
	a, err := agent.New(&agent.Options{Model: parent, Provider: llmtest.Provider, ModelName: "scripted", Store: store, Tools: []tool.Tool{spawn}, Cost: price})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	u := llmtest.DefaultUsage
	two := u
	two.Add(u)
	want := agent.Totals{Usage: func() llm.Usage { x := two; x.Add(u); return x }(), Cost: price("scripted", two) + price("small", u),
		ByModel: map[string]agent.ModelUsage{"scripted": {Steps: 2, Usage: two, Cost: price("scripted", two)}, "small": {Steps: 1, Usage: u, Cost: price("small", u)}}}
	if d := cmp.Diff(want, res.Total); d != "" {
		t.Errorf("Result.Total (-want +got):\n%s", d)
	}
	if len(res.Children) != 1 || res.Children[0].Name != "cheap" || res.Children[0].ByModel["small"].Steps != 1 {
		t.Errorf("Result.Children = %+v", res.Children)
	}
	fromLog := agent.SummarizeCost(readAll(t, store, a.Session()), price)
	if d := cmp.Diff(res.Total, fromLog.Total); d != "" {
		t.Errorf("the summary from the log alone differs from the live result (-live +log):\n%s", d)
	}
	if d := cmp.Diff(res.Children, fromLog.Children); d != "" {
		t.Errorf("children from the log (-live +log):\n%s", d)
	}
	childLog := agent.SummarizeCost(readAll(t, store, res.Children[0].Session), price)
	if d := cmp.Diff(res.Children[0].ByModel, childLog.Total.ByModel); d != "" {
		t.Errorf("the child's own log disagrees with the parent's record (-parent +child):\n%s", d)
	}
}

// closeCounter is a resource standing for a child's background tasks.
type closeCounter struct{ closed int }

func (c *closeCounter) Close() error   { c.closed++; return nil }
func (c *closeCounter) String() string { return "tasks" }

func TestB66_ABackgroundTaskLeftByAChildIsHandedToTheParent(t *testing.T) {
	tasks := &closeCounter{}
	delegate := &tool.Func{ToolSpec: tool.Spec{Name: "delegate", Description: "starts a child", Schema: []byte(`{"type":"object"}`)},
		Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			a := agent.RunningAgent(ctx)
			res, err := a.Spawn(ctx, &agent.SpawnRequest{Name: "worker", Prompt: "task-B: start a task", Closers: []io.Closer{tasks}, CallID: call.ID})
			if err != nil {
				return nil, err
			}
			return tool.Text(res.Text), nil
		}}
	f := newFamily(t, &agent.Options{Tools: []tool.Tool{delegate}},
		llmtest.CallTool("c1", "delegate", `{}`), llmtest.Reply("done"))
	f.rt.route("task-B", llmtest.Reply("started, still running"))
	if _, err := f.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if tasks.closed != 0 {
		t.Errorf("the child's tasks were closed when it ended; want them handed to the parent")
	}
	h := ofType[*session.SubagentHandoff](readAll(t, f.store, f.a.Session()))
	if len(h) != 1 || h[0].Name != "worker" || !cmp.Equal(h[0].Resources, []string{"tasks"}) {
		t.Errorf("subagent.handoff = %+v", h)
	}
	f.close()
	if tasks.closed != 1 {
		t.Errorf("the handed-over tasks were closed %d times when the parent closed; want 1", tasks.closed)
	}
}

func TestSpawnToolNamesItsDefinitions(t *testing.T) {
	defs := []agentdef.Definition{{Name: "reviewer", Description: "Reviews diffs."}, {Name: "scout", Description: "Finds files."}}
	spec := agent.SpawnTool(&agent.SpawnToolOptions{Definitions: defs}).Spec()
	for _, want := range []string{"- reviewer: Reviews diffs.", "- scout: Finds files."} {
		if !strings.Contains(spec.Description, want) {
			t.Errorf("the description lacks %q:\n%s", want, spec.Description)
		}
	}
	m := llmtest.NewModel(llmtest.CallTools(spawnCall("c1", `{"task":"x","agent":"nobody"}`)), llmtest.Reply("ok"))
	a, err := agent.New(&agent.Options{Model: m, Tools: []tool.Tool{agent.SpawnTool(&agent.SpawnToolOptions{Definitions: defs})}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := lastToolResult(m.Requests()[1].Messages); !strings.Contains(got, `no agent named "nobody"; the named agents are: reviewer, scout`) {
		t.Errorf("an unknown agent's result = %q", got)
	}
}

func TestSubagentBudgetsComeOutOfTheParents(t *testing.T) {
	per := llmtest.DefaultUsage.Total()
	f := newFamily(t, &agent.Options{Limits: agent.Limits{MaxTokens: 2 * per}},
		llmtest.CallTools(spawnCall("c1", `{"task":"task-M: work"}`)),
		llmtest.Reply("never asked"))
	f.rt.route("task-M", llmtest.CallTool("s1", "spawn_agent", `{"task":"task-Z: never"}`), llmtest.Reply("never asked"))
	res, err := f.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	var be *agent.BudgetError
	if !errors.As(err, &be) || res.Reason != session.EndBudget {
		t.Fatalf("parent ended %s, %v; want a token budget end counting its child", res.Reason, err)
	}
	if be.Used != float64(2*per) {
		t.Errorf("the parent's budget saw %g tokens used; want its own and its child's, %d", be.Used, 2*per)
	}
	ends := ofType[*session.SubagentEnd](readAll(t, f.store, f.a.Session()))
	if len(ends) != 1 || ends[0].Reason != session.EndBudget {
		t.Errorf("subagent.end = %+v; want the child stopped by what was left of the parent's budget", ends)
	}
	f.close()
}
