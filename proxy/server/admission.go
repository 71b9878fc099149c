package server

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// Admission bounds how many requests hold their bodies in memory at once
// while they are read, translated and written to a backend. When a
// thousand coding clients send their 54 KB requests at once, each one read
// at once held its body, its translation and the buffers of the write
// while the backend connection was dialled: at the garbage collector's
// cycle in the middle of that burst, 112 MB were live, and the heap was
// let grow to twice that (issues 38 and 40: memory per slow stream at
// 1,000). A request waits for a slot before its body is read, so that
// the bytes of those waiting stay in the kernel's socket buffers, and
// gives the slot back as soon as its translation was written to the
// backend (or it ended before). A slot is held at most admissionHold: a
// client that uploads slowly, or a request queued for a busy backend,
// cannot hold the others back for longer than that; past it, it goes on
// without a slot, as every request did before.

// admissionHold bounds how long one request holds its slot (a variable
// for the tests).
var admissionHold = 100 * time.Millisecond

// admissionSlots is how many requests may be between the start of their
// body's read and its write to the backend at once: the work there is
// CPU (read from the socket, translate, write), so a few a core.
func admissionSlots() int { return max(8, 4*runtime.GOMAXPROCS(0)) }

// admission is a server's slots.
type admission struct {
	slots chan struct{}
}

func newAdmission(n int) *admission { return &admission{slots: make(chan struct{}, n)} }

// enter waits for a slot; nil when ctx ended first (the client went away).
func (a *admission) enter(ctx context.Context) *admitted {
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	t := &admitted{a: a}
	t.mu.Lock()
	t.timer = time.AfterFunc(admissionHold, t.leave)
	t.mu.Unlock()
	return t
}

// admitted is one request's slot.
type admitted struct {
	a     *admission
	once  sync.Once
	mu    sync.Mutex // timer is set after it starts, and it may fire at once
	timer *time.Timer
}

// leave gives the slot back; the first call does, the next do nothing
// (it is called when the body was written, when the exchange ends, when
// the handler returns, and by the timer). A nil slot is none.
func (t *admitted) leave() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		t.mu.Lock()
		t.timer.Stop()
		t.mu.Unlock()
		<-t.a.slots
	})
}

// admit takes a slot for the request served through w before its body
// is read (readBody): the handler's end gives it back at the latest
// (recorder.leaveAdmission). A request not served through ServeHTTP
// takes none.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	rec, ok := w.(*recorder)
	if !ok || s.admission == nil || rec.admitted != nil {
		return true
	}
	rec.admitted = s.admission.enter(r.Context())
	return rec.admitted != nil
}

// admittedOf is the slot the request served through w holds; nil: none.
func admittedOf(w http.ResponseWriter) *admitted {
	if rec, ok := w.(*recorder); ok {
		return rec.admitted
	}
	return nil
}

// leaveAdmission gives back the request's slot, if it still holds one.
func (r *recorder) leaveAdmission() { r.admitted.leave() }
