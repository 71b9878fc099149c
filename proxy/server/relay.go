package server

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// readBody reads a request body within the configured limit, answering the
// client itself when it cannot. The body is in a pooled buffer: the caller
// gives it back (bufpool.Put) when nothing uses it any more.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, f format) ([]byte, bool) {
	body, ok := s.openBody(w, r, f)
	if !ok {
		return nil, false
	}
	// limit+1: MaxBytesReader, not ReadAll, says when the body is too long.
	buf, err := bufpool.ReadAll(body, r.ContentLength, s.cfg.MaxRequestBytes+1)
	if err != nil {
		f.write(w, s.readProblem(err))
		bufpool.Put(buf)
		return nil, false
	}
	if len(buf) == 0 {
		f.write(w, problemf(invalidRequest, "the request body is empty: send a JSON object"))
		bufpool.Put(buf)
		return nil, false
	}
	return buf, true
}

// openBody checks a request's Content-Type and announced length and
// returns its body, bounded by general_settings.max_request_bytes.
func (s *Server) openBody(w http.ResponseWriter, r *http.Request, f format) (io.Reader, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !acceptableType(ct) {
		f.write(w, problemf(unsupportedMedia, "Content-Type %q is not accepted: send the body as application/json", ct))
		return nil, false
	}
	limit := s.cfg.MaxRequestBytes
	if r.ContentLength > limit {
		f.write(w, problemf(tooLarge, "request body of %d bytes is over the limit of %d bytes (general_settings.max_request_bytes)", r.ContentLength, limit))
		return nil, false
	}
	return http.MaxBytesReader(w, r.Body, limit), true
}

// readProblem words an error reading a request body.
func (s *Server) readProblem(err error) problem {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return problemf(tooLarge, "request body is over the limit of %d bytes (general_settings.max_request_bytes)", s.cfg.MaxRequestBytes)
	}
	return problemf(invalidRequest, "reading the request body: %v", err)
}

// acceptableType allows JSON, and the types of clients that send JSON
// without saying so (curl -d sends application/x-www-form-urlencoded).
func acceptableType(ct string) bool {
	if ct == "application/json" {
		return true // what nearly every client sends: no parse (it allocates)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch {
	case mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/x-www-form-urlencoded", mt == "text/plain":
		return true
	}
	return false
}

// requestProblem renders an error from translation or routing.
func requestProblem(err error) problem {
	var tooLong *translate.ContextOverflowError
	if errors.As(err, &tooLong) {
		return newOverflowProblem(overflow.Overflow{Tokens: tooLong.Tokens, Maximum: tooLong.Window}, tooLong.Window)
	}
	if p, ok := balanceProblem(err); ok {
		return p
	}
	var refused *keys.Refusal
	if errors.As(err, &refused) {
		return keyProblem(refused)
	}
	var unknown *unknownAlias
	if errors.As(err, &unknown) {
		if unknown.alias == "" {
			return problemf(invalidRequest, "%s", unknown.Error())
		}
		return problemf(notFound, "%s", unknown.Error())
	}
	return problemf(invalidRequest, "%s", clipMessage(err.Error()))
}

// maxMessage bounds an error message built from the request: a path into
// JSON nested 10000 deep would otherwise make a 20 KB message.
const maxMessage = 1024

// clipMessage keeps the start and the end of a long message (the end
// says what went wrong, the start where).
func clipMessage(m string) string {
	if len(m) <= maxMessage {
		return m
	}
	head, tail := m[:maxMessage/2], m[len(m)-maxMessage/2:]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return head + " … " + tail
}

// maxResponseBytes bounds a non-stream backend answer.
const maxResponseBytes = 64 << 20

// readResponse reads a non-stream answer into a pooled buffer, which the
// caller gives back (bufpool.Put) once it has used it.
func readResponse(resp *upstream.Response) ([]byte, error) {
	defer resp.Body.Close()
	hint := int64(-1)
	if v := resp.Header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			hint = n
		}
	}
	return bufpool.ReadAll(resp.Body, hint, maxResponseBytes)
}

// readBuffers hold one backend read of a stream: events are small, and a
// read returns what has come, so 4 KB keeps the memory of 256 open streams
// low; a fast backend's burst takes a few more reads.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 4<<10); return &b }}

// outSize is the least room of a relay's output buffer (outRoom).
const outSize = 4 << 10

// outRoom is the room of the output buffer for a read of n bytes: twice
// the read. A read of Chat chunks becomes up to ~1.4 times its size in
// Responses events (each delta names its item, its indexes and its
// sequence number); with room for the read alone, a full read's events
// outgrew the buffer, append reallocated it two or three times, and the
// grown buffer went back to a larger class of bufpool, so the next read's
// Get found its class empty and allocated again (translate's
// BenchmarkResponsesStreamReads: 46 KB a stream of 4 KB reads, now 30).
func outRoom(n int) int { return max(outSize, 2*n) }

// relay copies a backend stream to the client through feed, flushing after
// every read. It reads, translates, writes and flushes in the calling
// goroutine, as httputil.ReverseProxy does: no hand-over between
// goroutines for each event. A client that stops reading blocks the write,
// and so the next backend read. While nothing is written to the client (the
// backend is silent, or feed holds what it sends), ping (when not nil)
// keeps the client's idle timer from firing: a timer writes it, under
// the lock that each write of the loop takes. The client's going away
// cancels the backend request (its context is the client's), which ends the
// read. relay returns the error that ended the stream early (a read error, a
// feed error, or the client's going away), nil at a clean end.
func relay(w http.ResponseWriter, r *http.Request, body io.ReadCloser, feed func(dst, p []byte) ([]byte, error), done func() bool, ping func(dst []byte) []byte, every time.Duration) error {
	flusher, _ := w.(http.Flusher)
	bufp := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(bufp)
	buf := *bufp
	obs := observed(w)
	var pg *pinger
	if ping != nil && every > 0 {
		pg = startPinger(w, func(b []byte) bool {
			_, err := w.Write(b)
			if err == nil && flusher != nil {
				flusher.Flush()
			}
			return err == nil
		}, nil, ping, every)
		defer pg.stop()
	}
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if pg != nil {
				pg.mu.Lock()
			}
			// What one read translates to, in a pooled buffer taken for
			// this read alone: grown from nothing for every stream, it was
			// a good part of what a translated stream allocated; held for
			// the stream's life, it was 4 KB more per open stream, most of
			// whose time is spent waiting for the backend's next read.
			var werr error
			out, ferr := feed(bufpool.Get(outRoom(n)), buf[:n])
			wrote := len(out) > 0
			if wrote {
				if _, werr = w.Write(out); werr == nil && flusher != nil {
					flusher.Flush()
				}
				obs.noteFirstToken(out)
			}
			bufpool.Put(out)
			if pg != nil {
				if wrote {
					// Only what reaches the client resets its idle timer:
					// a backend busy with a tool call whose arguments the
					// translator holds still gets pings out.
					pg.last = time.Now()
				}
				pg.mu.Unlock()
			}
			if werr != nil {
				return werr
			}
			if ferr != nil {
				return ferr
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if done != nil && done() {
			drain(body, buf)
			return nil
		}
		if rerr != nil {
			if err := r.Context().Err(); err != nil {
				return err
			}
			return rerr
		}
	}
}

// drainWait and drainBytes bound what drain reads (drainWait a variable
// for the tests, which wait longer so that a loaded machine cannot make
// them fail).
var drainWait = 2 * time.Millisecond

const drainBytes = 4 << 10

// drain reads what is left of a backend's stream once the translator saw
// its end (done: the finish and the usage, or [DONE]): what usually
// follows ([DONE], the end of the chunked encoding) comes at once, and a
// body read to its end gives the connection back to its pool (upstream).
// Closed before its end, as it was when relay stopped at done, the
// connection was dropped, and the backend's next request dialled a new
// one: at one connection ~100 µs of a short stream's added latency (bench
// --ab, responses 43 KB stream). A backend that sends more than
// drainBytes, or has not ended its answer within drainWait, is not waited
// for: its body is closed, the connection dropped as before. drain
// reads into buf.
func drain(body io.ReadCloser, buf []byte) {
	t := time.AfterFunc(drainWait, func() { body.Close() })
	defer t.Stop()
	for n := 0; n <= drainBytes; {
		k, err := body.Read(buf)
		if err != nil {
			return
		}
		n += k
	}
}

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
