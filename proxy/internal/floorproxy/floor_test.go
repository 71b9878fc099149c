package floorproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestForwardsToTarget: a request through the floor reaches the target
// with its path, and the target's answer comes back as it was.
func TestForwardsToTarget(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, r.Method+" "+r.URL.Path)
	}))
	defer backend.Close()
	target, _ := url.Parse(backend.URL)
	fl := httptest.NewServer(New(target))
	defer fl.Close()
	resp, err := http.Post(fl.URL+"/v1/chat/completions", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot || string(b) != "POST /v1/chat/completions" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q %v", resp.StatusCode, b, resp.Header)
	}
}
