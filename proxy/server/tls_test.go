package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestTLSBackend: a backend reached over TLS (httptest.NewTLSServer, its
// certificate trusted by the pool) is served as a plain-HTTP one is: JSON
// answers, streams, a retry before the first byte, and the timeouts.
func TestTLSBackend(t *testing.T) {
	const said = "Hello from stub-backend. You said: "
	t.Run("json", func(t *testing.T) {
		h := newHarness(t, harnessOptions{tls: true})
		if !strings.HasPrefix(h.stubURL, "https://") {
			t.Fatalf("the backend is at %s, not over TLS", h.stubURL)
		}
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			resp, b := h.do(http.MethodPost, path, goodMessages, nil, false)
			if resp.StatusCode != 200 || !strings.Contains(string(b), said+"still serving") {
				t.Errorf("%s: %d %s", path, resp.StatusCode, b)
			}
		}
		if n := len(h.backend.Requests()); n != 2 {
			t.Errorf("the TLS backend saw %d requests, want 2", n)
		}
	})
	t.Run("stream", func(t *testing.T) {
		h := newHarness(t, harnessOptions{tls: true})
		events := streamEvents(t, h, "/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"over tls"}]}`)
		evs, _ := ssecheck.Parse(events)
		if got := ssecheck.Text(evs); got != said+"over tls" {
			t.Errorf("messages stream text %q", got)
		}
		resp := h.post("/v1/chat/completions", `{"model":"local-model","stream":true,"messages":[{"role":"user","content":"over tls"}]}`)
		b := readEvents(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || !strings.Contains(string(b), `"content":"Hello "`) {
			t.Errorf("chat stream: %d %s", resp.StatusCode, b)
		}
	})
	t.Run("retry before the first byte", func(t *testing.T) {
		const retries = 2
		h := newHarness(t, harnessOptions{tls: true, stub: stub.Options{LoadingRequests: retries}})
		resp, b := h.do(http.MethodPost, "/v1/messages", goodMessages, nil, false)
		if resp.StatusCode != 200 || !strings.Contains(string(b), said+"still serving") {
			t.Errorf("%d %s", resp.StatusCode, b)
		}
		if n := len(h.backend.Requests()); n != retries+1 {
			t.Errorf("the TLS backend saw %d requests, want %d (%d answered Loading model, then the answer)", n, retries+1, retries)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		h := newHarness(t, harnessOptions{tls: true, stub: stub.Options{FirstTokenDelay: 30 * time.Second},
			extraYAML: "      timeout: 0.3\n      stream_timeout: 0.3\n"})
		for _, tc := range []struct{ path, body, typ, limit string }{
			{"/v1/messages", goodMessages, "api_error", "within 300ms (proxy_params.timeout)"},
			{"/v1/chat/completions", `{"model":"local-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "timeout", "within 300ms (proxy_params.stream_timeout)"},
		} {
			h.backend.Reset()
			resp, b := h.do(http.MethodPost, tc.path, tc.body, nil, false)
			if resp.StatusCode != 504 {
				t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, b)
			}
			checkErrorShape(t, tc.path, b, tc.typ, tc.limit)
			waitCancelled(t, h, 1)
		}
	})
}
