package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/reinhq/rein/llm/llmtest"
)

// receiver collects what an OTLP endpoint was sent: spans, and the
// metrics (by name, the latest export of each) with their units.
type receiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	metrics  map[string]*metricpb.Metric
	services []string
	auth     []string
}

func (r *receiver) add(req *coltracepb.ExportTraceServiceRequest, auth string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.auth = append(r.auth, auth)
	for _, rs := range req.ResourceSpans {
		r.services = append(r.services, attrValue(rs.Resource.GetAttributes(), "service.name"))
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
}

func (r *receiver) addMetrics(req *colmetricpb.ExportMetricsServiceRequest, auth string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.auth = append(r.auth, auth)
	if r.metrics == nil {
		r.metrics = map[string]*metricpb.Metric{}
	}
	for _, rm := range req.ResourceMetrics {
		r.services = append(r.services, attrValue(rm.Resource.GetAttributes(), "service.name"))
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				r.metrics[m.Name] = m
			}
		}
	}
}

func attrValue(kv []*commonpb.KeyValue, key string) string {
	for _, a := range kv {
		if a.Key == key {
			switch v := a.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return strconv.FormatInt(v.IntValue, 10)
			}
		}
	}
	return ""
}

// httpReceiver is an OTLP/HTTP endpoint decoding the protobuf payloads.
func httpReceiver(t *testing.T) (*receiver, string) {
	r := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var msg, reply protoreflect.ProtoMessage
		switch req.URL.Path {
		case "/v1/traces":
			msg, reply = &coltracepb.ExportTraceServiceRequest{}, &coltracepb.ExportTraceServiceResponse{}
		case "/v1/metrics":
			msg, reply = &colmetricpb.ExportMetricsServiceRequest{}, &colmetricpb.ExportMetricsServiceResponse{}
		}
		if msg == nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want protobuf on /v1/traces or /v1/metrics", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err == nil {
			err = proto.Unmarshal(body, msg)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch m := msg.(type) {
		case *coltracepb.ExportTraceServiceRequest:
			r.add(m, req.Header.Get("Authorization"))
		case *colmetricpb.ExportMetricsServiceRequest:
			r.addMetrics(m, req.Header.Get("Authorization"))
		}
		b, _ := proto.Marshal(reply)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

type grpcTraces struct {
	coltracepb.UnimplementedTraceServiceServer
	r *receiver
}

func (g *grpcTraces) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	g.r.add(req, strings.Join(md.Get("authorization"), ","))
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

type grpcMetrics struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *receiver
}

func (g *grpcMetrics) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	g.r.addMetrics(req, strings.Join(md.Get("authorization"), ","))
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// grpcReceiver is an OTLP/gRPC endpoint on loopback.
func grpcReceiver(t *testing.T) (*receiver, string) {
	r := &receiver{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, &grpcTraces{r: r})
	colmetricpb.RegisterMetricsServiceServer(s, &grpcMetrics{r: r})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return r, "http://" + lis.Addr().String()
}

func TestRunExportsTraces(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		start    func(*testing.T) (*receiver, string)
	}{
		{"http/protobuf", httpReceiver},
		{"grpc", grpcReceiver},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			rec, endpoint := tc.start(t)
			e := newEnv(t)
			m := llmtest.NewModel(
				llmtest.CallTool("call_1", "write", `{"path":"a.txt","content":"hi\n"}`),
				llmtest.Reply("done"),
			)
			srv := llmtest.NewServer(t, m)
			w := wires[0]
			env := append(w.env(),
				"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint,
				"OTEL_EXPORTER_OTLP_PROTOCOL="+tc.protocol,
				"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20otlp-token",
				"OTEL_SERVICE_NAME=rein-under-test",
				"OTEL_TRACES_SAMPLER=always_on")
			r := e.run(env, w.args(srv, e, "--approve", "auto", "write a file")...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var names []string
			byName := map[string]*tracepb.Span{}
			for _, s := range rec.spans {
				names = append(names, s.Name)
				byName[s.Name] = s
			}
			want := []string{"chat claude-sonnet-4-5", "execute_tool write", "chat claude-sonnet-4-5", "invoke_agent rein"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Fatalf("spans received (-want +got):\n%s", diff)
			}
			root := byName["invoke_agent rein"]
			for _, s := range rec.spans[:3] {
				if string(s.ParentSpanId) != string(root.SpanId) {
					t.Errorf("%s is not a child of invoke_agent", s.Name)
				}
			}
			chat := rec.spans[0].Attributes
			for k, v := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5"} {
				if got := attrValue(chat, k); got != v {
					t.Errorf("chat %s = %q, want %q", k, got, v)
				}
			}
			if got := attrValue(byName["execute_tool write"].Attributes, "gen_ai.tool.call.id"); got != "call_1" {
				t.Errorf("execute_tool gen_ai.tool.call.id = %q, want call_1", got)
			}
			if got := attrValue(root.Attributes, "gen_ai.conversation.id"); got == "" {
				t.Error("invoke_agent has no gen_ai.conversation.id")
			}
			checkRunMetrics(t, rec.metrics)
			for _, s := range rec.services {
				if s != "rein-under-test" {
					t.Errorf("service.name = %q, want rein-under-test", s)
				}
			}
			for _, a := range rec.auth {
				if a != "Bearer otlp-token" {
					t.Errorf("authorization header = %q, want the one of OTEL_EXPORTER_OTLP_HEADERS", a)
				}
			}
		})
	}
}

func TestTelemetryEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"protocol", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "use http/protobuf or grpc"},
		{"sampler", map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER=\"sometimes\" is not supported"},
		{"ratio", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "give a number from 0 to 1"},
		{"headers", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "not key=value"},
		{"interval", map[string]string{"OTEL_METRIC_EXPORT_INTERVAL": "10s"}, `OTEL_METRIC_EXPORT_INTERVAL="10s" is not a number of milliseconds`},
		{"negative interval", map[string]string{"OTEL_METRIC_EXPORT_INTERVAL": "-5"}, "give a whole number above 0"},
		{"timeout", map[string]string{"OTEL_METRIC_EXPORT_TIMEOUT": "0"}, "OTEL_METRIC_EXPORT_TIMEOUT"},
		{"exporter", map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, "use otlp or none"},
		{"metrics protocol", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}, `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http/json" is not supported`},
		{"metrics headers", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_METRICS_HEADERS has an entry that is not key=value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1"
			a := &app{getenv: func(k string) string { return tc.env[k] }, stderr: io.Discard}
			tr, err := a.tracing(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one that says %q", err, tc.want)
			}
			if tr != nil {
				t.Error("an export was started for a bad setting")
			}
		})
	}
	a := &app{getenv: func(string) string { return "" }}
	if tr, err := a.tracing(context.Background()); tr != nil || err != nil {
		t.Errorf("with no OTEL_* set: tracing %v, err %v; want nothing", tr, err)
	}
}
