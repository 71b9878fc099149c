package main

import (
	"net"
	"sync"
	"time"
)

// drainingListener stops accepting connections without resetting the ones
// the kernel already queued: closing a listening socket resets those (their
// clients sent a request and get no answer), while a connection refused
// goes to the next proxy. StopAccepting takes what is queued and closes
// the socket at once; Accept then hands out those connections, then
// reports net.ErrClosed.
type drainingListener struct {
	*net.TCPListener
	mu       sync.Mutex
	stopping bool
	queued   []net.Conn
	over     chan struct{} // closed once Accept reported net.ErrClosed
}

func newDrainingListener(l *net.TCPListener) *drainingListener {
	return &drainingListener{TCPListener: l, over: make(chan struct{})}
}

func (l *drainingListener) Accept() (net.Conn, error) {
	c, err := l.TCPListener.Accept()
	if err == nil {
		return c, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopping {
		return nil, err
	}
	if len(l.queued) > 0 {
		c, l.queued = l.queued[0], l.queued[1:]
		return c, nil
	}
	select {
	case <-l.over:
	default:
		close(l.over)
	}
	return nil, net.ErrClosed
}

// StopAccepting closes the socket, so that new connections are refused,
// and returns once Accept handed out the connections queued before (the
// server then tracks them as its own), or after within: then it returns
// how many Accept had not handed out yet.
func (l *drainingListener) StopAccepting(within time.Duration) (left int) {
	l.mu.Lock()
	l.stopping = true
	l.queued = takeQueued(l.TCPListener)
	l.mu.Unlock()
	select {
	case <-l.over:
		return 0
	case <-time.After(within):
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.queued)
	}
}
