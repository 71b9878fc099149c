package upstream

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http/httptrace"
	"sync"
	"time"
)

// A request of Do goes to the backend in one write: its head and its
// body together, the body from its own memory. The transport would write
// the head (it flushes it first for a body it does not know to be in
// memory), then copy the body through a fresh 32 KB buffer, a write per
// 32 KB: on loopback each write costs about as much as the whole body's
// copy, and wakes the backend once more.
//
// The transport's connections are directConns (the Pool's dialer). The
// request's trace tells the connection it got (GotConn) which body it
// carries next; the connection holds the head the transport writes for
// it and writes it with that body, which the transport hands to
// ReadFrom behind an io.LimitedReader. Whatever else the connection is
// asked to write first goes out after the held head: nothing is
// reordered, and a head is held only while the body it waits for is
// unread (the transport writes a request's body right after its head,
// in the same goroutine, or closes the connection).

var dialer = directDialer{&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}

// directDialer dials the backend connections as directConns.
type directDialer struct{ *net.Dialer }

func (d directDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &directConn{Conn: c}, nil
}

// directConn is a backend connection that writes a request of Do, head
// and body, in one write.
type directConn struct {
	net.Conn
	mu   sync.Mutex
	next *bodyReader // the body of the request the connection carries now
	head []byte      // that request's head, held for its body
}

// carry makes r the body of the request the connection carries now.
func (c *directConn) carry(r *bodyReader) {
	c.mu.Lock()
	c.next, c.head = r, c.head[:0]
	c.mu.Unlock()
}

// held returns the head held, and forgets it; c.mu is held.
func (c *directConn) held() []byte {
	h := c.head
	c.head = c.head[:0]
	return h
}

func (c *directConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if len(c.head) == 0 && c.next != nil && c.next.unread() && isHead(p) {
		c.head = append(c.head, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	h := c.held()
	c.mu.Unlock()
	if len(h) == 0 {
		return c.Conn.Write(p)
	}
	return writeAfter(c.Conn, h, p)
}

// ReadFrom writes what is left of a body of Do (behind the transport's
// io.LimitedReader) straight from its memory, after the head held for it,
// in one write; any other reader is copied.
func (c *directConn) ReadFrom(r io.Reader) (int64, error) {
	c.mu.Lock()
	h := c.held()
	c.next = nil
	c.mu.Unlock()
	if lr, ok := r.(*io.LimitedReader); ok {
		if br, ok := lr.R.(*bodyReader); ok {
			n, err := br.writeTo(c.Conn, h, lr.N)
			lr.N -= n
			return n, err
		}
	}
	if len(h) > 0 {
		if _, err := c.Conn.Write(h); err != nil {
			return 0, err
		}
	}
	return io.Copy(c.Conn, r)
}

// writeAfter writes h then p in one write and returns the bytes of p
// written.
func writeAfter(w io.Writer, h, p []byte) (int, error) {
	bufs := net.Buffers{h, p}
	n, err := bufs.WriteTo(w)
	return int(max(n-int64(len(h)), 0)), err
}

// isHead reports whether p ends a request head that announces a body the
// transport writes at once (not after a 100 Continue).
func isHead(p []byte) bool {
	return bytes.HasSuffix(p, []byte("\r\n\r\n")) && !bytes.Contains(p, []byte("\r\nExpect:"))
}

// carried returns ctx with a trace that tells the connection the request
// gets which body of Do it carries: r, or none when r is nil (a body
// from Call.Open, or no body), so that no connection keeps waiting for a
// body of an earlier request.
func carried(ctx context.Context, r *bodyReader) context.Context {
	trace := &httptrace.ClientTrace{}
	if r != nil {
		trace = &r.trace
	}
	trace.GotConn = func(info httptrace.GotConnInfo) {
		if c, ok := info.Conn.(*directConn); ok {
			c.carry(r)
		}
	}
	return httptrace.WithClientTrace(ctx, trace)
}

// unread reports whether nothing of the body was read yet.
func (r *bodyReader) unread() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.done && !r.started
}

// writeTo writes head (may be empty) and then at most max bytes of what
// is left of the body to w, in one write, and returns the body's bytes
// written. The body is held while it is written: a Close meanwhile (the
// transport's, from another goroutine) does not let it go under the
// write.
func (r *bodyReader) writeTo(w io.Writer, head []byte, max int64) (int64, error) {
	r.mu.Lock()
	b := r.b
	if int64(len(b)) > max {
		b = b[:max]
	}
	r.b = r.b[len(b):]
	r.started = true
	r.ref.hold()
	r.mu.Unlock()
	defer r.ref.release()
	var n int
	var err error
	if len(head) == 0 {
		n, err = w.Write(b)
	} else {
		n, err = writeAfter(w, head, b)
	}
	if err == nil && r.rest() == 0 {
		r.ref.written()
	}
	return int64(n), err
}

// rest is how much of the body is left to hand out.
func (r *bodyReader) rest() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.b)
}
