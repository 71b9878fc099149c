package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDiscoveryLogsChangesOnly: every round of discovery that finds what
// the last one found says so at debug level; a change is at info level.
func TestDiscoveryLogsChangesOnly(t *testing.T) {
	var window atomic.Int64
	window.Store(8192)
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"qwen3-coder","object":"model","owned_by":"vllm","max_model_len":%d}]}`, window.Load())
	}))
	t.Cleanup(vllm.Close)
	h := newHarness(t, harnessOptions{backendURL: vllm.URL + "/v1"})
	infoLines := func() int { return strings.Count(h.logs.String(), `level=INFO msg="backend discovered"`) }

	for range 3 {
		h.server.Discover(context.Background())
	}
	if n := infoLines(); n != 1 {
		t.Errorf("three rounds that found the same: %d lines at info, want 1\n%s", n, h.logs.String())
	}
	if n := strings.Count(h.logs.String(), `level=DEBUG msg="backend discovered"`); n != 2 {
		t.Errorf("%d repeats at debug level, want 2", n)
	}
	window.Store(16384)
	h.server.Discover(context.Background())
	if n := infoLines(); n != 2 || !strings.Contains(h.logs.String(), "context_window=16384") {
		t.Errorf("a changed window is not logged at info:\n%s", h.logs.String())
	}
}
