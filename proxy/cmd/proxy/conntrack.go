package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// connTracker knows, for a graceful stop, which connections have not had a
// request handled yet and how many handlers run. http.Server.Shutdown
// closes a connection whose request it reads after Shutdown began without
// answering it (its client sees the connection end, EOF): a connection
// accepted before the listener closed whose request had not been read yet
// lost its request. So the proxy calls Shutdown only once every accepted
// connection has had its request handled (or closed), and no handler runs.
type connTracker struct {
	mu       sync.Mutex
	waiting  map[net.Conn]struct{} // accepted, no request handled yet
	inflight int                   // handlers running
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
		t.mu.Lock()
		delete(t.waiting, c)
		t.mu.Unlock()
	}
}

// Handler counts the handlers of h that run, and notes that their
// connections had a request handled.
func (t *connTracker) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		t.mu.Lock()
		delete(t.waiting, c)
		t.inflight++
		t.mu.Unlock()
		defer func() {
			t.mu.Lock()
			t.inflight--
			t.mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	})
}

// idle reports whether no connection waits for its request to be handled
// and no handler runs.
func (t *connTracker) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiting) == 0 && t.inflight == 0
}

// Wait returns once idle, or when ctx ends (false). Call it after the
// listener stopped accepting: a connection that never sends a request is
// closed by the server's ReadHeaderTimeout.
func (t *connTracker) Wait(ctx context.Context) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !t.idle() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
