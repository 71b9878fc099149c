package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	trace "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/dragoman-dev/dragoman/proxy/tracing"
)

// otlpReceiver is an OTLP/HTTP trace receiver in the test's process.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*trace.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want protobuf on /v1/traces", http.StatusBadRequest)
		return
	}
	var req collector.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	b, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

// otlpTracer is a tracer that exports to a receiver in the test's process
// (OTEL_EXPORTER_OTLP_ENDPOINT set to it until the test ends).
func otlpTracer(t *testing.T) (*otlpReceiver, *tracing.Tracer) {
	t.Helper()
	recv := &otlpReceiver{}
	collectorSrv := httptest.NewServer(recv)
	t.Cleanup(collectorSrv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collectorSrv.URL)
	tracer, err := tracing.New(context.Background(), os.LookupEnv, "dragoman-test", "test")
	if err != nil || tracer == nil {
		t.Fatalf("tracing.New: %v, %v", tracer, err)
	}
	return recv, tracer
}

func attrs(s *trace.Span) map[string]*common.AnyValue {
	out := map[string]*common.AnyValue{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestTracingStreamSpans: with OTEL_EXPORTER_OTLP_ENDPOINT set, a streamed
// Messages request produces a server span and a client span with the GenAI
// attributes, exported over OTLP/HTTP, and the backend receives the client
// span's traceparent. No prompt text is in any span.
func TestTracingStreamSpans(t *testing.T) {
	recv, tracer := otlpTracer(t)
	h := newHarness(t, harnessOptions{tracer: tracer})
	const prompt = "the secret plan is in the prompt"
	resp := h.post("/v1/messages", `{"model":"claude-opus-5-5","max_tokens":77,"stream":true,"messages":[{"role":"user","content":"`+prompt+`"}]}`)
	body := drain(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "message_stop") {
		t.Fatalf("stream: %d %s", resp.StatusCode, body)
	}
	if err := tracer.Shutdown(context.Background()); err != nil {
		t.Fatalf("flushing the spans: %v", err)
	}
	recv.mu.Lock()
	spans := recv.spans
	recv.mu.Unlock()
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2: %v", len(spans), spans)
	}
	var server, client *trace.Span
	for _, s := range spans {
		switch s.Kind {
		case trace.Span_SPAN_KIND_SERVER:
			server = s
		case trace.Span_SPAN_KIND_CLIENT:
			client = s
		}
	}
	if server == nil || client == nil {
		t.Fatalf("want a server span and a client span, got %v", spans)
	}
	if server.Name != "chat claude-opus-5-5" || client.Name != "chat qwen3-coder" {
		t.Errorf("span names %q, %q", server.Name, client.Name)
	}
	if string(client.TraceId) != string(server.TraceId) || string(client.ParentSpanId) != string(server.SpanId) {
		t.Error("the client span is not the server span's child")
	}
	sa, ca := attrs(server), attrs(client)
	str := func(m map[string]*common.AnyValue, k string) string { return m[k].GetStringValue() }
	num := func(m map[string]*common.AnyValue, k string) int64 { return m[k].GetIntValue() }
	for _, c := range []struct {
		got, want any
		what      string
	}{
		{str(sa, "gen_ai.operation.name"), "chat", "server gen_ai.operation.name"},
		{str(sa, "gen_ai.request.model"), "claude-opus-5-5", "server gen_ai.request.model"},
		{str(sa, "gen_ai.response.model"), "claude-opus-5-5", "server gen_ai.response.model"},
		{num(sa, "gen_ai.request.max_tokens"), int64(77), "server gen_ai.request.max_tokens"},
		{num(sa, "dragoman.retries"), int64(0), "server dragoman.retries"},
		{str(sa, "dragoman.backend"), strings.TrimPrefix(h.stubURL, "http://") + "/qwen3-coder", "server dragoman.backend"},
		{num(sa, "http.response.status_code"), int64(200), "server status"},
		{str(ca, "gen_ai.operation.name"), "chat", "client gen_ai.operation.name"},
		{str(ca, "gen_ai.request.model"), "qwen3-coder", "client gen_ai.request.model"},
		{str(ca, "gen_ai.response.model"), "qwen3-coder", "client gen_ai.response.model"},
		{num(ca, "dragoman.attempt"), int64(0), "client dragoman.attempt"},
		{str(ca, "dragoman.backend"), strings.TrimPrefix(h.stubURL, "http://") + "/qwen3-coder", "client dragoman.backend"},
		{num(ca, "http.response.status_code"), int64(200), "client status"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	for _, m := range []map[string]*common.AnyValue{sa, ca} {
		if num(m, "gen_ai.usage.input_tokens") <= 0 || num(m, "gen_ai.usage.output_tokens") <= 0 {
			t.Errorf("usage missing: %v", m)
		}
		if m["dragoman.time_to_first_token_seconds"].GetDoubleValue() <= 0 {
			t.Errorf("time to first token missing: %v", m)
		}
	}
	for _, s := range spans {
		if strings.Contains(s.String(), "secret plan") || strings.Contains(s.String(), backendKey) || strings.Contains(s.String(), clientKey) {
			t.Errorf("prompt text or a key in span %s", s.Name)
		}
	}
	// The backend got the client span's context.
	var traceparent string
	for _, r := range h.backend.Requests() {
		if r.Path == "/v1/chat/completions" {
			traceparent = r.Header.Get("Traceparent")
		}
	}
	if want := fmt.Sprintf("00-%x-%x-01", client.TraceId, client.SpanId); traceparent != want {
		t.Errorf("backend traceparent %q, want %q", traceparent, want)
	}
}

// TestTracingOffSendsNoTraceparent: without an OTLP endpoint, New returns
// no tracer and the backend sees no trace header.
func TestTracingOffSendsNoTraceparent(t *testing.T) {
	for _, v := range tracing.EndpointVariables {
		t.Setenv(v, "")
	}
	tracer, err := tracing.New(context.Background(), os.LookupEnv, "dragoman-test", "test")
	if tracer != nil || err != nil {
		t.Fatalf("tracing.New with no endpoint: %v, %v", tracer, err)
	}
	h := newHarness(t, harnessOptions{tracer: tracer})
	resp := h.post("/v1/messages", `{"model":"claude-opus-5-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)
	resp.Body.Close()
	for _, r := range h.backend.Requests() {
		if r.Header.Get("Traceparent") != "" {
			t.Errorf("backend got a traceparent with tracing off")
		}
	}
}
