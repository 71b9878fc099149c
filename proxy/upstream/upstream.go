// Package upstream sends requests to backends: per backend base URL, its
// own HTTP/1.1 connections for plain HTTP (conns.go) or a tuned
// http.Client, one attempt per Do with the request and stream timeouts
// of the route, cancellation when the client goes away, and the retry
// schedule (Backoff, Retryable) of the caller that tries again. Which
// backend an attempt goes to is the caller's choice (package balance). It
// knows nothing of wire formats beyond bytes and status codes.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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
	// Recycle, when set, is called once with Body when nothing reads it
	// any more (the transport may read a request body after Do returns,
	// until it closes it), so that the caller can reuse its memory.
	Recycle func(body []byte)
	// Attempt, when set, is called with the request about to be sent (to
	// add headers, such as a trace context); it returns what is called
	// with the outcome: the backend's status (0 when none came) and the
	// error.
	Attempt func(req *http.Request) (done func(status int, err error))
	// Open, when set, gives the body instead of Body: a body forwarded while
	// it arrives (package passthrough), ContentLength bytes long (-1:
	// unknown, sent chunked). Each call returns a reader from the body's
	// start and cuts off the readers it returned before (the transport
	// calls it again to retry on a stale connection).
	Open          func() io.Reader
	ContentLength int64
	// StreamFlag, when set, says at the answer's headers whether it is a
	// stream: a forwarded body's stream flag may come after the backend
	// was chosen. Until then the attempt is bounded by the smaller of
	// Timeout and StreamTimeout, and Stream is not used.
	StreamFlag func(h http.Header) bool
	// Sent, when set, is called once Body was written whole to the
	// backend, by the goroutine that wrote it (Do's own on a plain-HTTP
	// backend, before the answer is read; the transport's otherwise), at most
	// once a Do: work that waits for the body to be sent runs there while
	// the backend reads it, with no goroutine of its own. It may not be
	// called at all (a body sent otherwise, a failed write).
	Sent func()
}

// Backoff is the wait before retry n (0-based): 250ms doubling, at most 4s.
func Backoff(n int) time.Duration {
	d := 250 * time.Millisecond << n
	return min(d, 4*time.Second)
}

// Pool holds the connections (or the client) of each backend base URL.
type Pool struct {
	mu      sync.Mutex
	clients map[string]*http.Client
	conns   map[string]*conns // by base URL; nil: through the transport
	proxy   func(*http.Request) (*url.URL, error)
	backoff func(int) time.Duration
}

// NewPool returns an empty Pool.
func NewPool() *Pool {
	return &Pool{clients: map[string]*http.Client{}, conns: map[string]*conns{}, proxy: http.ProxyFromEnvironment, backoff: Backoff}
}

// SetBackoff replaces the retry schedule (tests shorten it).
func (p *Pool) SetBackoff(f func(int) time.Duration) { p.backoff = f }

// Wait sleeps the wait before retry n of one backend, and reports false
// when ctx ends first.
func (p *Pool) Wait(ctx context.Context, n int) bool { return sleep(ctx, p.backoff(n)) }

// direct returns the connections of a backend reached by plain HTTP and
// no proxy, or nil.
func (p *Pool) direct(base string) *conns {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cs, ok := p.conns[base]; ok {
		return cs
	}
	var cs *conns
	if u, err := url.Parse(base); err == nil && u.Scheme == "http" && u.Host != "" {
		if proxy, err := p.proxy(&http.Request{URL: u}); err == nil && proxy == nil {
			addr := u.Host
			if u.Port() == "" {
				addr = net.JoinHostPort(u.Hostname(), "80")
			}
			cs = newConns(addr, u.Host)
		}
	}
	p.conns[base] = cs
	return cs
}

func (p *Pool) client(base string) *http.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[base]; ok {
		return c
	}
	t := &http.Transport{
		Proxy:                 p.proxy,
		DialContext:           dialer.DialContext,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
		DisableCompression:    true, // a backend on the LAN gains nothing, and streams must not be buffered
		// Each connection keeps its buffers while it lives, idle ones too:
		// at 256 connections, 64+32 KB each held 24 MB. A request body
		// larger than the write buffer still goes out in one write after
		// the headers (bufio hands it to the connection), stream events
		// are small, and larger reads bypass the read buffer.
		WriteBufferSize: 4 << 10,
		ReadBufferSize:  4 << 10,
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
	if c.Stream || (c.StreamFlag != nil && c.StreamTimeout > 0 && (c.Timeout <= 0 || c.StreamTimeout < c.Timeout)) {
		limit, which = c.StreamTimeout, "stream_timeout"
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := newWatchdog(limit, func() { cancel(errTimedOut) })
	ref := &bodyRef{b: c.Body, body: c.Body, holds: 1, own: true, recycle: c.Recycle, onSent: c.Sent}
	// The transport may keep the request (and so its GetBody) until the
	// response body is closed: once the body was sent whole, or the
	// exchange is over, GetBody finds no body, and the body is recycled
	// when its last reader is done.
	defer ref.over()
	resp, err := p.once(ctx, c, ref)
	if err == nil && resp.StatusCode/100 == 2 {
		stream := c.Stream
		if c.StreamFlag != nil {
			if stream = c.StreamFlag(resp.Header); stream && c.StreamTimeout > 0 && w.timer != nil {
				limit, which = c.StreamTimeout, "stream_timeout"
				w.limit = limit
			}
		}
		if stream {
			w.reset() // the first byte came; now each read gets the full stream_timeout
		}
		return &Response{Status: resp.StatusCode, Header: resp.Header, Body: &body{rc: resp.Body, w: w, stream: stream, cancel: cancel, which: which, limit: limit}}, nil
	}
	e := classify(ctx, resp, err, which, limit)
	w.stop()
	cancel(nil)
	return nil, e
}

var errTimedOut = errors.New("upstream timeout")

// bodyRef holds a request body for the readers the transport reads it
// through: one per attempt and one per GetBody. The body is recycled once
// it was sent whole (or Do is over) and every reader is done with it: a
// backend slow to answer does not keep it (a retry is the caller's, which
// sends a body of its own).
type bodyRef struct {
	mu      sync.Mutex
	b       []byte // for new readers; nil once sent whole or Do is over
	body    []byte
	holds   int  // Do's own while own, and one per reader not done
	own     bool // Do's hold is still held
	recycle func([]byte)
	onSent  func() // Call.Sent, until called
}

// errBodySent: the transport asked for the body again after it was sent
// whole and let go; the caller's retry sends it afresh.
var errBodySent = errors.New("upstream: the request body was sent and let go; not resent on this connection")

func (r *bodyRef) reader() (*bodyReader, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.b == nil && len(r.body) > 0 {
		return nil, errBodySent
	}
	r.holds++
	return &bodyReader{b: r.b, ref: r}, nil
}

// over ends Do's hold, when a reader has not already: the body was not
// sent whole.
func (r *bodyRef) over() {
	r.mu.Lock()
	r.b = nil
	own := r.own
	r.own = false
	r.mu.Unlock()
	if own {
		r.release()
	}
}

// sent: a reader handed out the whole body; Do's hold ends (no new
// reader is given the body).
func (r *bodyRef) sent() { r.over() }

// writtenWhole: the pool's own connection wrote the whole body; Call.Sent
// is called, and the body goes.
func (r *bodyRef) writtenWhole() {
	r.written()
	r.sent()
}

// written calls Call.Sent, the first time the whole body was written (by
// the pool's own connection) or handed out (by a reader).
func (r *bodyRef) written() {
	r.mu.Lock()
	f := r.onSent
	r.onSent = nil
	r.mu.Unlock()
	if f != nil {
		f()
	}
}

func (r *bodyRef) release() {
	r.mu.Lock()
	r.holds--
	last := r.holds == 0
	r.mu.Unlock()
	if last && r.recycle != nil && len(r.body) > 0 {
		r.recycle(r.body)
	}
}

// once makes one attempt: on the pool's own connections when it can,
// through the transport otherwise.
func (p *Pool) once(ctx context.Context, c Call, ref *bodyRef) (*http.Response, error) {
	var cs *conns // nil: through the transport
	if c.Open == nil {
		cs = p.direct(c.BaseURL)
	}
	var req *http.Request
	var err error
	if cs != nil {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+c.Path, nil)
	} else {
		req, err = transportRequest(ctx, c, ref)
	}
	if err != nil {
		return nil, err
	}
	setHeaders(req, c)
	if c.Attempt == nil {
		return p.send(cs, req, c, ref)
	}
	done := c.Attempt(req)
	resp, err := p.send(cs, req, c, ref)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	done(status, err)
	return resp, err
}

// send sends req on cs, or through the transport when cs is nil. On cs,
// the body goes once written: as through the transport, a POST is not
// sent again on another connection once written.
func (p *Pool) send(cs *conns, req *http.Request, c Call, ref *bodyRef) (*http.Response, error) {
	if cs == nil {
		return p.client(c.BaseURL).Do(req)
	}
	return cs.exchange(req, c.Body, ref.writtenWhole)
}

func setHeaders(req *http.Request, c Call) {
	req.Header.Set("Content-Type", "application/json")
	switch {
	case c.StreamFlag != nil:
		req.Header.Set("Accept", "application/json, text/event-stream")
	case c.Stream:
		req.Header.Set("Accept", "text/event-stream")
	default:
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

// transportRequest is the request of c for the transport, its body read
// through ref.
func transportRequest(ctx context.Context, c Call, ref *bodyRef) (*http.Request, error) {
	body, _ := ref.reader() // the first: the body is there
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+c.Path, body)
	if err != nil {
		body.Close()
		return nil, err
	}
	// The transport asks GetBody for a fresh copy when it retries on a
	// stale idle connection. Both readers forget the body once read, and
	// the body goes once it was sent whole: a backend slow to answer, or a
	// stream that lasts minutes, does not keep its 50 KB request alive.
	req.ContentLength = int64(len(c.Body))
	if len(c.Body) == 0 {
		req.Body = http.NoBody
	}
	req.GetBody = func() (io.ReadCloser, error) {
		r, err := ref.reader()
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	if c.Open != nil {
		body.Close()
		req.Body, req.ContentLength = io.NopCloser(c.Open()), c.ContentLength
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(c.Open()), nil }
	}
	return req, nil
}

// bodyReader reads a request body and lets it go at its end, or when the
// transport closes it (from another goroutine, maybe while it reads).
type bodyReader struct {
	mu   sync.Mutex
	b    []byte
	ref  *bodyRef
	done bool
}

func (r *bodyReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.b) == 0 {
		ref, whole := r.ref, !r.done
		r.finish()
		ref.sent()
		if whole {
			// The transport asks for more only once it wrote what it had.
			r.mu.Unlock()
			ref.written()
			r.mu.Lock()
		}
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func (r *bodyReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finish()
	return nil
}

// finish lets the body go, once; r.mu is held.
func (r *bodyReader) finish() {
	r.b = nil
	if !r.done {
		r.done = true
		r.ref.release()
	}
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
