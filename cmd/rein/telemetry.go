package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/telemetry"
)

// tracing is the export of one setup's traces: the observer, the
// provider its spans and the MCP client's come from, and stop.
type tracing struct {
	obs  *telemetry.Observer
	tp   trace.TracerProvider
	stop func() error
}

// tracing starts, when the standard OTEL_* variables ask for an OTLP
// endpoint, the export of traces to it: an observer to register on the
// agent's hooks, the provider of its spans, and stop, which flushes and
// ends the export after the agent is closed. With no endpoint set it
// returns nil: nothing is exported and nothing is started.
func (a *app) tracing(ctx context.Context) (*tracing, error) {
	env := func(signal, base string) string {
		if v := a.getenv("OTEL_EXPORTER_OTLP_TRACES_" + signal); v != "" {
			return v
		}
		return a.getenv("OTEL_EXPORTER_OTLP_" + base)
	}
	endpoint := a.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	signalURL := endpoint != ""
	if !signalURL {
		endpoint = a.getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if endpoint == "" || strings.EqualFold(a.getenv("OTEL_SDK_DISABLED"), "true") || a.getenv("OTEL_TRACES_EXPORTER") == "none" {
		return nil, nil
	}
	headers, err := otlpHeaders(env("HEADERS", "HEADERS"))
	if err != nil {
		return nil, err
	}
	sampler, err := traceSampler(a.getenv("OTEL_TRACES_SAMPLER"), a.getenv("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	switch proto := env("PROTOCOL", "PROTOCOL"); proto {
	case "", "http/protobuf":
		if !signalURL {
			endpoint = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
		}
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithHeaders(headers))
	case "grpc":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint), otlptracegrpc.WithHeaders(headers))
	default:
		return nil, usageErrorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported; use http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: the OTLP exporter for %s: %w (check OTEL_EXPORTER_OTLP_ENDPOINT)", endpoint, err)
	}
	service := a.getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = "rein"
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		fmt.Fprintf(a.stderr, "rein: telemetry: %s\n", llm.Redact(err.Error()))
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sampler),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service), semconv.ServiceVersion(versionString()))))
	opts := &telemetry.Options{TracerProvider: tp}
	// The variable the GenAI instrumentations share; captured content is
	// still scrubbed of credentials.
	if strings.EqualFold(a.getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true") {
		opts.CaptureContent, opts.Redact = true, telemetry.RedactAll(llm.Redact)
	}
	obs := telemetry.New(opts)
	stop := func() error {
		obs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("telemetry: export the last spans to %s: %w", endpoint, err)
		}
		return nil
	}
	return &tracing{obs: obs, tp: tp, stop: stop}, nil
}

// otlpHeaders parses OTEL_EXPORTER_OTLP_HEADERS: key=value pairs, comma
// separated, values URL-encoded. Values are never echoed: they are
// usually credentials.
func otlpHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usageErrorf("OTEL_EXPORTER_OTLP_HEADERS has an entry that is not key=value (the header %q); write it as key1=value1,key2=value2", k)
		}
		val, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, usageErrorf("OTEL_EXPORTER_OTLP_HEADERS: the value of %q is not URL-encoded; encode it with %%XX escapes", k)
		}
		h[k] = val
	}
	return h, nil
}

// traceSampler reads OTEL_TRACES_SAMPLER and its argument; empty means
// parentbased_always_on, the specification's default.
func traceSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, usageErrorf("OTEL_TRACES_SAMPLER_ARG=%q is not a ratio; give a number from 0 to 1", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, usageErrorf("OTEL_TRACES_SAMPLER=%q is not supported; use always_on, always_off, traceidratio or their parentbased_ forms", name)
}
