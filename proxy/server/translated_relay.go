package server

// The relay every translating endpoint (Messages, Responses, and the
// Chat endpoint toward a Messages backend) shares: a non-stream answer
// read whole and translated (translatedJSON), a stream held until the
// backend answers (awaitStream) and then relayed through the endpoint's
// stream translator (translatedRelay) to the client (streamOut).

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// translatedJSON serves a non-stream request on an endpoint that
// translates: the backend's Chat answer goes through answer, and out to the
// client; a failure is answered in format f. answer also returns the
// backend's usage (nil when none), which it reads as it translates.
func (s *Server) translatedJSON(w http.ResponseWriter, r *http.Request, x *exchange, f format, answer func(chatBody []byte) ([]byte, *chat.Usage, error)) {
	resp, err := s.send(x)
	if err != nil {
		s.translatedBackendError(w, r, err, x.route, f)
		return
	}
	s.answerJSON(w, x, resp, f, "a Chat Completions response", func(err error) {
		s.translatedBackendError(w, r, err, x.route, f)
	}, answer)
}

// answerJSON reads a non-stream answer whole, puts it through answer
// (which also returns the backend's usage) and writes the result as JSON.
// answer's result never shares the memory of its input: once written it
// goes back to bufpool.
// A failed read goes to readFailed; a body answer cannot read is a 502 in
// format f saying it is not what (the format the backend should speak).
func (s *Server) answerJSON(w http.ResponseWriter, x *exchange, resp *upstream.Response, f format, what string, readFailed func(error), answer func(body []byte) ([]byte, *chat.Usage, error)) {
	b, err := readResponse(resp)
	x.finish(err)
	if err != nil {
		bufpool.Put(b)
		readFailed(err)
		return
	}
	out, usage, err := answer(b)
	x.noteUsage(w, usage)
	bufpool.Put(b)
	if err != nil {
		f.write(w, problemf(badGateway, "the backend's answer is not %s: %s", what, x.route.scrub(err.Error())))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.Write(out)
	bufpool.Put(out) // written: the response writer keeps no reference
}

// translatedBackendError answers a failed backend exchange on an endpoint
// that translates (Messages, Responses): the problem in the client's
// format, with its status.
func (s *Server) translatedBackendError(w http.ResponseWriter, r *http.Request, err error, route routeInfo, f format) {
	if r.Context().Err() != nil {
		return
	}
	if p, ok := balanceProblem(err); ok {
		f.write(w, p)
		return
	}
	var re *translate.RequestError
	if errors.As(err, &re) {
		// A retry translated the body again, for another backend, and it refused it.
		f.write(w, requestProblem(err))
		return
	}
	var ue *upstream.Error
	if errors.As(err, &ue) {
		f.write(w, backendProblem(ue, route))
		return
	}
	f.write(w, problemf(badGateway, "reading the backend's answer: %s", route.scrub(err.Error())))
}

type doResult struct {
	resp *upstream.Response
	err  error
}

// streamTranslator is a stream state machine of package translate: it
// turns a backend Chat stream into the client's events.
type streamTranslator interface {
	Start(dst []byte) []byte
	Ping(dst []byte) []byte
	Feed(dst, p []byte) ([]byte, error)
	Done() bool
	Finish(dst []byte) []byte
}

// translatedStream holds the client's response until the backend answers,
// so that a backend failing fast still yields a real HTTP status (in
// format f). If the wait reaches the ping interval, it commits the stream
// (200, st's first events) and pings every interval until the backend's
// first byte. A failure after the commit ends the stream with fail's
// event.
func (s *Server) translatedStream(w http.ResponseWriter, r *http.Request, x *exchange, st streamTranslator, fail func(dst []byte, p problem) []byte, f format) {
	out := newStreamOut(w)
	res, cancel, ok := s.awaitStream(r, x, out, func(dst []byte) []byte { return st.Ping(st.Start(dst)) })
	defer cancel()
	if !ok {
		return
	}
	s.translatedRelay(w, r, x, out, res, st, fail, f)
}

// translatedRelay answers with what awaitStream got: the backend's failure,
// or its Chat stream through st.
func (s *Server) translatedRelay(w http.ResponseWriter, r *http.Request, x *exchange, out *streamOut, res doResult, st streamTranslator, fail func(dst []byte, p problem) []byte, f format) {
	emit, committed := out.emit, out.committed
	route := x.route
	if res.err != nil {
		if r.Context().Err() != nil {
			return
		}
		if !committed {
			s.translatedBackendError(w, r, res.err, route, f)
			return
		}
		p := streamProblem(res.err, route)
		noteError(w, p.kind)
		emit(fail(nil, p))
		return
	}
	defer res.resp.Body.Close()
	start := st.Start(bufpool.Get(outSize))
	sent := emit(start)
	bufpool.Put(start)
	if !sent {
		x.done(balance.Abandoned, nil) // the client is gone
		return
	}
	err := relay(w, r, res.resp.Body, st.Feed, st.Done, st.Ping, s.ping)
	if u, ok := st.(interface{ BackendUsage() *chat.Usage }); ok {
		x.noteUsage(w, u.BackendUsage())
	}
	x.finish(err)
	if r.Context().Err() != nil {
		return
	}
	if err != nil {
		p := streamProblem(err, route)
		var be *translate.BackendError
		if errors.As(err, &be) {
			s.log.Warn("backend error mid-stream", "model", route.alias, "err", route.scrub(be.Message))
		} else {
			s.log.Warn("stream ended early", "model", route.alias, "err", route.scrub(err.Error()))
		}
		noteError(w, p.kind)
		emit(fail(nil, p))
		return
	}
	emit(st.Finish(nil))
}

// streamOut writes a stream to the client, committing it (200 and the
// event-stream headers) before the first bytes.
type streamOut struct {
	w         http.ResponseWriter
	flusher   http.Flusher
	committed bool
}

func newStreamOut(w http.ResponseWriter) *streamOut {
	f, _ := w.(http.Flusher)
	return &streamOut{w: w, flusher: f}
}

// emit writes and flushes b; it reports whether the client took it.
func (o *streamOut) emit(b []byte) bool {
	if !o.committed {
		commitStream(o.w)
		o.committed = true
	}
	_, err := o.w.Write(b)
	if o.flusher != nil {
		o.flusher.Flush()
	}
	return err == nil
}

// awaitStream sends the exchange's request and holds the client's response
// until a backend answers; if the wait reaches the ping interval, it emits
// ping's output (committing the stream) every interval until then. ok is
// false when the client went away (the exchange is finished and the
// backend's answer, if any, closed); otherwise the caller owns res. The
// caller calls cancel, which ends the backend exchange, once it is done.
func (s *Server) awaitStream(r *http.Request, x *exchange, out *streamOut, ping func(dst []byte) []byte) (res doResult, cancel context.CancelFunc, ok bool) {
	ctx, cancel := context.WithCancel(r.Context())
	x.ctx = ctx
	// send waits in this goroutine and a timer pings: a stream waiting on
	// a cold backend has no goroutine of its own for the wait.
	if s.ping > 0 {
		defer startPinger(out.w, out.emit, cancel, ping, s.ping).stop()
	}
	// send lets the bodies go once they are sent: a stream that lasts
	// minutes, or waits for a cold backend, need not keep its 50 KB
	// request.
	resp, err := s.send(x)
	res = doResult{resp, err}
	if r.Context().Err() != nil {
		if res.resp != nil {
			res.resp.Body.Close()
		}
		x.finish(r.Context().Err())
		return res, cancel, false
	}
	return res, cancel, true
}
