package agent_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func TestB27_MaxTokensDropsToolCalls(t *testing.T) {
	ran := false
	tl := funcTool("t", func(context.Context, *tool.Call) (*tool.Result, error) { ran = true; return tool.Text("x"), nil })
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}}, llmtest.Chunks(
		&llm.TextDelta{Index: 0, Text: "Here is the start"},
		&llm.ToolCallDelta{Index: 1, ID: "c1", Name: "t", Args: `{"a":`},
		&llm.UsageChunk{Usage: llm.Usage{Input: 10, Output: 100}},
		&llm.Finish{Reason: llm.FinishMaxTokens}))
	res := h.run("go")
	evs := h.events()
	if ran || len(ofType[*session.ToolResult](evs)) != 0 {
		t.Error("a call of a cut-off response ran")
	}
	am := ofType[*session.AssistantMessage](evs)[0]
	msg := llm.Message{Parts: am.Parts}
	if msg.Text() != "Here is the start" || len(msg.ToolCalls()) != 0 || am.Finish != llm.FinishMaxTokens {
		t.Errorf("assistant message = %+v", am)
	}
	if res.Reason != session.EndMaxTokens || lastEnd(t, evs).Reason != session.EndMaxTokens {
		t.Errorf("end = %s", res.Reason)
	}
}

func overloaded(after time.Duration) *llm.ProviderError {
	return &llm.ProviderError{Kind: llm.ErrOverloaded, Provider: "llmtest", StatusCode: 529, RetryAfter: after, Message: "Overloaded"}
}

func TestB28_OverloadedThenSuccessHonoursRetryAfter(t *testing.T) {
	h := newHarness(t, nil, llmtest.Fail(overloaded(3*time.Second)), llmtest.Reply("ok"))
	res := h.run("go")
	evs := h.events()
	if res.Text != "ok" || h.m.Calls() != 2 {
		t.Fatalf("text=%q calls=%d", res.Text, h.m.Calls())
	}
	if d := h.sleeps.all(); len(d) != 1 || d[0] < 3*time.Second {
		t.Errorf("waits = %v, want one of at least 3s", d)
	}
	rs := ofType[*session.Retry](evs)
	if len(rs) != 1 || rs[0].Kind != string(llm.ErrOverloaded) || rs[0].Attempt != 1 {
		t.Errorf("retry events = %+v", rs)
	}
}

func TestB28_BackoffIsExponential(t *testing.T) {
	srv := &llm.ProviderError{Kind: llm.ErrServer, StatusCode: 500}
	h := newHarness(t, &agent.Options{Retry: &agent.RetryPolicy{MaxRetries: 3, Base: 100 * time.Millisecond, Max: time.Second, Jitter: 0.2}},
		llmtest.Fail(srv), llmtest.Fail(srv), llmtest.Fail(srv), llmtest.Reply("ok"))
	h.run("go")
	h.events()
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if diff := cmp.Diff(want, h.sleeps.all()); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
}

func TestB28_JitterStaysInBounds(t *testing.T) {
	srv := &llm.ProviderError{Kind: llm.ErrServer, StatusCode: 503}
	for _, j := range []float64{0, 0.999} {
		h := newHarness(t, &agent.Options{Jitter: func() float64 { return j }, Retry: &agent.RetryPolicy{MaxRetries: 1, Base: time.Second, Max: time.Minute, Jitter: 0.5}},
			llmtest.Fail(srv), llmtest.Reply("ok"))
		h.run("go")
		d := h.sleeps.all()[0]
		if d < 500*time.Millisecond || d > 1500*time.Millisecond {
			t.Errorf("jitter %v gave delay %v, want within ±50%% of 1s", j, d)
		}
	}
}

func TestB28_PartialOutputNeverEntersRetry(t *testing.T) {
	h := newHarness(t, nil,
		llmtest.FailAfter(&llm.ProviderError{Kind: llm.ErrServer, Message: "stream broke"}, &llm.TextDelta{Text: "half an ans"}),
		llmtest.Reply("a whole answer"))
	res := h.run("go")
	evs := h.events()
	if strings.Contains(strings.Join(requestTexts(h.m.Requests()[1]), "|"), "half") {
		t.Errorf("the retried request carries the failed attempt's output")
	}
	ams := ofType[*session.AssistantMessage](evs)
	if len(ams) != 1 || res.Text != "a whole answer" {
		t.Errorf("assistant messages: %d, text %q", len(ams), res.Text)
	}
}

func TestB28_CutStreamIsRetried(t *testing.T) {
	h := newHarness(t, nil, llmtest.Cut(&llm.TextDelta{Text: "dropped mid-"}), llmtest.Reply("ok"))
	if res := h.run("go"); res.Text != "ok" || h.m.Calls() != 2 {
		t.Errorf("text %q after %d calls", res.Text, h.m.Calls())
	}
	if rs := ofType[*session.Retry](h.events()); len(rs) != 1 || rs[0].Kind != string(llm.ErrTransport) {
		t.Errorf("retries = %+v", rs)
	}
}

func TestB28_RetriesAreCapped(t *testing.T) {
	srv := &llm.ProviderError{Kind: llm.ErrServer, StatusCode: 502}
	h := newHarness(t, &agent.Options{Retry: &agent.RetryPolicy{MaxRetries: 2, Base: time.Millisecond}},
		llmtest.Fail(srv), llmtest.Fail(srv), llmtest.Fail(srv), llmtest.Reply("never"))
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	var te *agent.TurnError
	if !errors.As(err, &te) || llm.KindOf(err) != llm.ErrServer {
		t.Fatalf("err = %v", err)
	}
	if h.m.Calls() != 3 || res.Reason != session.EndError {
		t.Errorf("calls=%d end=%s", h.m.Calls(), res.Reason)
	}
	h.events()
}

func TestB29_QuotaIsNeverRetried(t *testing.T) {
	quota := &llm.ProviderError{Kind: llm.ErrQuota, Provider: "llmtest", StatusCode: 429, Code: "insufficient_quota", Message: "You exceeded your current quota"}
	h := newHarness(t, nil, llmtest.Fail(quota), llmtest.Reply("never"))
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if llm.KindOf(err) != llm.ErrQuota {
		t.Fatalf("err = %v, want a quota error", err)
	}
	if h.m.Calls() != 1 || len(h.sleeps.all()) != 0 {
		t.Errorf("calls=%d waits=%v", h.m.Calls(), h.sleeps.all())
	}
	end := lastEnd(t, h.events())
	if end.Reason != session.EndError || !strings.Contains(end.Message, "quota") || end.Code != string(llm.ErrQuota) || res.Reason != session.EndError {
		t.Errorf("end = %+v", end)
	}
}

func TestB30_FallbackToSecondTarget(t *testing.T) {
	primary := llmtest.NewModel(llmtest.Fail(overloaded(0)), llmtest.Fail(overloaded(0)), llmtest.Reply("primary again"))
	backup := llmtest.NewModel(llmtest.CallTool("c1", "echo", `{"text":"x"}`), llmtest.Reply("from backup"))
	h := newHarness(t, &agent.Options{
		Model: primary, Provider: "p1", ModelName: "big",
		Fallbacks: []agent.Target{{Provider: "p2", Model: "small", Client: backup}},
		Retry:     &agent.RetryPolicy{MaxRetries: 1, Base: time.Millisecond},
		Tools:     []tool.Tool{echoTool()},
	})
	res := h.run("go")
	if res.Text != "from backup" || backup.Calls() != 2 || primary.Calls() != 2 {
		t.Fatalf("text=%q primary=%d backup=%d", res.Text, primary.Calls(), backup.Calls())
	}
	evs := h.events()
	fb := ofType[*session.Fallback](evs)
	if len(fb) != 1 || fb[0].FromModel != "big" || fb[0].ToModel != "small" {
		t.Errorf("fallbacks = %+v", fb)
	}
	hdrs := ofType[*session.RequestHeader](evs)
	if len(hdrs) != 2 || hdrs[1].Model != "small" || hdrs[1].Reason != "change" {
		t.Errorf("headers = %+v", hdrs)
	}
	if got := backup.Requests()[0].Model; got != "small" {
		t.Errorf("backup request model = %q", got)
	}
	if _, ok := res.ByModel["small"]; !ok {
		t.Errorf("usage by model = %v", res.ByModel)
	}
	// The next run starts from the first target again.
	if res2 := h.run("again"); res2.Text != "primary again" {
		t.Errorf("second run answered %q", res2.Text)
	}
	h.events()
}

func TestB30_NoFallbackForInvalidRequest(t *testing.T) {
	backup := llmtest.NewModel(llmtest.Reply("never"))
	h := newHarness(t, &agent.Options{Fallbacks: []agent.Target{{Provider: "p2", Model: "m", Client: backup}}},
		llmtest.Fail(&llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 400}))
	h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	if backup.Calls() != 0 {
		t.Error("an invalid request was sent to the fallback")
	}
	h.events()
}

func TestB33_MissingCallIDGetsStableSyntheticID(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}}, llmtest.Chunks(
		&llm.BlockStart{Index: 0, Kind: llm.BlockToolCall, Name: "echo"},
		&llm.ToolCallDelta{Index: 0, Args: `{"text":"x"}`},
		&llm.BlockEnd{Index: 0},
		&llm.Finish{Reason: llm.FinishToolCalls}), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	am := ofType[*session.AssistantMessage](evs)[0]
	id := (&llm.Message{Parts: am.Parts}).ToolCalls()[0].ID
	if id == "" {
		t.Fatal("no synthetic id")
	}
	if r := results(evs)[id]; r == nil || resultText(r) != "x" {
		t.Errorf("the result does not carry the synthetic id %q:\n%s", id, dump(evs))
	}
}

func TestTTFTAndUsage(t *testing.T) {
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Cost: func(model string, u llm.Usage) float64 { return float64(u.Total()) / 1000 }},
		llmtest.CallTool("c1", "echo", `{"text":"x"}`).WithUsage(llm.Usage{Input: 100, Output: 20}),
		llmtest.Reply("ok").WithUsage(llm.Usage{Input: 150, Output: 10}))
	res := h.run("go")
	want := llm.Usage{Input: 250, Output: 30}
	if diff := cmp.Diff(want, res.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if res.Cost != 0.28 || res.ByModel["scripted"].Steps != 2 {
		t.Errorf("cost=%v by model=%+v", res.Cost, res.ByModel)
	}
	if res.TTFT <= 0 || res.TTFT > res.Duration {
		t.Errorf("ttft=%v duration=%v", res.TTFT, res.Duration)
	}
	ends := ofType[*session.StepEnd](h.events())
	if ends[0].Usage.Input != 100 || ends[1].Usage.Input != 150 {
		t.Errorf("step usage = %+v", ends)
	}
}

func TestB31_ContextTooLongElidesOldResults(t *testing.T) {
	tooLong := &llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, Message: "prompt is too long"}
	big := strings.Repeat("x", 1000)
	tl := funcTool("read", func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text(big), nil })
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{tl}},
		llmtest.CallTool("c1", "read", `{}`), llmtest.CallTool("c2", "read", `{}`),
		llmtest.Fail(tooLong), llmtest.Reply("fits now"), llmtest.Reply("still fits"))
	res := h.run("go")
	if res.Text != "fits now" {
		t.Fatalf("text = %q", res.Text)
	}
	evs := h.events()
	reps := ofType[*session.Repair](evs)
	if len(reps) != 1 || reps[0].Kind != "elided-result" || reps[0].CallID != "c1" {
		t.Errorf("repairs = %+v", reps)
	}
	retried := requestTexts(h.m.Requests()[3])
	if !strings.Contains(strings.Join(retried, "|"), "result c1: [This tool result was elided") || !strings.Contains(strings.Join(retried, "|"), "result c2: "+big) {
		t.Errorf("retried request = %v", retried)
	}
	// Later requests keep the elision; the log keeps the original.
	h.run("more")
	if !containsText(h.m.Requests()[4], "elided") {
		t.Error("the next request lost the elision")
	}
	if resultText(results(evs)["c1"]) != big {
		t.Error("the log was changed")
	}
}

func TestB31_NothingLeftToShrinkIsAClearError(t *testing.T) {
	tooLong := &llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, Message: "prompt is too long"}
	h := newHarness(t, nil, llmtest.Fail(tooLong), llmtest.Reply("never"))
	_, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "huge"})
	if llm.KindOf(err) != llm.ErrContextTooLong || !strings.Contains(err.Error(), "compact") {
		t.Errorf("err = %v", err)
	}
	if h.m.Calls() != 1 {
		t.Errorf("calls = %d", h.m.Calls())
	}
	h.events()
}

func TestNoticesReachTheNextRequest(t *testing.T) {
	var pending []string
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{echoTool()}, Notices: func() []string {
		out := pending
		pending = nil
		return out
	}}, llmtest.Respond(func(*llm.Request) llmtest.Entry {
		pending = append(pending, "background task 7 exited with code 0")
		return llmtest.CallTool("c1", "echo", `{"text":"x"}`)
	}), llmtest.Reply("ok"))
	h.run("go")
	evs := h.events()
	if cms := ofType[*session.ContextMessage](evs); len(cms) != 1 || cms[0].Source != session.SourceSystem {
		t.Errorf("context messages: %+v", cms)
	}
	if !containsText(h.m.Requests()[1], "task 7 exited") {
		t.Error("the notice did not reach the model")
	}
}

func TestB02_PanickingModelClosesTurn(t *testing.T) {
	m := llm.ModelFunc(func(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
		return func(yield func(llm.Chunk, error) bool) {
			yield(&llm.TextDelta{Text: "about to"}, nil)
			panic("adapter bug")
		}
	})
	h := newHarness(t, &agent.Options{Model: m})
	res, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
	var te *agent.TurnError
	if !errors.As(err, &te) || te.Code != "panic" || res.Reason != session.EndInterrupted {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	if end := lastEnd(t, h.events()); end.Reason != session.EndInterrupted {
		t.Errorf("end = %+v", end)
	}
	// The agent is usable again.
	if _, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: "again"}); errors.Is(err, agent.ErrBusy) {
		t.Error("the agent stayed busy after a panic")
	}
}

func TestDefaultCostUsesCatalogPrices(t *testing.T) {
	u := llm.Usage{Input: 1_000_000, Output: 100_000}
	want, ok := llm.DefaultCatalog().Cost("claude-sonnet-4-5", u)
	if !ok {
		t.Skip("the catalog does not price claude-sonnet-4-5")
	}
	h2 := newHarness(t, &agent.Options{Provider: "anthropic", ModelName: "claude-sonnet-4-5"}, llmtest.Reply("ok").WithUsage(u))
	res := h2.run("go")
	if res.Cost != want || res.ByModel["claude-sonnet-4-5"].Cost != want {
		t.Errorf("cost = %v, want %v", res.Cost, want)
	}
	if got := agent.Summarize(h2.events()).Cost; got != want {
		t.Errorf("summary cost = %v, want %v", got, want)
	}
}
