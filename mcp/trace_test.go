package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/mcp"
)

// traceSeen records the trace context each tools/call arrived with: in
// params._meta and in the HTTP traceparent header.
type traceSeen struct {
	mu      sync.Mutex
	meta    []string
	headers []string
}

func (s *traceSeen) server() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "traced", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		s.mu.Lock()
		s.meta = append(s.meta, tp)
		s.mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Message}}}, nil, nil
	})
	return srv
}

func (s *traceSeen) handler(srv *sdk.Server) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.mu.Lock()
			s.headers = append(s.headers, r.Header.Get("Traceparent"))
			s.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

func traceparent(sc trace.SpanContext) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// A tools/call under a span is a client span of the MCP conventions, a
// child of that span, with its duration in mcp.client.operation.duration,
// and its trace context reaches the server in _meta and, over HTTP, in
// the traceparent header.
func TestCallSpansAndTraceContext(t *testing.T) {
	seen := &traceSeen{}
	web := httptest.NewServer(seen.handler(seen.server()))
	t.Cleanup(web.Close)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m := newManager(t, &mcp.Options{TracerProvider: tp, MeterProvider: mp, Servers: []mcp.ServerConfig{{Name: "web", URL: web.URL}}})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool mcp_web_echo")
	if _, err := m.Call(ctx, "web", "echo", []byte(`{"message":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var call tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "tools/call echo" {
			call = s
		}
	}
	if call.Name == "" {
		t.Fatalf("no tools/call span among %v", spans.GetSpans())
	}
	if call.SpanKind != trace.SpanKindClient || call.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("span kind %v, parent %v; want a client span under the caller's span", call.SpanKind, call.Parent.SpanID())
	}
	got := map[string]string{}
	for _, a := range call.Attributes {
		got[string(a.Key)] = a.Value.Emit()
	}
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "gen_ai.operation.name": "execute_tool",
		"network.transport": "tcp", "server.address": "127.0.0.1"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if got["mcp.session.id"] == "" || got["mcp.protocol.version"] == "" {
		t.Errorf("no session id or protocol version: %v", got)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var calls uint64
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if h, ok := mt.Data.(metricdata.Histogram[float64]); ok && mt.Name == "mcp.client.operation.duration" && mt.Unit == "s" {
				for _, p := range h.DataPoints {
					calls += p.Count
					if _, ok := p.Attributes.Value("mcp.session.id"); ok {
						t.Error("the duration metric is split by session id")
					}
				}
			}
		}
	}
	if calls != 1 {
		t.Errorf("mcp.client.operation.duration records = %d, want 1", calls)
	}
	want := traceparent(call.SpanContext)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.meta) != 1 || seen.meta[0] != want {
		t.Errorf("_meta traceparent = %q, want the client span's %q", seen.meta, want)
	}
	if !slices.Contains(seen.headers, want) {
		t.Errorf("HTTP traceparent headers = %q, want one with %q", seen.headers, want)
	}
}

// Without a tracer, a call still carries the caller's trace context, and
// a call outside any trace carries none.
func TestTraceContextWithoutTracer(t *testing.T) {
	seen := &traceSeen{}
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{Name: "s", NewTransport: inProcess(t, seen.server(), nil)}}})
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "caller")
	defer span.End()
	for _, c := range []context.Context{ctx, context.Background()} {
		if _, err := m.Call(c, "s", "echo", []byte(`{"message":"hi"}`)); err != nil {
			t.Fatal(err)
		}
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.meta) != 2 || seen.meta[0] != traceparent(span.SpanContext()) || seen.meta[1] != "" {
		t.Errorf("_meta traceparents = %q, want the caller's, then none", seen.meta)
	}
}
