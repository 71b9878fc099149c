package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
)

// TestWrongKeysSlowed: after 10 wrong keys in a minute from one address,
// the API answers 429 rate_limit_error with Retry-After in the caller's
// format, the master key too (a right guess looks like a wrong one);
// a minute later the master key works again.
func TestWrongKeysSlowed(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	lim := authlimit.New(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	h := newHarness(t, harnessOptions{authLim: lim})
	for i := range 10 {
		if resp, _ := h.do(http.MethodPost, "/v1/messages", goodMessages, []string{"Authorization", "Bearer wrong-" + strconv.Itoa(i)}, false); resp.StatusCode != 401 {
			t.Fatalf("wrong key %d: %d", i, resp.StatusCode)
		}
	}
	for _, c := range []struct{ path, body, errType string }{
		{"/v1/messages", goodMessages, `"type":"error","error":{"type":"rate_limit_error"`},
		{"/v1/chat/completions", goodChat, `"type":"rate_limit_error"`},
	} {
		resp, b := h.do(http.MethodPost, c.path, c.body, nil, false)
		if n, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != 429 || n < 1 || n > 60 || !strings.Contains(string(b), c.errType) {
			t.Errorf("%s with the master key after 10 wrong ones: %d %q %s", c.path, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
	// A key of the per-user shape is no guess at the master key: neither
	// counted nor refused (a client whose new key is not known yet).
	if resp, _ := h.do(http.MethodPost, "/v1/messages", goodMessages, []string{"Authorization", "Bearer sk-dm-not-known-yet"}, false); resp.StatusCode != 401 {
		t.Errorf("a per-user-shaped key while the address is held back: %d", resp.StatusCode)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	h.stillServing()
}
