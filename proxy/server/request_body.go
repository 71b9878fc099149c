package server

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// readBody reads a request body within the configured limit, answering the
// client itself when it cannot. The body is in a pooled buffer: the caller
// gives it back (bufpool.Put) when nothing uses it any more. It waits for
// its admission share before it reads (admission.go).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, f format) ([]byte, bool) {
	body, ok := s.openBody(w, r, f)
	if !ok {
		return nil, false
	}
	if !s.admit(w, r) {
		return nil, false // the client went away while it waited
	}
	// limit+1: MaxBytesReader, not ReadAll, says when the body is too long.
	buf, err := bufpool.ReadAll(body, r.ContentLength, s.cfg.MaxRequestBytes+1)
	if err != nil {
		admittedOf(w).leave()
		f.write(w, s.readProblem(err))
		bufpool.Put(buf)
		return nil, false
	}
	if len(buf) == 0 {
		admittedOf(w).leave()
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
	if errors.Is(err, keys.ErrUnreachable) {
		return storeProblem
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
