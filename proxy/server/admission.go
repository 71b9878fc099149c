package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Admission bounds the bytes of the request bodies the proxy holds at once
// between the start of their read and the backend's answer (the body is
// kept until then: a retry translates it again). When a thousand coding
// clients send their 54 KB requests at once, each one read at once held
// its body and its translation while the backend was reached: at the
// garbage collector's cycle in the middle of that burst, 76 MB were live,
// and the heap was let grow to twice that for the rest of the streams'
// lives (issues 38 and 40: memory per slow stream at 1,000). A request
// waits for its body's bytes of the budget before the body is read, so
// that the bytes of those waiting stay in the kernel's socket buffers,
// and gives them back when the backend answered (or the request ended
// before). Forty agent requests of 54 KB are 2 MB: under the budget, none
// waits. A request holds its share at most admissionHold: one whose
// client uploads slowly, or that waits for a cold or busy backend, cannot
// hold the others back for longer than that; past it, it goes on without
// a share, as every request did before.

// admissionHold bounds how long one request holds its share (a variable
// for the tests).
var admissionHold = 100 * time.Millisecond

// admissionBudget is the bytes of bodies admitted at once.
const admissionBudget = 4 << 20

// unknownLength is the share of a body sent without a Content-Length.
const unknownLength = 64 << 10

// admission is a server's budget.
type admission struct {
	budget int64
	sem    *semaphore.Weighted
}

func newAdmission(budget int64) *admission {
	return &admission{budget: budget, sem: semaphore.NewWeighted(budget)}
}

// enter waits for the share of a body of length bytes (-1: unknown); nil
// when ctx ended first (the client went away).
func (a *admission) enter(ctx context.Context, length int64) *admitted {
	n := length
	if n < 0 {
		n = unknownLength
	}
	n = min(max(n, 1), a.budget) // a body over the budget waits for all of it
	if a.sem.Acquire(ctx, n) != nil {
		return nil
	}
	t := &admitted{a: a, n: n}
	t.mu.Lock()
	t.timer = time.AfterFunc(admissionHold, t.leave)
	t.mu.Unlock()
	return t
}

// admitted is one request's share of the budget.
type admitted struct {
	a     *admission
	n     int64
	once  sync.Once
	mu    sync.Mutex // timer is set after it starts, and it may fire at once
	timer *time.Timer
}

// leave gives the share back; the first call does, the next do nothing
// (it is called when the backend answered, when the body could not be
// read, when the handler returns, and by the timer). A nil share is none.
func (t *admitted) leave() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		t.mu.Lock()
		t.timer.Stop()
		t.mu.Unlock()
		t.a.sem.Release(t.n)
	})
}

// admit takes a share for the request served through w before its body
// is read (readBody): the handler's end gives it back at the latest
// (recorder.leaveAdmission). A request not served through ServeHTTP
// takes none.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	rec, ok := w.(*recorder)
	if !ok || s.admission == nil || rec.admitted != nil {
		return true
	}
	rec.admitted = s.admission.enter(r.Context(), r.ContentLength)
	return rec.admitted != nil
}

// admittedOf is the share the request served through w holds; nil: none.
func admittedOf(w http.ResponseWriter) *admitted {
	if rec, ok := w.(*recorder); ok {
		return rec.admitted
	}
	return nil
}

// leaveAdmission gives back the request's share, if it still holds one.
func (r *recorder) leaveAdmission() { r.admitted.leave() }
