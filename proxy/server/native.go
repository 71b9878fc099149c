package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// A vendora/ backend serves the Messages format itself: a Messages request
// passes through to {api_base}/messages (translate.MessagesToMessages says
// what changes), and its answer comes back event by event with the alias
// as its model. Which way a request goes is decided by the backend the
// pool picks (exchange.translateBody), attempt by attempt.

// nativeHeaders are the request headers a Messages backend receives from
// the client: the format's version and betas. The client's key never
// passes; the backend gets its own.
var nativeHeaders = []string{"Anthropic-Version", "Anthropic-Beta"}

// nativeCall is the call of the exchange's request to a Messages backend.
func (x *exchange) nativeCall(path string) upstream.Call {
	r := x.route
	h := make(http.Header, 3)
	for _, name := range nativeHeaders {
		if v := x.header.Values(name); len(v) > 0 {
			h[name] = v
		}
	}
	if _, ok := h["Anthropic-Version"]; !ok {
		h["Anthropic-Version"] = []string{"2023-06-01"}
	}
	if r.apiKey != "" {
		h["X-Api-Key"] = []string{r.apiKey}
	}
	return upstream.Call{
		BaseURL:       r.apiBase,
		Path:          path,
		APIKey:        r.apiKey,
		Header:        h,
		Body:          x.req.Body,
		Stream:        x.req.Stream,
		Timeout:       r.Timeout,
		StreamTimeout: r.StreamTimeout,
		Recycle:       bufpool.Put, // translate builds the body in a pooled buffer
		Sent:          x.sent(),
	}
}

// checkedWrite is write for the pings of a stream: when the body's
// validation is deferred, no ping commits the stream before the body was
// found valid (a malformed one gets its 400); the write fails instead.
func (x *exchange) checkedWrite(write func([]byte) bool) func([]byte) bool {
	c := x.check
	if c == nil {
		return write
	}
	return func(b []byte) bool {
		if c.run(); c.err != nil {
			return false
		}
		return write(b)
	}
}

// sent is what upstream calls once the body was written
// (upstream.Call.Sent): the deferred validation, when the body has one.
func (x *exchange) sent() func() {
	if x.check == nil {
		return nil
	}
	return x.check.run
}

// deferredCheck is the validation of a client's body that was sent
// before it was validated (translate.BackendRequest.Check). It runs once:
// in the goroutine that wrote the body, right after it was written
// (upstream.Call.Sent: the handler's own on a plain-HTTP backend, the
// transport's otherwise), while the backend reads it, or else when its
// verdict is asked for. A body found malformed cancels the backend
// request at once.
type deferredCheck struct {
	once   sync.Once
	check  func() error
	cancel context.CancelCauseFunc
	err    error
}

func (c *deferredCheck) run() {
	c.once.Do(func() {
		if c.err = c.check(); c.err != nil {
			c.cancel(c.err)
		}
	})
}

// startCheck arms the deferred validation of the client's body, if it
// has one: the attempts' context is then cancelled when it fails.
func (x *exchange) startCheck() {
	check := x.req.Check
	x.req.Check = nil
	if check == nil || x.check != nil {
		return
	}
	ctx, cancel := context.WithCancelCause(x.ctx)
	x.ctx = ctx
	x.check = &deferredCheck{check: check, cancel: cancel}
}

// bodyCheck returns the verdict of the body's deferred validation, running
// it or waiting for it if need be: nil when the body is valid, or was
// validated before it was sent.
func (x *exchange) bodyCheck() error {
	if x.check == nil {
		return nil
	}
	x.check.run()
	return x.check.err
}

// nativeStream serves a Messages stream when a backend of the pool speaks
// the Messages format. While no backend answers, pings keep the client's
// idle timer from firing: for a Messages backend pings alone (its own
// message_start comes with its answer), for a Chat backend message_start
// and pings as on the translated path. If the answer comes from a backend
// of the other kind (a retry in a mixed pool), it is relayed all the
// same: a Chat stream is translated, a Messages stream relayed without
// its message_start when one went out already. A Messages stream that
// breaks off before message_stop ends with an error event.
func (s *Server) nativeStream(w http.ResponseWriter, r *http.Request, x *exchange, st *translate.Stream) {
	startNative := x.route.Protocol == config.ProtocolMessages
	ping := func(dst []byte) []byte { return st.Ping(st.Start(dst)) }
	if startNative {
		ping = translate.AppendPing
	}
	out := newStreamOut(w)
	res, cancel, ok := s.awaitStream(r, x, out, ping)
	defer cancel()
	if !ok {
		return
	}
	fail := func(dst []byte, p problem) []byte { return st.Fail(dst, renderings[p.kind].messagesType, p.message) }
	if res.err != nil || x.route.Protocol != config.ProtocolMessages {
		s.translatedRelay(w, r, x, out, res, st, fail, messagesFormat)
		return
	}
	route := x.route
	defer res.resp.Body.Close()
	ns := translate.NewNativeStream(x.alias)
	if out.committed && !startNative {
		ns.SkipStart() // the translated path's message_start went out
	}
	if !out.committed {
		commitStream(w)
		out.committed = true
	}
	err := relay(w, r, res.resp.Body, scrubFeed(ns.Feed, route.apiKey), ns.Done, translate.AppendPing, s.ping)
	noteUsage(w, ns.BackendUsage())
	if err == nil && !ns.Done() {
		err = errors.New("the backend stream broke off before message_stop")
	}
	if be := ns.BackendErr(); be != nil && err == nil {
		err = be
	}
	x.finish(err)
	if r.Context().Err() != nil || err == nil {
		return
	}
	s.log.Warn("messages stream ended early", "model", route.alias, "err", scrub(err.Error(), route.apiKey))
	if ns.BackendErr() == nil {
		p := streamProblem(err, route)
		out.emit(ns.Fail(nil, renderings[p.kind].messagesType, p.message))
	}
}

// nativeCount asks a Messages backend's own count_tokens, with the body
// normalized as for /messages; ok is false when it has none (404 or 405:
// remembered, not asked again) or did not answer with a count.
func (s *Server) nativeCount(r *http.Request, route routeInfo, body []byte) (int, bool) {
	key := route.apiBase + "/messages/count_tokens"
	s.tokenizeMu.Lock()
	has, known := s.tokenize[key]
	s.tokenizeMu.Unlock()
	if known && !has {
		return 0, false
	}
	req, err := translate.MessagesToMessages(body, func(string) (translate.Target, error) { return route.target, nil })
	if err != nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	x := &exchange{route: route, header: r.Header, req: req}
	call := x.nativeCall("/messages/count_tokens")
	resp, err := s.pool.Do(ctx, call)
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.Kind == upstream.Status && (ue.Status == http.StatusNotFound || ue.Status == http.StatusMethodNotAllowed) {
		s.tokenizeMu.Lock()
		s.tokenize[key] = false
		s.tokenizeMu.Unlock()
		return 0, false
	}
	if err != nil {
		return 0, false
	}
	b, err := readResponse(resp)
	defer bufpool.Put(b)
	var out struct {
		InputTokens *int `json:"input_tokens"`
	}
	if err != nil || json.Unmarshal(b, &out) != nil || out.InputTokens == nil {
		return 0, false
	}
	s.tokenizeMu.Lock()
	s.tokenize[key] = true
	s.tokenizeMu.Unlock()
	return *out.InputTokens, true
}

// chatFromMessages answers a Chat client from a Messages backend: the
// answer, JSON or stream, translated back to the Chat format.
func (s *Server) chatFromMessages(w http.ResponseWriter, r *http.Request, x *exchange, resp *upstream.Response) {
	route := x.route
	now := time.Now().Unix()
	if !x.req.Stream {
		s.answerJSON(w, x, resp, chatFormat, "a Messages response", func(err error) {
			s.chatBackendError(w, r, err, route)
		}, func(b []byte) ([]byte, *chat.Usage, error) {
			return translate.MessagesToChatResponse(b, route.alias, now)
		})
		return
	}
	defer resp.Body.Close()
	commitStream(w)
	rs := translate.NewReverseStream(route.alias, now, x.req.IncludeUsage)
	err := relay(w, r, resp.Body, scrubFeed(rs.Feed, route.apiKey), rs.Done, nil, 0)
	noteUsage(w, rs.BackendUsage())
	if err == nil {
		var out []byte
		if out, err = rs.Finish(nil); len(out) > 0 {
			w.Write(out)
		}
	}
	if err == nil && !rs.Ended() {
		err = errors.New("the backend stream broke off before message_stop")
	}
	x.finish(err)
	if err != nil && r.Context().Err() == nil {
		p := streamProblem(err, route)
		w.Write([]byte("data: " + string(chatErrorBody(p)) + "\n\n"))
		s.log.Warn("chat stream ended early", "model", route.alias, "err", scrub(err.Error(), route.apiKey))
	}
}
