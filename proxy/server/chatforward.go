package server

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/dialect"
	"github.com/dragoman-dev/dragoman/proxy/passthrough"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// prepareChat is prepare for the Chat endpoint. With
// Options.ForwardChatBody, a body over
// passthrough.SmallBody whose length the client announced is read only as
// far as its model; the backend is chosen, and when it needs nothing but
// the model changed the body is forwarded while it arrives (x.fwd).
// Otherwise (a small body, one of unknown length that may exceed
// max_request_bytes, a backend that speaks Messages, folds system turns,
// or has its max_tokens clamped to max_output_tokens or a known context
// window) the body is read whole and translated, as prepare does.
func (s *Server) prepareChat(w http.ResponseWriter, r *http.Request, f format) (*exchange, bool) {
	if !s.forwardBody || r.ContentLength <= passthrough.SmallBody { // -1 too: unknown
		return s.prepareFor(w, r, f, translate.ChatToChat, translate.ChatToMessagesRequest)
	}
	body, ok := s.openBody(w, r, f)
	if !ok {
		return nil, false
	}
	pt, err := passthrough.Start(body, r.ContentLength)
	if err != nil {
		f.write(w, s.bodyProblem(err))
		return nil, false
	}
	x := s.newExchange(w, r, translate.ChatToChat, translate.ChatToMessagesRequest)
	if _, err := x.resolve(pt.Model); err != nil {
		x.done(balance.Abandoned, nil)
		if r.Context().Err() == nil {
			f.write(w, requestProblem(err))
		}
		return nil, false
	}
	if !x.forwardable() {
		whole, err := pt.Whole()
		if err != nil {
			x.done(balance.Abandoned, nil)
			f.write(w, s.readProblem(err))
			return nil, false
		}
		return s.translateFor(w, r, f, x, whole)
	}
	x.fwd = pt
	x.req = translate.BackendRequest{Target: x.route.target}
	setAlias(w, x.alias)
	return x, true
}

// forwardable says whether the backend held needs nothing of the body
// changed but its model (what ChatToChat would do beside it needs the
// whole body).
func (x *exchange) forwardable() bool {
	t := x.route.target
	return x.route.Protocol != config.ProtocolMessages && t.SupportsSystemMessage && t.MaxOutputTokens == 0 && t.ContextWindow == 0 &&
		!dialect.Rewrites(x.route.server)
}

// forwardCall makes c send the forwarded body, model rewritten for the
// backend held; its stream flag, when not read yet, is decided at the
// answer's headers.
func (x *exchange) forwardCall(c *upstream.Call) {
	model := x.route.target.BackendModel
	c.Body, c.Recycle = nil, nil
	c.Open = func() io.Reader { return x.fwd.Body(model) }
	c.ContentLength = x.fwd.Size(model)
	if done, stream, _ := x.fwd.Finished(); done {
		c.Stream = stream
	} else {
		c.StreamFlag = x.streamed
	}
}

// streamed says, once a backend answered, whether the answer is a stream:
// the request's stream flag when its body was read to the end, else (a
// backend that answered before reading it all) the answer's type.
func (x *exchange) streamed(h http.Header) bool {
	if done, stream, _ := x.fwd.Finished(); done {
		return stream
	}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// answered notes what a forwarded body said of itself once a backend
// answered it: its stream flag (for the relay) and max_tokens (for the
// metrics and the trace).
func (x *exchange) answered(resp *upstream.Response) {
	if x.fwd == nil {
		return
	}
	x.req.Stream = x.streamed(resp.Header)
	if x.obs != nil {
		_, _, x.obs.maxTokens = x.fwd.Finished()
		x.obs.stream = x.req.Stream
	}
}

// bodyErr is what went wrong with a forwarded body (a malformation found
// after the backend was chosen, or the client's read failing): the
// backend request was abandoned before the body's last byte.
func (x *exchange) bodyErr() error {
	if x.fwd == nil {
		return nil
	}
	return x.fwd.Err()
}

// chatFailed answers a Chat exchange that failed: a forwarded body that
// turned out malformed gets the 400 it would have got read whole (nothing
// was sent to the client yet); any other failure is the backend's.
func (s *Server) chatFailed(w http.ResponseWriter, r *http.Request, x *exchange, err error) {
	if berr := x.bodyErr(); berr != nil {
		s.log.Info("chat request body malformed after the backend was chosen; the backend request was abandoned", "model", x.alias)
		if r.Context().Err() == nil {
			chatFormat.write(w, s.bodyProblem(berr))
		}
		return
	}
	s.chatBackendError(w, r, err, x.route)
}

// bodyProblem words what was wrong with a forwarded body: a malformation
// (400) or an error reading it (too long, or the client gone).
func (s *Server) bodyProblem(err error) problem {
	var re *translate.RequestError
	if errors.As(err, &re) {
		return requestProblem(err)
	}
	return s.readProblem(err)
}
