package main

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/reinhq/rein/llm/llmtest"
)

// point is what a test checks of one exported histogram data point.
type point struct {
	Metric, Unit               string
	Operation, Provider, Model string
	TokenType                  string
	Count                      uint64
}

// histogramPoints are the data points of the named histograms in ms,
// sorted, and their sums by metric and token type.
func histogramPoints(t *testing.T, ms map[string]*metricpb.Metric, names ...string) ([]point, map[string]float64) {
	t.Helper()
	var got []point
	sums := map[string]float64{}
	for _, name := range names {
		m := ms[name]
		if m == nil {
			t.Errorf("metric %s was not exported; got %v", name, slices.Sorted(maps.Keys(ms)))
			continue
		}
		if m.GetHistogram() == nil {
			t.Errorf("metric %s is not a histogram: %T", name, m.Data)
			continue
		}
		for _, dp := range m.GetHistogram().DataPoints {
			p := point{Metric: name, Unit: m.Unit, Count: dp.Count,
				Operation: attrValue(dp.Attributes, "gen_ai.operation.name"),
				Provider:  attrValue(dp.Attributes, "gen_ai.provider.name"),
				Model:     attrValue(dp.Attributes, "gen_ai.request.model"),
				TokenType: attrValue(dp.Attributes, "gen_ai.token.type")}
			got = append(got, p)
			sums[name+" "+p.TokenType] += dp.GetSum()
		}
	}
	slices.SortFunc(got, func(a, b point) int { return strings.Compare(a.Metric+a.TokenType, b.Metric+b.TokenType) })
	return got, sums
}

// checkRunMetrics checks the metrics of a run of two model calls (a
// tool call, then a reply) with the fake model's usage.
func checkRunMetrics(t *testing.T, ms map[string]*metricpb.Metric) {
	t.Helper()
	got, sums := histogramPoints(t, ms, "gen_ai.client.operation.duration", "gen_ai.client.token.usage")
	chat := point{Operation: "chat", Provider: "anthropic", Model: "claude-sonnet-4-5", Count: 2}
	with := func(metric, unit, tokenType string) point {
		p := chat
		p.Metric, p.Unit, p.TokenType = metric, unit, tokenType
		return p
	}
	want := []point{
		with("gen_ai.client.operation.duration", "s", ""),
		with("gen_ai.client.token.usage", "{token}", "input"),
		with("gen_ai.client.token.usage", "{token}", "output"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metric data points (-want +got):\n%s", diff)
	}
	if out, want := sums["gen_ai.client.token.usage output"], float64(2*llmtest.DefaultUsage.Output); out != want {
		t.Errorf("output tokens = %v, want %v (two calls of the fake model's usage)", out, want)
	}
	if in := sums["gen_ai.client.token.usage input"]; in < float64(2*llmtest.DefaultUsage.Input) {
		t.Errorf("input tokens = %v, want at least %d", in, 2*llmtest.DefaultUsage.Input)
	}
	if d := sums["gen_ai.client.operation.duration "]; d <= 0 {
		t.Errorf("operation duration sum = %v s, want a positive time", d)
	}
}

// OTEL_METRICS_EXPORTER=none exports the run's traces and no metrics.
func TestRunMetricsExporterNone(t *testing.T) {
	rec, endpoint := httpReceiver(t)
	e := newEnv(t)
	srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Reply("done")))
	w := wires[0]
	env := append(w.env(), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_METRICS_EXPORTER=none")
	r := e.run(env, w.args(srv, e, "say done")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.spans) == 0 {
		t.Error("no spans were exported; OTEL_METRICS_EXPORTER=none should leave traces on")
	}
	if len(rec.metrics) != 0 {
		t.Errorf("metrics exported with OTEL_METRICS_EXPORTER=none: %v", slices.Sorted(maps.Keys(rec.metrics)))
	}
}

// Each signal has its own endpoint when set; the general one gets the
// signal's path over HTTP only; a signal turned off has no provider.
func TestTelemetryTargets(t *testing.T) {
	for _, tc := range []struct {
		name            string
		env             map[string]string
		traces, metrics string
	}{
		{"base http", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces", "http://c:4318/v1/metrics"},
		{"base grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http://c:4317", "http://c:4317"},
		{"metrics only", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:9/custom"}, "", "http://m:9/custom"},
		{"traces off", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, "", "http://c:4318/v1/metrics"},
		{"metrics grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, "http://c:4318/v1/traces", "http://c:4318"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &app{getenv: func(k string) string { return tc.env[k] }}
			var got []string
			for _, signal := range []string{"TRACES", "METRICS"} {
				target, err := a.otlpTarget(signal)
				if err != nil {
					t.Fatal(err)
				}
				if target == nil {
					got = append(got, "")
					continue
				}
				got = append(got, target.endpoint)
			}
			if diff := cmp.Diff([]string{tc.traces, tc.metrics}, got); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
		})
	}
	a := &app{getenv: func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}[k]
	}}
	if tr, err := a.tracing(context.Background()); tr != nil || err != nil {
		t.Errorf("with both signals off: tracing %v, err %v; want nothing", tr, err)
	}
}
