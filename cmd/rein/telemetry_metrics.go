package main

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// newMeterProvider exports metrics to the OTLP exporter of t through a
// periodic reader. Its Shutdown collects and exports once more, so a run
// shorter than the interval still exports everything it recorded.
func newMeterProvider(ctx context.Context, t *otlpTarget, res *resource.Resource, reader []sdkmetric.PeriodicReaderOption) (*sdkmetric.MeterProvider, error) {
	var exp sdkmetric.Exporter
	var err error
	if t.grpc {
		exp, err = otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(t.endpoint), otlpmetricgrpc.WithHeaders(t.headers))
	} else {
		exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(t.endpoint), otlpmetrichttp.WithHeaders(t.headers))
	}
	if err != nil {
		return nil, t.exporterError(err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, reader...)), sdkmetric.WithResource(res)), nil
}

// metricReaderOptions reads OTEL_METRIC_EXPORT_INTERVAL and
// OTEL_METRIC_EXPORT_TIMEOUT, both in milliseconds; unset leaves the
// specification's defaults (60000 and 30000).
func (a *app) metricReaderOptions() ([]sdkmetric.PeriodicReaderOption, error) {
	var opts []sdkmetric.PeriodicReaderOption
	interval, err := a.envMillis("OTEL_METRIC_EXPORT_INTERVAL")
	if err != nil {
		return nil, err
	}
	if interval > 0 {
		opts = append(opts, sdkmetric.WithInterval(interval))
	}
	timeout, err := a.envMillis("OTEL_METRIC_EXPORT_TIMEOUT")
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		opts = append(opts, sdkmetric.WithTimeout(timeout))
	}
	return opts, nil
}

// envMillis is the variable called name as a positive number of
// milliseconds; 0 when it is unset.
func (a *app) envMillis(name string) (time.Duration, error) {
	v := a.getenv(name)
	if v == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 || ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return 0, usageErrorf("%s=%q is not a number of milliseconds; give a whole number above 0, e.g. %s=60000", name, v, name)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
