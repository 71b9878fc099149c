package server_test

import (
	"io"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestMetricsCountTokensBackend: a count_tokens request is labelled with
// the backend that counted the tokens (its /tokenize), or backend="estimate"
// when the proxy answered with its own estimate, never "unknown".
func TestMetricsCountTokensBackend(t *testing.T) {
	for _, tokenize := range []bool{true, false} {
		h := newHarness(t, harnessOptions{stub: stub.Options{Tokenize: tokenize}, metrics: true})
		resp := h.post("/v1/messages/count_tokens", `{"model":"local-model","messages":[{"role":"user","content":"count these five words"}]}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		source := resp.Header.Get("Dragoman-Token-Count")
		if resp.StatusCode != 200 || source != map[bool]string{true: "backend", false: "estimate"}[tokenize] {
			t.Fatalf("tokenize=%v: %d, counted by %q", tokenize, resp.StatusCode, source)
		}
		mfs := scrape(t, h.proxy.URL)
		var backend string // the one backend's name, as /backends and the metrics give it
		for k := range series(mfs, "dragoman_backend_up") {
			backend = strings.TrimPrefix(k, "backend=")
		}
		want := backend
		if !tokenize {
			want = "estimate"
		}
		got := map[string]float64{}
		for k, v := range series(mfs, "dragoman_requests_total") {
			if strings.HasPrefix(k, "endpoint=count_tokens,") && v > 0 {
				got[k] = v
			}
		}
		key := "endpoint=count_tokens,alias=local-model,backend=" + want + ",status=200,error_type=none,kind=main"
		if len(got) != 1 || got[key] != 1 {
			t.Errorf("tokenize=%v: count_tokens requests %v, want {%s: 1}", tokenize, got, key)
		}
	}
}
