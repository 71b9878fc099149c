package floorproxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
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

// TestStreamsThroughTheFloorEnd: every stream through the floor arrives
// whole. A backend that answers as soon as it has read the body made
// ReverseProxy cut 3-4 % of them (go.dev/issue/40747): writing the
// answer's head closes the inbound body, and the transport's last read
// of it, after its announced length, then failed and took the backend
// connection down under the answer.
func TestStreamsThroughTheFloorEnd(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 16 {
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
		}
	}))
	defer backend.Close()
	target, _ := url.Parse(backend.URL)
	fl := httptest.NewServer(New(target))
	defer fl.Close()
	body := strings.Repeat("x", 54<<10)
	failed := 0
	for range 500 {
		resp, err := http.Post(fl.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !strings.HasSuffix(string(b), "data: {\"i\":15}\n\n") {
			failed++
		}
	}
	if failed > 0 {
		t.Fatalf("%d of 500 streams cut", failed)
	}
}

// endsBody fails any read once its n bytes were read: the inbound body
// closed under the transport.
type endsBody struct{ n int }

func (b *endsBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errors.New("http: invalid Read on closed Body")
	}
	k := min(len(p), b.n)
	b.n -= k
	return k, nil
}

func (b *endsBody) Close() error { return nil }

// The floor forwards a body of announced length without reading the
// inbound body past it: that read is the one that fails once the answer's
// head closed it.
func TestForwardedBodyEndsAtItsLength(t *testing.T) {
	target, _ := url.Parse("http://127.0.0.1:1")
	in := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	in.Body, in.ContentLength = &endsBody{n: 5000}, 5000
	pr := &httputil.ProxyRequest{In: in, Out: in.Clone(in.Context())}
	New(target).Rewrite(pr)
	n, err := io.Copy(io.Discard, pr.Out.Body)
	if err != nil || n != 5000 {
		t.Fatalf("read %d bytes, %v; want 5000 and the end", n, err)
	}
	if k, err := pr.Out.Body.Read(make([]byte, 8)); k != 0 || err != io.EOF {
		t.Fatalf("a read after the end: %d, %v; want 0, EOF", k, err)
	}
}
