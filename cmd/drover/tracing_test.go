package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// collector is an OTLP/gRPC trace endpoint that keeps the span names and
// the traceparent its tasks saw.
type collector struct {
	coltrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string][]byte // span name → trace id
}

func (c *collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans[s.Name] = s.TraceId
			}
		}
	}
	return &coltrace.ExportTraceServiceResponse{}, nil
}

func (c *collector) traceOf(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.spans[name]
	return id, ok
}

// TestWorkerExportsTaskSpansToTheConfiguredCollector: the tracing block of
// the configuration turns on OTLP export from a real worker; its task span
// reaches the collector and the task's process sees the same trace.
func TestWorkerExportsTaskSpansToTheConfiguredCollector(t *testing.T) {
	col := &collector{spans: map[string][]byte{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(gs, col)
	go gs.Serve(ln)
	defer gs.Stop()

	c := newCluster(t)
	c.env = withEnv(c.env, "DROVER_TRACING_ENABLED=true", "DROVER_TRACING_ENDPOINT="+ln.Addr().String(), "DROVER_TRACING_INSECURE=true")
	out := t.TempDir() + "/traceparent"
	c.ok("ctl", "queue", "create", "traced", "--task", fmt.Sprintf(`*=/bin/sh -c 'printf %%s "$TRACEPARENT" > %s'`, out))
	c.startWorker("w1")
	c.ok("ctl", "enqueue", "traced", "t")
	var traceID []byte
	eventually(t, 60*time.Second, func() error {
		id, ok := col.traceOf("process traced")
		if !ok {
			return fmt.Errorf("no span \"process traced\" at the collector yet")
		}
		traceID = id
		return nil
	})
	tp := strings.Split(string(mustRead(t, out)), "-")
	if len(tp) != 4 || tp[1] != fmt.Sprintf("%x", traceID) {
		t.Fatalf("want the task's TRACEPARENT in trace %x, have %q", traceID, tp)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
