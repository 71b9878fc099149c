// Package authlimit slows the guessing of the proxy's master key: it
// counts the failed attempts of each client address, and refuses an
// address that failed MaxFailures times within Window until the oldest of
// those failures is a Window old. The admin page's login, the admin API
// and the proxy's API share one Limiter.
package authlimit

import (
	"net"
	"net/http"
	"sync"
	"time"
)

const (
	// MaxFailures is how many failed attempts an address makes in a
	// Window before it is refused.
	MaxFailures = 10
	// Window is the span the failures are counted in.
	Window = time.Minute
	// maxAddresses bounds the addresses remembered; past it, those whose
	// failures are all older than a Window are forgotten.
	maxAddresses = 10000
)

// Limiter counts failed attempts per client address. Its zero value is
// not usable: New makes one. Methods of a nil Limiter limit nothing.
type Limiter struct {
	now func() time.Time

	mu     sync.Mutex
	byAddr map[string][]time.Time // the last MaxFailures failures, oldest first
	// Throttled, when set, is told of each attempt refused (a metric).
	Throttled func()
}

// New returns a Limiter on the clock now (nil: time.Now).
func New(now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, byAddr: map[string][]time.Time{}}
}

// Addr is the client address of r that attempts are counted by: its
// connection's IP (a header such as X-Forwarded-For is anyone's to
// write).
func Addr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Allow says whether addr may attempt now; when not, how long until it may
// (at least a second), and the refusal is counted (Throttled).
func (l *Limiter) Allow(addr string) (time.Duration, bool) {
	if l == nil {
		return 0, true
	}
	l.mu.Lock()
	now := l.now()
	fails := l.byAddr[addr]
	var wait time.Duration
	if len(fails) >= MaxFailures {
		wait = fails[len(fails)-MaxFailures].Add(Window).Sub(now)
	}
	l.mu.Unlock()
	if wait <= 0 {
		return 0, true
	}
	if l.Throttled != nil {
		l.Throttled()
	}
	return max(time.Second, (wait+time.Second-1)/time.Second*time.Second), false
}

// Failed counts a failed attempt of addr.
func (l *Limiter) Failed(addr string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if _, known := l.byAddr[addr]; !known && len(l.byAddr) >= maxAddresses {
		for a, f := range l.byAddr {
			if now.Sub(f[len(f)-1]) >= Window {
				delete(l.byAddr, a)
			}
		}
	}
	fails := append(l.byAddr[addr], now)
	if len(fails) > MaxFailures {
		fails = fails[len(fails)-MaxFailures:]
	}
	l.byAddr[addr] = fails
}

// Succeeded forgets the failures of addr: it knows the key.
func (l *Limiter) Succeeded(addr string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.byAddr, addr)
	l.mu.Unlock()
}
