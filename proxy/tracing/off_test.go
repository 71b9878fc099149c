package tracing

import (
	"context"
	"net/http"
	"os"
	"testing"
)

// TestOffCostsNothing: with no OTLP endpoint in the environment New returns
// nil, and a request's tracing calls on the nil Tracer allocate nothing
// (the only work left is their nil checks).
func TestOffCostsNothing(t *testing.T) {
	tr, err := New(context.Background(), func(string) (string, bool) { return "", false }, "dragoman-test", "test")
	if err != nil || tr != nil {
		t.Fatalf("New without an endpoint: %v, %v; want nil (off)", tr, err)
	}
	ctx, h := context.Background(), http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	if n := testing.AllocsPerRun(1000, func() { RequestCalls(tr, ctx, h) }); n != 0 {
		t.Errorf("tracing off: %v allocations per request, want 0", n)
	}
	if err := tr.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown of the nil Tracer: %v", err)
	}
	// The same calls with tracing on do allocate: the measure can fail.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	on, err := New(ctx, os.LookupEnv, "dragoman-test", "test")
	if err != nil || on == nil {
		t.Fatalf("New with an endpoint: %v, %v", on, err)
	}
	defer func() {
		sctx, cancel := context.WithCancel(ctx)
		cancel() // nothing to deliver: do not wait for the unreachable collector
		on.Shutdown(sctx)
	}()
	n := testing.AllocsPerRun(100, func() { RequestCalls(on, ctx, h) })
	if n == 0 {
		t.Error("tracing on: 0 allocations per request: the measure of the off path proves nothing")
	}
	t.Logf("allocations per request: tracing off 0, on %.0f", n)
}

func BenchmarkOff(b *testing.B) {
	ctx, h := context.Background(), http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		RequestCalls(nil, ctx, h)
	}
}
