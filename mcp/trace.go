package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/tool"
)

const traceScope = "github.com/reinhq/rein/mcp"

// startCallSpan starts the client span of a tools/call request, following
// the MCP semantic conventions (semconv 1.40.0): "tools/call {tool}",
// kind client, a child of the span in ctx (the execute_tool span of the
// call, when the host traces its tools). Without Options.TracerProvider
// it starts nothing and returns ctx and nil.
func (s *server) startCallSpan(ctx context.Context, remote string, cs *sdk.ClientSession) (context.Context, trace.Span) {
	tp := s.m.opts.TracerProvider
	if tp == nil {
		return ctx, nil
	}
	attrs := s.callAttrs(remote, cs)
	return tp.Tracer(traceScope, trace.WithSchemaURL(semconv.SchemaURL)).Start(ctx, "tools/call "+remote,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// callAttrs are the attributes of a tools/call span and its duration; the
// session's id only with a session (the span's: a metric's attributes
// stay few in values).
func (s *server) callAttrs(remote string, cs *sdk.ClientSession) []attribute.KeyValue {
	s.mu.Lock()
	protocol := s.protocol
	s.mu.Unlock()
	attrs := []attribute.KeyValue{semconv.McpMethodNameToolsCall, semconv.GenAIToolName(remote), semconv.GenAIOperationNameExecuteTool,
		semconv.JSONRPCProtocolVersion("2.0"), attribute.String("rein.mcp.server", s.cfg.Name)}
	if protocol != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(protocol))
	}
	if cs != nil && cs.ID() != "" {
		attrs = append(attrs, semconv.McpSessionID(cs.ID()))
	}
	switch s.cfg.transport() {
	case TransportStdio:
		attrs = append(attrs, semconv.NetworkTransportPipe)
	case TransportHTTP, TransportSSE:
		attrs = append(attrs, semconv.NetworkTransportTCP)
		if u, err := url.Parse(s.cfg.URL); err == nil {
			attrs = append(attrs, serverAttrs(u)...)
		}
	}
	return attrs
}

// measureCall records a tools/call's duration in
// mcp.client.operation.duration, when Options.MeterProvider is set.
func (s *server) measureCall(ctx context.Context, remote string, d time.Duration, err error, res *tool.Result) {
	mp := s.m.opts.MeterProvider
	if mp == nil {
		return
	}
	h, herr := mp.Meter(traceScope, metric.WithSchemaURL(semconv.SchemaURL)).Float64Histogram("mcp.client.operation.duration",
		metric.WithUnit("s"), metric.WithDescription("The duration of the MCP request as observed on the sender."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300))
	if herr != nil {
		s.m.log.Warn("mcp: no call duration metric", "err", herr)
		return
	}
	attrs := s.callAttrs(remote, nil)
	if et := callErrorType(res, err); et != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(et))
	}
	h.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
}

// serverAttrs are server.address and server.port of an endpoint.
func serverAttrs(u *url.URL) []attribute.KeyValue {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	kv := []attribute.KeyValue{semconv.ServerAddress(host)}
	if p, err := strconv.Atoi(port); err == nil {
		kv = append(kv, semconv.ServerPort(p))
	}
	return kv
}

// endCallSpan ends a tools/call span with its outcome (callErrorType).
func endCallSpan(span trace.Span, res *tool.Result, err error) {
	if span == nil {
		return
	}
	defer span.End()
	et := callErrorType(res, err)
	if et == "" {
		return
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(et))
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(et))
		span.SetStatus(codes.Error, werr.Message)
		return
	}
	span.SetStatus(codes.Error, et)
}

// callErrorType is a call's error.type: a JSON-RPC error's code,
// "tool_error" for a result the tool marked as an error, a kind of Go
// error; "" for a success.
func callErrorType(res *tool.Result, err error) string {
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		return strconv.FormatInt(werr.Code, 10)
	case err != nil:
		return goErrorType(err)
	case res != nil && res.IsError:
		return "tool_error"
	}
	return ""
}

func goErrorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, ErrUnknownTool):
		return "unknown_tool"
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return "transport"
	}
	return "_OTHER"
}

// traceMeta is the _meta of a request made under ctx: the W3C trace
// context of its span (traceparent, tracestate), where the MCP
// conventions carry it; nil when ctx has no span.
func traceMeta(ctx context.Context) sdk.Meta {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	m := make(sdk.Meta, len(c))
	for k, v := range c {
		m[k] = v
	}
	return m
}

// injectTrace adds the W3C trace context of ctx's span to an HTTP
// request's headers.
func injectTrace(ctx context.Context, h http.Header) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}
