package upstream_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// Every body size, around the transport's write buffer (4 KB) and its
// copy buffer (32 KB) too, reaches the backend byte for byte, with its
// Content-Length, on one kept-alive connection.
func TestBodiesArriveWhole(t *testing.T) {
	var conns atomic.Int32
	type received struct {
		body   []byte
		length int64
	}
	seen := make(chan received, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- received{b, r.ContentLength}
		w.Write([]byte(`{}`))
	}), &conns)
	pool := upstream.NewPool()
	for _, n := range []int{1, 100, 4000, 4096, 4097, 32 << 10, 32<<10 + 1, 54 << 10, 1 << 20} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte('a' + i%26)
		}
		resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/x", Body: body, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := <-seen; !bytes.Equal(got.body, body) || got.length != int64(n) {
			t.Fatalf("%d bytes sent: the backend read %d, Content-Length %d", n, len(got.body), got.length)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for one request at a time, want 1 kept alive", n)
	}
}

// The body goes from its own memory: no request allocates the 32 KB copy
// buffer the transport takes for a body it copies.
func TestBodyNotCopied(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race sync.Pool drops the HTTP server's pooled buffers, which drowns the count; TestDirectConnWritesTheBodyWhole holds there")
	}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	}), nil)
	pool := upstream.NewPool()
	call := upstream.Call{BaseURL: srv, Path: "/x", Body: bytes.Repeat([]byte("z"), 200<<10), Timeout: 5 * time.Second}
	do := func() {
		resp, err := pool.Do(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do()
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		do()
	}
	runtime.ReadMemStats(&after)
	// Both ends are in this process: the backend's reads and the
	// exchange's own objects (about 8 KB), but no copy buffer (32 KB;
	// with it, 40 KB a request).
	per := (after.TotalAlloc - before.TotalAlloc) / n
	if per > 24<<10 {
		t.Fatalf("%d bytes allocated per request of 200 KB, want under 24 KB (no copy buffer)", per)
	}
}

// newServer serves h on loopback, counting its connections in conns (when
// not nil).
func newServer(t *testing.T, h http.Handler, conns *atomic.Int32) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew && conns != nil {
			conns.Add(1)
		}
	}}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// Call.Sent runs once a call, after the body was written whole (in the
// transport's goroutine, maybe after Do returned), whatever the body's
// size.
func TestSentOnceTheBodyWasWritten(t *testing.T) {
	var conns atomic.Int32
	read := make(chan int, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		read <- len(b)
		w.Write([]byte(`{}`))
	}), &conns)
	pool := upstream.NewPool()
	for _, n := range []int{1, 4097, 54 << 10, 1 << 20} {
		sent := make(chan struct{}, 2)
		body := bytes.Repeat([]byte{'x'}, n)
		resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/x", Body: body, Timeout: 5 * time.Second,
			Sent: func() { sent <- struct{}{} }})
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := <-read; got != n {
			t.Fatalf("%d bytes sent, %d read", n, got)
		}
		select {
		case <-sent:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d bytes: Sent not called", n)
		}
		// The next call on the connection is written after this one's
		// write ended: a second Sent of this call would be in by then.
		resp, err = pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/x", Body: []byte("{}"), Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		<-read
		if len(sent) != 0 {
			t.Errorf("%d bytes: Sent called more than once", n)
		}
	}
}
