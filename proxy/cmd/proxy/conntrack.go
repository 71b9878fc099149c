package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// connTracker knows, for a graceful stop, which accepted connections have
// not had a request handled yet. http.Server.Shutdown closes a connection
// whose request it reads after Shutdown began without answering it (its
// client sees the connection end, EOF): a connection accepted before the
// listener closed whose request had not been read yet lost its request.
// So the proxy calls Shutdown only once every accepted connection has had
// a request reach its handler, or closed; Shutdown then waits for the
// handlers that run.
type connTracker struct {
	mu      sync.Mutex
	waiting map[net.Conn]struct{}
}

type connKey struct{}

func newConnTracker() *connTracker {
	return &connTracker{waiting: map[net.Conn]struct{}{}}
}

// ConnContext is the server's ConnContext: it notes each accepted
// connection (before the server's Accept loop takes the next one).
func (t *connTracker) ConnContext(ctx context.Context, c net.Conn) context.Context {
	t.mu.Lock()
	t.waiting[c] = struct{}{}
	t.mu.Unlock()
	return context.WithValue(ctx, connKey{}, c)
}

// ConnState is the server's ConnState hook: a connection closed before a
// request was handled waits no more.
func (t *connTracker) ConnState(c net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		t.forget(c)
	}
}

// Handler notes that the connection of each request h handles had one
// reach its handler.
func (t *connTracker) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
			t.forget(c)
		}
		h.ServeHTTP(w, r)
	})
}

func (t *connTracker) forget(c net.Conn) {
	t.mu.Lock()
	delete(t.waiting, c)
	t.mu.Unlock()
}

func (t *connTracker) waitingConns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiting)
}

// Wait returns once no accepted connection waits for its first request
// to reach a handler, or when ctx ends. Call it after the listener
// stopped accepting: a connection that never sends a request is closed by
// the server's ReadHeaderTimeout.
func (t *connTracker) Wait(ctx context.Context) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for t.waitingConns() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// graceOver is the warning logged when the grace period ends before the
// server stopped, with its attributes: what was left, as it was. requests
// are the API requests in flight; silent the accepted connections that
// sent no request yet (a client holding a connection open is no request
// in flight).
func graceOver(requests int64, silent int) (string, []any) {
	attrs := []any{"active", requests, "connections_without_request", silent}
	switch {
	case requests > 0 && silent > 0:
		return "grace period over with requests still in flight, and connections that sent no request; closing them", attrs
	case requests > 0:
		return "grace period over with requests still in flight; closing them", attrs
	case silent > 0:
		return "grace period over with no request in flight; closing connections that sent no request", attrs
	default:
		return "grace period over with no request in flight; closing the connections left", attrs
	}
}
