package main

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newTracerProvider batches spans to the OTLP exporter of t. Its
// Shutdown exports the last spans.
func newTracerProvider(ctx context.Context, t *otlpTarget, res *resource.Resource, sampler sdktrace.Sampler) (*sdktrace.TracerProvider, error) {
	var exp sdktrace.SpanExporter
	var err error
	if t.grpc {
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(t.endpoint), otlptracegrpc.WithHeaders(t.headers))
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(t.endpoint), otlptracehttp.WithHeaders(t.headers))
	}
	if err != nil {
		return nil, t.exporterError(err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sampler), sdktrace.WithResource(res)), nil
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
