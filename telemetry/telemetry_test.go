package telemetry_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
)

const marker = "SECRET-MARKER-42"

type echoIn struct {
	Text string `json:"text"`
}

func echoTool(t testing.TB) tool.Tool {
	t.Helper()
	echo, err := tool.New("echo", "Echo the text.", func(ctx context.Context, in echoIn, call *tool.Call) (*tool.Result, error) {
		return tool.Text("echo: " + in.Text), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return echo
}

// harness runs one agent under an Observer with in-memory exporters.
type harness struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

// run plays a prompt whose first request fails once (a retry), then
// calls the echo tool and answers; then it compacts the conversation.
func run(t *testing.T, opts *telemetry.Options) *harness {
	t.Helper()
	h := &harness{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	if opts == nil {
		opts = &telemetry.Options{}
	}
	opts.TracerProvider, opts.MeterProvider = tp, mp
	obs := telemetry.New(opts)
	model := llmtest.NewModel(
		llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, Provider: "llmtest", StatusCode: 529, Message: "busy"}),
		llmtest.CallTool("c1", "echo", `{"text":"`+marker+`"}`),
		llmtest.Reply("said "+marker).WithUsage(llm.Usage{Input: 20, Output: 7, CacheRead: 100, CacheWrite: 30}),
		llmtest.Reply("summary of "+marker),
	)
	a, err := agent.New(&agent.Options{
		Model: model, Provider: "llmtest", ModelName: "scripted", System: "be brief " + marker,
		Tools: []tool.Tool{echoTool(t)}, Hooks: obs.Register(nil),
		Retry: &agent.RetryPolicy{MaxRetries: 2, Base: time.Second, Max: time.Second, MaxWait: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := a.Run(ctx, &agent.RunRequest{Prompt: "say " + marker}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := a.Compact(ctx, nil); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	obs.Close()
	// Not Shutdown: the in-memory exporter forgets its spans on shutdown.
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

func attrs(kv []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, a := range kv {
		m[string(a.Key)] = a.Value.Emit()
	}
	return m
}

func TestSpanTree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := run(t, nil)
		spans := h.spans.GetSpans()
		byName := map[string]tracetest.SpanStub{}
		var names []string
		for _, s := range spans {
			byName[s.Name] = s
			names = append(names, s.Name)
		}
		want := []string{"chat scripted", "execute_tool echo", "chat scripted", "invoke_agent rein", "rein.compact"}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Fatalf("span names in end order (-want +got):\n%s", diff)
		}
		root := byName["invoke_agent rein"]
		for _, s := range spans[:3] {
			if s.Parent.SpanID() != root.SpanContext.SpanID() {
				t.Errorf("%s is not a child of invoke_agent", s.Name)
			}
		}
		ra := attrs(root.Attributes)
		for k, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "rein", "rein.turn.end_reason": "completed"} {
			if ra[k] != v {
				t.Errorf("invoke_agent %s = %q, want %q", k, ra[k], v)
			}
		}
		if ra["gen_ai.conversation.id"] == "" {
			t.Error("invoke_agent has no gen_ai.conversation.id")
		}

		first := spans[0]
		fa := attrs(first.Attributes)
		wantChat := map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "llmtest", "gen_ai.request.model": "scripted",
			"gen_ai.response.model": "scripted", "gen_ai.response.finish_reasons": `["tool_call"]`,
			"gen_ai.usage.input_tokens": "10", "gen_ai.usage.output_tokens": "5",
		}
		for k, v := range wantChat {
			if fa[k] != v {
				t.Errorf("first chat %s = %q, want %q", k, fa[k], v)
			}
		}
		if len(first.Events) != 1 || first.Events[0].Name != "gen_ai.request.retry" {
			t.Fatalf("first chat events = %v, want one retry", first.Events)
		}
		if ea := attrs(first.Events[0].Attributes); ea["error.type"] != "overloaded" || ea["rein.retry.attempt"] != "1" {
			t.Errorf("retry event attributes = %v", ea)
		}
		if d := first.EndTime.Sub(first.StartTime); d < time.Second {
			t.Errorf("first chat lasted %v; its times must come from the events (a 1s retry delay)", d)
		}

		third := attrs(spans[2].Attributes)
		for k, v := range map[string]string{"gen_ai.usage.input_tokens": "150", "gen_ai.usage.cache_read.input_tokens": "100", "gen_ai.usage.cache_creation.input_tokens": "30"} {
			if third[k] != v {
				t.Errorf("second chat %s = %q, want %q", k, third[k], v)
			}
		}

		ta := attrs(byName["execute_tool echo"].Attributes)
		for k, v := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo", "gen_ai.tool.call.id": "c1", "gen_ai.tool.type": "function", "rein.tool.outcome": "execute"} {
			if ta[k] != v {
				t.Errorf("execute_tool %s = %q, want %q", k, ta[k], v)
			}
		}

		comp := byName["rein.compact"]
		var events []string
		for _, e := range comp.Events {
			events = append(events, e.Name)
		}
		if diff := cmp.Diff([]string{"rein.compaction"}, events); diff != "" {
			t.Errorf("compaction span events (-want +got):\n%s", diff)
		}

		for _, s := range spans {
			for _, a := range s.Attributes {
				if strings.HasPrefix(string(a.Key), "gen_ai.input") || strings.HasPrefix(string(a.Key), "gen_ai.output") ||
					a.Key == "gen_ai.system_instructions" || a.Key == "gen_ai.tool.call.arguments" || a.Key == "gen_ai.tool.call.result" {
					t.Errorf("span %s captured %s with capture off", s.Name, a.Key)
				}
			}
		}
		checkMetrics(t, h.reader)
	})
}

func checkMetrics(t *testing.T, reader *sdkmetric.ManualReader) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	sums := map[string]int64{}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Unit
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					typ, _ := p.Attributes.Value("gen_ai.token.type")
					sums[typ.AsString()] += p.Sum
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += p.Count
				}
			}
		}
	}
	want := map[string]string{"gen_ai.client.token.usage": "{token}", "gen_ai.client.operation.duration": "s", "gen_ai.client.operation.time_to_first_chunk": "s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics and units (-want +got):\n%s", diff)
	}
	// Two responses of the run: 10+5 and 150+7.
	if diff := cmp.Diff(map[string]int64{"input": 160, "output": 12}, sums); diff != "" {
		t.Errorf("token usage sums (-want +got):\n%s", diff)
	}
	// Both responses streamed: each has a duration and a time to first chunk.
	if diff := cmp.Diff(map[string]uint64{"gen_ai.client.operation.duration": 2, "gen_ai.client.operation.time_to_first_chunk": 2}, counts); diff != "" {
		t.Errorf("records of the duration metrics (-want +got):\n%s", diff)
	}
}

func TestRedaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mask := func(s string) string { return strings.ReplaceAll(s, marker, "***") }
		h := run(t, &telemetry.Options{CaptureContent: true, Redact: telemetry.RedactAll(mask)})
		var captured int
		for _, s := range h.spans.GetSpans() {
			check := func(where string, kv []attribute.KeyValue) {
				for _, a := range kv {
					if strings.Contains(a.Value.Emit(), marker) {
						t.Errorf("%s %s holds the marker: %s", where, a.Key, a.Value.Emit())
					}
					if strings.Contains(a.Value.Emit(), "***") {
						captured++
					}
				}
			}
			check(s.Name, s.Attributes)
			for _, e := range s.Events {
				check(s.Name+" event "+e.Name, e.Attributes)
			}
			if strings.Contains(s.Name+s.Status.Description, marker) {
				t.Errorf("span %s name or status holds the marker", s.Name)
			}
		}
		// system, prompt, tool arguments (twice: call and output message), tool result, response text.
		if captured < 5 {
			t.Errorf("only %d attributes carried redacted content; capture is not on", captured)
		}
	})
}

// Without a redactor every kind of content reaches its attribute as is,
// which shows that the redaction test above looks where content goes.
func TestCaptureWithoutRedactor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := run(t, &telemetry.Options{CaptureContent: true})
		seen := map[string]bool{}
		for _, s := range h.spans.GetSpans() {
			for _, a := range s.Attributes {
				if strings.Contains(a.Value.Emit(), marker) {
					seen[string(a.Key)] = true
				}
			}
		}
		want := map[string]bool{
			"gen_ai.system_instructions": true, "gen_ai.input.messages": true, "gen_ai.output.messages": true,
			"gen_ai.tool.call.arguments": true, "gen_ai.tool.call.result": true,
		}
		if diff := cmp.Diff(want, seen); diff != "" {
			t.Errorf("attributes holding the content (-want +got):\n%s", diff)
		}
	})
}

// A call a gate denies and a call of an unknown tool never run: each
// still gets an execute_tool span with its outcome and error type, and
// the gate's decision is an event of the run's span.
func TestDeniedAndUnknownCalls(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	obs := telemetry.New(&telemetry.Options{TracerProvider: tp})
	hooks := obs.Register(new(hook.Set).ToolGate("no-echo", func(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
		if in.Call.Name != "echo" {
			return nil, nil
		}
		return &hook.Deny{Reason: "not today"}, nil
	}))
	model := llmtest.NewModel(
		llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "echo", Args: []byte(`{"text":"x"}`)}, llm.ToolCall{ID: "c2", Name: "missing", Args: []byte(`{}`)}),
		llmtest.Reply("ok"),
	)
	a, err := agent.New(&agent.Options{Model: model, Provider: "llmtest", ModelName: "scripted", Tools: []tool.Tool{echoTool(t)}, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	obs.Close()
	got := map[string]map[string]string{}
	var runEvents []string
	for _, s := range spans.GetSpans() {
		a := attrs(s.Attributes)
		if strings.HasPrefix(s.Name, "execute_tool") {
			got[s.Name] = map[string]string{"outcome": a["rein.tool.outcome"], "error.type": a["error.type"], "status": s.Status.Code.String()}
		}
		if s.Name == "invoke_agent rein" {
			for _, e := range s.Events {
				runEvents = append(runEvents, e.Name+" "+attrs(e.Attributes)["rein.hook.decision"]+" "+attrs(e.Attributes)["gen_ai.tool.call.id"])
			}
		}
	}
	t.Logf("execute_tool spans: %v", got)
	if o := got["execute_tool echo"]; o["outcome"] != "gate-block" || o["error.type"] == "" || o["status"] != "Error" {
		t.Errorf("denied call span = %v, want outcome gate-block with an error type and status", o)
	}
	if o := got["execute_tool missing"]; o["outcome"] != "unknown" || o["error.type"] == "" || o["status"] != "Error" {
		t.Errorf("unknown tool span = %v, want outcome unknown with an error type and status", o)
	}
	if diff := cmp.Diff([]string{"rein.hook.decision deny c1"}, runEvents); diff != "" {
		t.Errorf("run span events (-want +got):\n%s", diff)
	}
}
