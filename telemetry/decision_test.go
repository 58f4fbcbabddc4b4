package telemetry_test

import (
	"context"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/telemetry"
)

// A decision's question, options and reason are content: off by default,
// and with capture on they pass through Redact.Decision; its kind, answer
// and cost are always there.
func TestDecisionEvents(t *testing.T) {
	for _, capture := range []bool{false, true} {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		mask := func(s string) string { return strings.ReplaceAll(s, marker, "***") }
		obs := telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp, CaptureContent: capture, Redact: &telemetry.Redactor{Decision: mask}})
		cheap := llmtest.NewModel(llmtest.Reply(`{"choice":"ship ` + marker + `","reason":"because ` + marker + `"}`))
		a, err := agent.New(&agent.Options{Model: llmtest.NewModel(), Hooks: obs.Register(nil),
			Decider: &agent.Target{Provider: "llmtest", Model: "cheap", Client: cheap}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Decide(context.Background(), &agent.DecideRequest{Kind: agent.DecideChoice,
			Question: "ship " + marker + "?", Options: []string{"wait", "ship " + marker}}); err != nil {
			t.Fatal(err)
		}
		a.Close()
		obs.Close()
		var got map[string]string
		for _, s := range exp.GetSpans() {
			if s.Name == "rein.decision" {
				got = attrs(s.Attributes)
			}
			for _, e := range s.Events {
				if e.Name == "rein.decision" {
					got = attrs(e.Attributes)
				}
			}
		}
		if got == nil {
			t.Fatalf("capture %v: no decision span or event among %v", capture, exp.GetSpans())
		}
		for k, v := range got {
			if strings.Contains(v, marker) {
				t.Errorf("capture %v: %s holds the marker: %s", capture, k, v)
			}
		}
		if got["rein.decision.kind"] != "choice" || got["gen_ai.request.model"] != "cheap" {
			t.Errorf("capture %v: attributes %v", capture, got)
		}
		if capture && (got["rein.decision.question"] != "ship ***?" || got["rein.decision.choice"] != "ship ***" || got["rein.decision.reason"] != "because ***") {
			t.Errorf("captured content %v, want it masked", got)
		}
		if !capture && (got["rein.decision.question"] != "" || got["rein.decision.choice_index"] != "1") {
			t.Errorf("without capture: %v, want no question and the choice's index", got)
		}
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		var tokens int64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if h, ok := m.Data.(metricdata.Histogram[int64]); ok && m.Name == "gen_ai.client.token.usage" {
					for _, p := range h.DataPoints {
						tokens += p.Sum
					}
				}
			}
		}
		if tokens != llmtest.DefaultUsage.Total() {
			t.Errorf("token usage recorded = %d, want the decision's %d", tokens, llmtest.DefaultUsage.Total())
		}
	}
}
