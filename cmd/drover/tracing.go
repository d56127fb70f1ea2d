package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/drover-dev/drover/internal/config"
	"github.com/drover-dev/drover/tracing"
)

// tracingFlushTimeout bounds the export of the last spans at exit.
const tracingFlushTimeout = 5 * time.Second

// setupTracing builds the process's tracer from the tracing block: nil (off)
// unless tracing.enabled; otherwise spans go in batches to the OTLP/gRPC
// collector at tracing.endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT), sampled
// at tracing.sample_ratio for new traces and as the producer decided for
// traces that come with a message. stop flushes and shuts the exporter
// down; it is never nil.
func setupTracing(cfg *config.Config, log hclog.Logger) (tr *tracing.Tracer, stop func(), err error) {
	t := cfg.Tracing
	if !t.Enabled {
		return nil, func() {}, nil
	}
	var opts []otlptracegrpc.Option
	if t.Endpoint != "" {
		opts = append(opts, otlptracegrpc.WithEndpoint(t.Endpoint))
	}
	if t.Insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	// The exporter connects lazily: an unreachable collector costs dropped
	// spans (logged by the SDK), never a task.
	exp, err := otlptracegrpc.New(context.Background(), opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.SampleRatio))),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", t.ServiceName),
			attribute.String("service.version", version),
		)),
	)
	log.Info("tracing on", "endpoint", t.Endpoint, "sample_ratio", t.SampleRatio)
	return tracing.New(tp), func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("tracing: flush the last spans", "error", err)
		}
	}, nil
}
