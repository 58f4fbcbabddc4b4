package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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
	s.mu.Lock()
	protocol := s.protocol
	s.mu.Unlock()
	attrs := []attribute.KeyValue{semconv.McpMethodNameToolsCall, semconv.GenAIToolName(remote), semconv.GenAIOperationNameExecuteTool,
		semconv.JSONRPCProtocolVersion("2.0"), attribute.String("rein.mcp.server", s.cfg.Name)}
	if protocol != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(protocol))
	}
	if id := cs.ID(); id != "" {
		attrs = append(attrs, semconv.McpSessionID(id))
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
	return tp.Tracer(traceScope, trace.WithSchemaURL(semconv.SchemaURL)).Start(ctx, "tools/call "+remote,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
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

// endCallSpan ends a tools/call span with its outcome: a JSON-RPC error's
// code, "tool_error" for a result the tool marked as an error, the Go
// error's type otherwise.
func endCallSpan(span trace.Span, res *tool.Result, err error) {
	if span == nil {
		return
	}
	defer span.End()
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		code := strconv.FormatInt(werr.Code, 10)
		span.SetAttributes(semconv.RPCResponseStatusCodeKey.String(code), semconv.ErrorTypeKey.String(code))
		span.SetStatus(codes.Error, werr.Message)
	case err != nil:
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, "the call failed")
	case res != nil && res.IsError:
		span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		span.SetStatus(codes.Error, "tool_error")
	}
}

func errorType(err error) string {
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
