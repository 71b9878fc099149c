package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
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
