package server

import (
	"net/http"
	"sync"
	"time"
)

// pinger writes a ping when nothing was written for its interval.
type pinger struct {
	mu      sync.Mutex
	last    time.Time // the last write
	stopped bool
	timer   *time.Timer
	w       http.ResponseWriter // for notePing
	write   func(b []byte) bool // writes and flushes b; false: the client is gone
	gone    func()              // when set, called when a ping cannot be written
	ping    func(dst []byte) []byte
	every   time.Duration
	out     []byte
}

func startPinger(w http.ResponseWriter, write func([]byte) bool, gone func(), ping func([]byte) []byte, every time.Duration) *pinger {
	p := &pinger{w: w, write: write, gone: gone, ping: ping, every: every, last: time.Now()}
	p.mu.Lock() // fire may come before p.timer is set
	p.timer = time.AfterFunc(every, p.fire)
	p.mu.Unlock()
	return p
}

func (p *pinger) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	// Writes push the ping back without touching the timer: it wakes at
	// the interval and sleeps again for what is left of it.
	if wait := p.every - time.Since(p.last); wait > 0 {
		p.timer.Reset(wait)
		return
	}
	p.out = p.ping(p.out[:0])
	if p.write(p.out) {
		notePing(p.w) // a ping the client was sent, not one that failed
	} else if p.gone != nil {
		p.gone()
	}
	p.last = time.Now()
	p.timer.Reset(p.every)
}

// stop ends the pings; when it returns, no ping is being written.
func (p *pinger) stop() {
	p.mu.Lock()
	p.stopped = true
	p.timer.Stop()
	p.mu.Unlock()
}
