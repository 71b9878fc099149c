package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShutdownAnswersARequestReadLate: a connection accepted before the
// stop whose request comes only after it is answered (200), not closed
// unanswered as http.Server.Shutdown alone does.
func TestShutdownAnswersARequestReadLate(t *testing.T) {
	conns := newConnTracker()
	srv := &http.Server{
		Handler:     conns.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })),
		ConnContext: conns.ConnContext,
		ConnState:   conns.ConnState,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(5 * time.Second); conns.waitingConns() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server did not accept the connection")
		}
	}
	ln.Close() // the listener stopped accepting; the connection was accepted before

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conns.Wait(ctx)
		stopped <- srv.Shutdown(ctx)
	}()
	time.Sleep(100 * time.Millisecond) // the stop has begun; the request comes now
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the request read after the stop began got no answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestGraceOverWithASilentConnection: a proxy stopped while a client holds
// a connection that sent no request says so when the grace ends, and not
// that requests were still in flight (there were none); it exits 0 when
// the grace ends.
func TestGraceOverWithASilentConnection(t *testing.T) {
	t.Parallel()
	p := startProxy(t, serveBackend(t, http.NotFoundHandler()), "--grace", "1s", "--drain-delay", "0s")
	c, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	time.Sleep(100 * time.Millisecond) // the server takes the connection up
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.stderr.String())
	}
	logs := p.stderr.String()
	if strings.Contains(logs, "requests still in flight") {
		t.Errorf("the log says requests were in flight where none was:\n%s", logs)
	}
	if !strings.Contains(logs, `msg="grace period over with no request in flight; closing connections that sent no request" active=0 connections_without_request=1`) {
		t.Errorf("the log does not say that a connection without a request was closed:\n%s", logs)
	}
}

// TestGraceOverSaysWhatWasLeft: each mix of requests in flight and
// connections without a request has its own words.
func TestGraceOverSaysWhatWasLeft(t *testing.T) {
	for _, c := range []struct {
		requests int64
		silent   int
		want     string
	}{
		{0, 0, "grace period over with no request in flight; closing the connections left"},
		{0, 2, "grace period over with no request in flight; closing connections that sent no request"},
		{3, 0, "grace period over with requests still in flight; closing them"},
		{3, 2, "grace period over with requests still in flight, and connections that sent no request; closing them"},
	} {
		msg, attrs := graceOver(c.requests, c.silent)
		if msg != c.want {
			t.Errorf("%d requests, %d silent: %q, want %q", c.requests, c.silent, msg, c.want)
		}
		if want := []any{"active", c.requests, "connections_without_request", c.silent}; fmt.Sprint(attrs) != fmt.Sprint(want) {
			t.Errorf("%d requests, %d silent: attrs %v", c.requests, c.silent, attrs)
		}
	}
}
