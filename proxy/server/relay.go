package server

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// readBody reads a request body within the configured limit, answering the
// client itself when it cannot.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, f format) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !acceptableType(ct) {
		f.write(w, problemf(unsupportedMedia, "Content-Type %q is not accepted: send the body as application/json", ct))
		return nil, false
	}
	limit := s.cfg.MaxRequestBytes
	if r.ContentLength > limit {
		f.write(w, problemf(tooLarge, "request body of %d bytes is over the limit of %d bytes (general_settings.max_request_bytes)", r.ContentLength, limit))
		return nil, false
	}
	size := 4096
	if r.ContentLength > 0 {
		size = int(r.ContentLength) + 1
	}
	buf := make([]byte, 0, size)
	reader := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := reader.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				f.write(w, problemf(tooLarge, "request body is over the limit of %d bytes (general_settings.max_request_bytes)", limit))
			} else {
				f.write(w, problemf(invalidRequest, "reading the request body: %v", err))
			}
			return nil, false
		}
	}
	if len(buf) == 0 {
		f.write(w, problemf(invalidRequest, "the request body is empty: send a JSON object"))
		return nil, false
	}
	return buf, true
}

// acceptableType allows JSON, and the types of clients that send JSON
// without saying so (curl -d sends application/x-www-form-urlencoded).
func acceptableType(ct string) bool {
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

func (s *Server) call(route routeInfo, req translate.BackendRequest) upstream.Call {
	return upstream.Call{
		BaseURL:       route.apiBase,
		Path:          "/chat/completions",
		APIKey:        route.apiKey,
		Body:          req.Body,
		Stream:        req.Stream,
		Timeout:       route.Timeout,
		StreamTimeout: route.StreamTimeout,
		Retries:       route.NumRetries,
	}
}

// maxResponseBytes bounds a non-stream backend answer.
const maxResponseBytes = 64 << 20

func readResponse(resp *upstream.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
}

var readBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

type readResult struct {
	buf *[]byte
	n   int
	err error
}

// relay copies a backend stream to the client through feed, flushing after
// every read. It reads in its own goroutine so that, while the backend is
// silent, ping (when not nil) keeps the client's idle timer from firing.
// One read is in flight at a time: a client that stops reading stops the
// backend reads too. It returns the error that ended the stream early (a
// read error, a feed error, or the client's going away), nil at a clean end.
func relay(w http.ResponseWriter, r *http.Request, body io.Reader, feed func(dst, p []byte) ([]byte, error), done func() bool, ping func(dst []byte) []byte, every time.Duration) error {
	flusher, _ := w.(http.Flusher)
	results := make(chan readResult)
	next := make(chan struct{}, 1)
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			buf := readBuffers.Get().(*[]byte)
			n, err := body.Read(*buf)
			select {
			case results <- readResult{buf, n, err}:
			case <-quit:
				readBuffers.Put(buf)
				return
			}
			if err != nil {
				return
			}
			select {
			case <-next:
			case <-quit:
				return
			}
		}
	}()
	var tick <-chan time.Time
	var timer *time.Timer
	if ping != nil {
		timer = time.NewTimer(every)
		defer timer.Stop()
		tick = timer.C
	}
	var out []byte
	for {
		select {
		case res := <-results:
			var ferr error
			if res.n > 0 {
				out, ferr = feed(out[:0], (*res.buf)[:res.n])
				if len(out) > 0 {
					if _, err := w.Write(out); err != nil {
						readBuffers.Put(res.buf)
						return err
					}
					if flusher != nil {
						flusher.Flush()
					}
				}
			}
			readBuffers.Put(res.buf)
			if ferr != nil {
				return ferr
			}
			if res.err == io.EOF || (done != nil && done()) {
				return nil
			}
			if res.err != nil {
				return res.err
			}
			if timer != nil {
				timer.Reset(every)
			}
			next <- struct{}{}
		case <-tick:
			if _, err := w.Write(ping(out[:0])); err != nil {
				return err
			}
			if flusher != nil {
				flusher.Flush()
			}
			timer.Reset(every)
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
}
