package upstream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"
)

// A call whose body is in memory, to a backend reached by plain HTTP and
// no proxy (the usual model server on the LAN), is exchanged on the
// caller's goroutine: the request written, head and body, in one write;
// the answer's head read with http.ReadResponse from the same
// connection; its body read by the caller, and the connection kept for
// the next call once that body was read to its end. net/http's transport
// hands each exchange to two goroutines of the connection's (one writes,
// one reads and hands the answer over) and back: three wake-ups more a
// request, which cost 50-90 µs a request at one connection on a 2-core
// machine (docs/performance.md). Everything else (TLS, a proxy from the
// environment, a body forwarded while it arrives) goes through the
// transport.

var dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

const (
	maxIdle        = 256     // idle connections kept per backend, as the transport's MaxIdleConnsPerHost
	maxAnswerHead  = 1 << 20 // bytes of an answer's status line and headers
	defaultAgent   = "Go-http-client/1.1"
	defaultIdleFor = 90 * time.Second
)

// conns keeps the idle connections to one backend: the last one used is
// the next one taken, and one idle for idleFor is closed.
type conns struct {
	addr    string // host:port dialled
	host    string // the Host header
	idleFor time.Duration
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)

	mu    sync.Mutex
	idle  []*conn // the longest idle first
	sweep *time.Timer
}

func newConns(addr, host string) *conns {
	return &conns{addr: addr, host: host, idleFor: defaultIdleFor, dial: dialer.DialContext}
}

// conn is one backend connection. While an answer's head is read, reads
// are capped (headLeft) so that a backend cannot grow it without bound.
type conn struct {
	net.Conn
	br        *bufio.Reader
	raw       syscall.RawConn // nil: cannot be looked at while idle
	reused    bool            // it carried an exchange before
	idleSince time.Time
	capped    bool
	headLeft  int
}

var errAnswerHeadTooLong = fmt.Errorf("upstream: the backend's answer head exceeds %d bytes", maxAnswerHead)

func (c *conn) Read(p []byte) (int, error) {
	if !c.capped {
		return c.Conn.Read(p)
	}
	if c.headLeft <= 0 {
		return 0, errAnswerHeadTooLong
	}
	if len(p) > c.headLeft {
		p = p[:c.headLeft]
	}
	n, err := c.Conn.Read(p)
	c.headLeft -= n
	return n, err
}

// get takes the idle connection used last that the backend has not
// closed, or dials a new one.
func (cs *conns) get(ctx context.Context) (*conn, error) {
	for {
		cs.mu.Lock()
		n := len(cs.idle)
		if n == 0 {
			cs.mu.Unlock()
			return cs.connect(ctx)
		}
		c := cs.idle[n-1]
		cs.idle[n-1] = nil
		cs.idle = cs.idle[:n-1]
		cs.mu.Unlock()
		// The backend may have closed it while it was idle (uvicorn, in
		// front of vLLM and SGLang, does after 5 s): a request written to
		// it would be lost.
		if c.br.Buffered() == 0 && open(c.raw) {
			return c, nil
		}
		c.Close()
	}
}

func (cs *conns) connect(ctx context.Context) (*conn, error) {
	nc, err := cs.dial(ctx, "tcp", cs.addr)
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc}
	c.br = bufio.NewReaderSize(c, 4<<10)
	if sc, ok := nc.(syscall.Conn); ok {
		c.raw, _ = sc.SyscallConn()
	}
	return c, nil
}

// put keeps c for a next exchange.
func (cs *conns) put(c *conn) {
	c.reused = true
	c.idleSince = time.Now()
	cs.mu.Lock()
	if len(cs.idle) < maxIdle {
		cs.idle = append(cs.idle, c)
		c = nil
		if cs.sweep == nil {
			cs.sweep = time.AfterFunc(cs.idleFor, cs.closeIdle)
		}
	}
	cs.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// closeIdle closes the connections idle for idleFor, and comes back when
// the next one will be.
func (cs *conns) closeIdle() {
	now := time.Now()
	cs.mu.Lock()
	n := 0
	for n < len(cs.idle) && now.Sub(cs.idle[n].idleSince) >= cs.idleFor {
		n++
	}
	old := make([]*conn, n)
	copy(old, cs.idle)
	rest := copy(cs.idle, cs.idle[n:])
	clear(cs.idle[rest:])
	cs.idle = cs.idle[:rest]
	if rest > 0 {
		cs.sweep.Reset(cs.idle[0].idleSince.Add(cs.idleFor).Sub(now))
	} else {
		cs.sweep = nil
	}
	cs.mu.Unlock()
	for _, c := range old {
		c.Close()
	}
}

var heads = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// reqExclude: the headers the head is given from elsewhere, as the
// transport does.
var reqExclude = map[string]bool{"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true}

// exchange sends req, whose body is body, on a connection of cs and
// returns the answer once its head came; written is called once the body
// was written whole (the body is not used after). The answer's body gives
// the connection back when it was read to its end, and closes it when it
// is closed before. req's context ending closes the connection.
func (cs *conns) exchange(req *http.Request, body []byte, written func()) (*http.Response, error) {
	head := heads.Get().(*bytes.Buffer)
	defer heads.Put(head)
	if err := cs.writeHead(head, req, len(body)); err != nil {
		return nil, err
	}
	ctx := req.Context()
	c, err := cs.get(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := cs.try(ctx, c, req, head.Bytes(), body, written)
	var w *writeError
	if errors.As(err, &w) && c.reused && ctx.Err() == nil {
		// A reused connection the backend closed as it was taken: the
		// body was not sent, so once more on a new connection.
		if c, err = cs.connect(ctx); err != nil {
			return nil, err
		}
		resp, err = cs.try(ctx, c, req, head.Bytes(), body, written)
	}
	return resp, err
}

func (cs *conns) writeHead(head *bytes.Buffer, req *http.Request, n int) error {
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("upstream: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("upstream: invalid header field value for %q", k) // not the value: it may be a key
			}
		}
	}
	head.Reset()
	head.WriteString("POST ")
	head.WriteString(req.URL.RequestURI())
	head.WriteString(" HTTP/1.1\r\nHost: ")
	head.WriteString(cs.host)
	head.WriteString("\r\nUser-Agent: ")
	if ua := req.Header.Get("User-Agent"); ua != "" {
		head.WriteString(ua)
	} else {
		head.WriteString(defaultAgent)
	}
	head.WriteString("\r\nContent-Length: ")
	head.Write(strconv.AppendInt(head.AvailableBuffer(), int64(n), 10))
	head.WriteString("\r\n")
	if err := req.Header.WriteSubset(head, reqExclude); err != nil {
		return err
	}
	head.WriteString("\r\n")
	return nil
}

// writeError: the request could not be written whole, and no answer came.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

func (cs *conns) try(ctx context.Context, c *conn, req *http.Request, head, body []byte, written func()) (*http.Response, error) {
	// The call's end (the client gone, a timeout) closes the connection:
	// a read or write under way returns, and the backend sees its request
	// end.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	bufs := net.Buffers{head, body}
	_, werr := bufs.WriteTo(c.Conn)
	if werr == nil {
		written()
	}
	// A backend may answer and close before it reads the whole body (a
	// refusal): its answer is read even when the write failed.
	c.capped, c.headLeft = true, maxAnswerHead
	resp, err := http.ReadResponse(c.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(c.br, req) // 100 Continue, 103 Early Hints: the answer follows
	}
	c.capped = false
	switch {
	case err != nil && werr != nil:
		stop()
		c.Close()
		return nil, &writeError{werr}
	case err != nil:
		stop()
		c.Close()
		return nil, err
	}
	resp.Body = &connBody{rc: resp.Body, c: c, cs: cs, stop: stop, keep: werr == nil && !resp.Close}
	return resp, nil
}

// connBody is an answer's body, read from its connection. Close may come
// from another goroutine while a Read runs.
type connBody struct {
	rc   io.ReadCloser
	c    *conn
	cs   *conns
	stop func() bool
	keep bool
	over atomic.Bool
}

func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err == io.EOF && b.over.CompareAndSwap(false, true) {
		if b.stop() && b.keep {
			b.cs.put(b.c)
		} else {
			b.c.Close()
		}
	}
	return n, err
}

func (b *connBody) Close() error {
	if b.over.CompareAndSwap(false, true) {
		b.stop()
		b.c.Close()
	}
	return nil
}
