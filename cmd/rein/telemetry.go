package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/telemetry"
)

// tracing is the export of one setup's telemetry: the observer, the
// providers its spans and metrics come from (and the MCP client's; nil
// when that signal is off), and stop.
type tracing struct {
	obs  *telemetry.Observer
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	stop func() error
}

// tracing starts, when the standard OTEL_* variables ask for an OTLP
// endpoint, the export of traces and metrics to it: an observer to
// register on the agent's hooks, the providers of its spans and
// metrics, and stop, which flushes and ends the export after the agent
// is closed. With no endpoint set, or both signals turned off, it
// returns nil: nothing is exported and nothing is started.
func (a *app) tracing(ctx context.Context) (*tracing, error) {
	if strings.EqualFold(a.getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	traces, err := a.otlpTarget("TRACES")
	if err != nil {
		return nil, err
	}
	metrics, err := a.otlpTarget("METRICS")
	if err != nil {
		return nil, err
	}
	if traces == nil && metrics == nil {
		return nil, nil
	}
	// Every setting is checked before anything starts.
	sampler, err := traceSampler(a.getenv("OTEL_TRACES_SAMPLER"), a.getenv("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		return nil, err
	}
	reader, err := a.metricReaderOptions()
	if err != nil {
		return nil, err
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		fmt.Fprintf(a.stderr, "rein: telemetry: %s\n", llm.Redact(err.Error()))
	}))
	res := a.otelResource()
	t := &tracing{}
	var shutdowns []func(context.Context) error
	opts := &telemetry.Options{}
	if traces != nil {
		tp, err := newTracerProvider(ctx, traces, res, sampler)
		if err != nil {
			return nil, err
		}
		t.tp, opts.TracerProvider = tp, tp
		shutdowns = append(shutdowns, traces.last(tp.Shutdown))
	}
	if metrics != nil {
		mp, err := newMeterProvider(ctx, metrics, res, reader)
		if err != nil {
			shutdownAll(shutdowns)
			return nil, err
		}
		t.mp, opts.MeterProvider = mp, mp
		shutdowns = append(shutdowns, metrics.last(mp.Shutdown))
	}
	// The variable the GenAI instrumentations share; captured content is
	// still scrubbed of credentials.
	if strings.EqualFold(a.getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true") {
		opts.CaptureContent, opts.Redact = true, telemetry.RedactAll(llm.Redact)
	}
	t.obs = telemetry.New(opts)
	t.stop = func() error {
		t.obs.Close()
		return shutdownAll(shutdowns)
	}
	return t, nil
}

// shutdownAll flushes and ends every export at once, within one
// deadline, so a collector that is down delays the exit only once.
func shutdownAll(shutdowns []func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs := make([]error, len(shutdowns))
	var wg sync.WaitGroup
	for i, f := range shutdowns {
		wg.Go(func() { errs[i] = f(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// otlpTarget is where one signal is exported.
type otlpTarget struct {
	signal   string // "traces" or "metrics"
	endpoint string // the URL the exporter is given
	grpc     bool
	headers  map[string]string
}

// otlpTarget reads the OTEL_EXPORTER_OTLP_ variables of one signal
// (TRACES or METRICS), a signal's own variable over the general one. It
// returns nil when no endpoint is set or OTEL_<SIGNAL>_EXPORTER is none.
func (a *app) otlpTarget(signal string) (*otlpTarget, error) {
	switch v := a.getenv("OTEL_" + signal + "_EXPORTER"); v {
	case "none":
		return nil, nil
	case "", "otlp":
	default:
		return nil, usageErrorf("OTEL_%s_EXPORTER=%q is not supported; use otlp or none", signal, v)
	}
	// env is the value of a signal's variable or else the general one,
	// and the name it was read from.
	env := func(suffix string) (string, string) {
		name := "OTEL_EXPORTER_OTLP_" + signal + "_" + suffix
		if v := a.getenv(name); v != "" {
			return v, name
		}
		name = "OTEL_EXPORTER_OTLP_" + suffix
		return a.getenv(name), name
	}
	t := &otlpTarget{signal: strings.ToLower(signal)}
	endpoint, from := env("ENDPOINT")
	if endpoint == "" {
		return nil, nil
	}
	var err error
	if t.headers, err = otlpHeaders(env("HEADERS")); err != nil {
		return nil, err
	}
	switch proto, name := env("PROTOCOL"); proto {
	case "", "http/protobuf":
		// The general endpoint is a base URL: each signal has its path.
		if from == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			endpoint = strings.TrimSuffix(endpoint, "/") + "/v1/" + t.signal
		}
	case "grpc":
		t.grpc = true
	default:
		return nil, usageErrorf("%s=%q is not supported; use http/protobuf or grpc", name, proto)
	}
	t.endpoint = endpoint
	return t, nil
}

// exporterError is the error of an exporter that could not be made.
func (t *otlpTarget) exporterError(err error) error {
	return fmt.Errorf("telemetry: the OTLP %s exporter for %s: %w (check OTEL_EXPORTER_OTLP_ENDPOINT)", t.signal, t.endpoint, err)
}

// last wraps shutdown, the export of what t's signal still holds, so
// its error says where the export went.
func (t *otlpTarget) last(shutdown func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := shutdown(ctx); err != nil {
			return fmt.Errorf("telemetry: export the last %s to %s: %w", t.signal, t.endpoint, err)
		}
		return nil
	}
}

// otelResource is the service every signal is exported as:
// OTEL_SERVICE_NAME (rein by default) at this build's version.
func (a *app) otelResource() *resource.Resource {
	service := a.getenv("OTEL_SERVICE_NAME")
	if service == "" {
		service = "rein"
	}
	return resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service), semconv.ServiceVersion(versionString()))
}

// otlpHeaders parses the headers variable called name: key=value pairs,
// comma separated, values URL-encoded. Values are never echoed: they are
// usually credentials.
func otlpHeaders(s, name string) (map[string]string, error) {
	h := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usageErrorf("%s has an entry that is not key=value (the header %q); write it as key1=value1,key2=value2", name, k)
		}
		val, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, usageErrorf("%s: the value of %q is not URL-encoded; encode it with %%XX escapes", name, k)
		}
		h[k] = val
	}
	return h, nil
}
