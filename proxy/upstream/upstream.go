// Package upstream sends requests to backends: one tuned http.Transport
// per backend base URL, one attempt per Do with the request and stream
// timeouts of the route, cancellation when the client goes away, and the
// retry schedule (Backoff, Retryable) of the caller that tries again. Which
// backend an attempt goes to is the caller's choice (package balance). It
// knows nothing of wire formats beyond bytes and status codes.
package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Kind classifies a failed exchange with a backend.
type Kind int

const (
	// Status: the backend answered with a non-2xx status; Error.Status and
	// Error.Body hold its answer.
	Status Kind = iota + 1
	// Unreachable: no connection could be made, after retries.
	Unreachable
	// Timeout: the route's timeout or stream_timeout fired.
	Timeout
	// Canceled: the client went away.
	Canceled
)

// Error is a failed exchange with a backend.
type Error struct {
	Kind    Kind
	Status  int    // Kind == Status
	Body    []byte // Kind == Status: the backend's answer (bounded)
	Timeout string // Kind == Timeout: "timeout" or "stream_timeout"
	Limit   time.Duration
	Err     error
}

func (e *Error) Error() string {
	switch e.Kind {
	case Status:
		return fmt.Sprintf("backend answered %d", e.Status)
	case Timeout:
		return fmt.Sprintf("backend did not answer within %s (%s)", e.Timeout, e.Limit)
	case Canceled:
		return "client went away"
	default:
		return fmt.Sprintf("backend unreachable: %v", e.Err)
	}
}

func (e *Error) Unwrap() error { return e.Err }

// SessionHeader carries the coding client's session id, from the client to
// the proxy and from the proxy to the backend.
const SessionHeader = "X-Claude-Code-Session-Id"

// Call describes one request to a backend.
type Call struct {
	BaseURL       string // api_base, ending in /v1
	Path          string // e.g. "/chat/completions"
	APIKey        string
	Body          []byte
	Stream        bool
	Session       string        // the client's session id, sent on as SessionHeader so a gateway in front of the model servers keeps the session on one pod too; empty: none
	Header        http.Header   // more request headers (a Messages backend's anthropic-version…)
	Timeout       time.Duration // bounds a non-stream exchange
	StreamTimeout time.Duration // bounds the wait for the first byte and each next read of a stream
	// Attempt, when set, is called with the request about to be sent (to
	// add headers, such as a trace context); it returns what is called
	// with the outcome: the backend's status (0 when none came) and the
	// error.
	Attempt func(req *http.Request) (done func(status int, err error))
}

// Backoff is the wait before retry n (0-based): 250ms doubling, at most 4s.
func Backoff(n int) time.Duration {
	d := 250 * time.Millisecond << n
	return min(d, 4*time.Second)
}

// Pool holds the HTTP client of each backend base URL.
type Pool struct {
	mu      sync.Mutex
	clients map[string]*http.Client
	backoff func(int) time.Duration
	roots   *x509.CertPool // nil: the system's
}

// NewPool returns an empty Pool.
func NewPool() *Pool {
	return &Pool{clients: map[string]*http.Client{}, backoff: Backoff}
}

// SetBackoff replaces the retry schedule (tests shorten it).
func (p *Pool) SetBackoff(f func(int) time.Duration) { p.backoff = f }

// SetRootCAs replaces the certificates a TLS backend's is verified
// against, before the first call (tests trust their own server's).
func (p *Pool) SetRootCAs(roots *x509.CertPool) { p.roots = roots }

// Wait sleeps the wait before retry n of one backend, and reports false
// when ctx ends first.
func (p *Pool) Wait(ctx context.Context, n int) bool { return sleep(ctx, p.backoff(n)) }

// client returns the backend's client, made on its first call. The wait
// for an answer's headers is bounded by each call's timeout or
// stream_timeout (Do), since routes to one backend may differ in them;
// the transport bounds the dial, the TLS handshake and the answer's head.
func (p *Pool) client(base string) *http.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[base]; ok {
		return c
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            bodyDial(dialer.DialContext),
		MaxIdleConnsPerHost:    256,
		IdleConnTimeout:        90 * time.Second,
		TLSClientConfig:        &tls.Config{RootCAs: p.roots},
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		ForceAttemptHTTP2:      true,
		DisableCompression:     true, // a backend on the LAN gains nothing, and streams must not be buffered
		// Each connection keeps its buffers while it lives, idle ones too:
		// at 256 connections, 64+32 KB each held 24 MB; at 1,000 slow
		// streams, 4+4 KB each were 8 MB of the live heap, and so 16 MB of
		// the resident set the garbage collector let grow to. The write
		// buffer holds the request's head (the body goes to the socket
		// past it, bodyConn.ReadFrom); the read buffer the answer's head and chunk
		// lines (the relay's reads, as large as it, go past it).
		WriteBufferSize: 1 << 10,
		ReadBufferSize:  1 << 10,
	}
	c := &http.Client{Transport: t}
	p.clients[base] = c
	return c
}

// Response is a backend's 2xx answer. Its Body enforces the timeouts of the
// call; Close releases everything.
type Response struct {
	Status int
	Header http.Header
	Body   io.ReadCloser
}

// Do sends the call once and returns the backend's 2xx response. Any other
// outcome is an *Error; Retryable says whether another attempt may fare
// better. ctx is the client's request context: its end cancels the backend
// request at once.
func (p *Pool) Do(ctx context.Context, c Call) (*Response, error) {
	limit, which := c.Timeout, "timeout"
	if c.Stream {
		limit, which = c.StreamTimeout, "stream_timeout"
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := newWatchdog(limit, func() { cancel(errTimedOut) })
	// The transport may keep the request (and so its GetBody) until the
	// response body is closed: the body is let go once it was sent whole,
	// or the exchange is over, so that a backend slow to answer or a
	// stream that lasts minutes does not keep its request alive.
	ref := &bodyRef{b: c.Body}
	c.Body = nil
	defer ref.over()
	resp, err := p.once(ctx, c, ref)
	if err == nil && resp.StatusCode/100 == 2 {
		if c.Stream {
			w.reset() // the first byte came; now each read gets the full stream_timeout
		}
		return &Response{Status: resp.StatusCode, Header: resp.Header, Body: &body{rc: resp.Body, w: w, stream: c.Stream, cancel: cancel, which: which, limit: limit}}, nil
	}
	e := classify(ctx, resp, err, which, limit)
	w.stop()
	cancel(nil)
	return nil, e
}

var errTimedOut = errors.New("upstream timeout")

// bodyRef holds a request body until it was sent whole or Do is over,
// for the readers the transport reads it through: one per attempt and
// one per GetBody (a retry on a stale idle connection).
type bodyRef struct {
	mu   sync.Mutex
	b    []byte // nil once let go
	gone bool   // let go: GetBody finds no body
}

// errBodySent: the transport asked for the body again after it was sent
// whole and let go; the caller's retry sends it afresh.
var errBodySent = errors.New("upstream: the request body was sent and let go; not resent on this connection")

func (r *bodyRef) reader() (io.ReadCloser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return nil, errBodySent
	}
	return &bodyReader{b: r.b, ref: r}, nil
}

// over lets the body go: no new reader gets it. Do calls it at its end,
// and a reader once it gave the transport the whole body.
func (r *bodyRef) over() {
	r.mu.Lock()
	r.b, r.gone = nil, true
	r.mu.Unlock()
}

// once makes one attempt through the backend's transport.
func (p *Pool) once(ctx context.Context, c Call, ref *bodyRef) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+c.Path, http.NoBody)
	if err != nil {
		return nil, err
	}
	if n := len(ref.b); n > 0 {
		req.Body, _ = ref.reader() // the first: the body is there
		req.ContentLength = int64(n)
		req.GetBody = ref.reader
	}
	setHeaders(req, c)
	client := p.client(c.BaseURL)
	if c.Attempt == nil {
		return client.Do(req)
	}
	done := c.Attempt(req)
	resp, err := client.Do(req)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	done(status, err)
	return resp, err
}

func setHeaders(req *http.Request, c Call) {
	req.Header.Set("Content-Type", "application/json")
	if c.Stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	if c.Session != "" {
		req.Header.Set(SessionHeader, c.Session)
	}
}

// bodyReader reads a request body and lets it go at its end, or when the
// transport closes it (from another goroutine, maybe while it reads).
type bodyReader struct {
	mu  sync.Mutex
	b   []byte
	ref *bodyRef
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	if len(r.b) > 0 {
		n := copy(p, r.b)
		r.b = r.b[n:]
		r.mu.Unlock()
		return n, nil
	}
	ref := r.ref
	r.b, r.ref = nil, nil
	r.mu.Unlock()
	if ref != nil {
		ref.over() // the transport asks for more only once it wrote what it had
	}
	return 0, io.EOF
}

// writeTo writes at most n bytes of the rest of the body to w straight
// from its memory (bodyConn).
func (r *bodyReader) writeTo(w io.Writer, n int64) (int64, error) {
	r.mu.Lock()
	b := r.b[:min(int64(len(r.b)), n)]
	r.mu.Unlock()
	m, err := w.Write(b)
	r.mu.Lock()
	if r.b != nil { // not closed meanwhile
		r.b = r.b[m:]
	}
	r.mu.Unlock()
	return int64(m), err
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	r.b, r.ref = nil, nil
	r.mu.Unlock()
	return nil
}

// maxErrorBody bounds how much of a backend's error answer is kept.
const maxErrorBody = 64 << 10

func classify(ctx context.Context, resp *http.Response, err error, which string, limit time.Duration) *Error {
	if resp != nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		return &Error{Kind: Status, Status: resp.StatusCode, Body: b}
	}
	if errors.Is(context.Cause(ctx), errTimedOut) {
		return &Error{Kind: Timeout, Timeout: which, Limit: limit, Err: err}
	}
	if ctx.Err() != nil {
		return &Error{Kind: Canceled, Err: ctx.Err()}
	}
	return &Error{Kind: Unreachable, Err: err}
}

// Retryable reports whether a failed attempt may succeed when made again,
// at the same backend or another: no connection (a server restarting), 503
// (a model loading) and 502 (a gateway in front of one).
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case Unreachable:
		return true
	case Status:
		return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusBadGateway
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// body enforces the timeouts while the caller reads a response.
type body struct {
	rc     io.ReadCloser
	w      *watchdog
	stream bool
	cancel context.CancelCauseFunc
	which  string
	limit  time.Duration
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.stream {
		b.w.reset()
	}
	if err != nil && err != io.EOF && b.w.fired() {
		return n, &Error{Kind: Timeout, Timeout: b.which, Limit: b.limit, Err: err}
	}
	return n, err
}

func (b *body) Close() error {
	b.w.stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// watchdog calls fire when it is not reset within limit.
type watchdog struct {
	limit time.Duration
	timer *time.Timer
	mu    sync.Mutex
	done  bool
}

func newWatchdog(limit time.Duration, fire func()) *watchdog {
	w := &watchdog{limit: limit}
	if limit > 0 {
		w.timer = time.AfterFunc(limit, func() {
			w.mu.Lock()
			w.done = true
			w.mu.Unlock()
			fire()
		})
	}
	return w
}

func (w *watchdog) reset() {
	if w.timer != nil {
		w.timer.Reset(w.limit)
	}
}

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *watchdog) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// bodyDial wraps a dial function's connections in bodyConn.
func bodyDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return bodyConn{c}, nil
	}
}

// bodyConn is a backend connection whose ReadFrom, through which the
// transport writes a request body past its write buffer, writes a Do's
// body straight from its memory (bodyReader.writeTo): a TCP connection's
// own ReadFrom copied it through a buffer of 32 KB allocated for each
// request. Other readers go to the connection's own ReadFrom.
type bodyConn struct{ net.Conn }

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok { // the transport's, at the Content-Length
		if br, ok := lr.R.(*bodyReader); ok {
			n, err := br.writeTo(c.Conn, lr.N)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
