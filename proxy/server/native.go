package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// A vendora/ backend serves the Messages format itself: a Messages request
// passes through to {api_base}/messages (translate.MessagesOnMessagesRequest says
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
	}
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
func (s *Server) nativeStream(w http.ResponseWriter, r *http.Request, x *exchange, st *translate.MessagesOnChatStream) {
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
	ns := translate.NewMessagesOnMessagesStream(x.alias)
	if out.committed && !startNative {
		ns.SkipStart() // the translated path's message_start went out
	}
	if !out.committed {
		commitStream(w)
		out.committed = true
	}
	err := relay(w, r, res.resp.Body, scrubErrors(ns.Feed, route.apiKey), ns.Done, translate.AppendPing, s.ping)
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
	s.log.Warn("messages stream ended early", "model", route.alias, "err", route.scrub(err.Error()))
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
	req, err := translate.MessagesOnMessagesRequest(body, func(string) (translate.Target, error) { return route.target, nil })
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
			return translate.ChatOnMessagesResponse(b, route.alias, now)
		})
		return
	}
	defer resp.Body.Close()
	commitStream(w)
	rs := translate.NewChatOnMessagesStream(route.alias, now, x.req.IncludeUsage)
	err := relay(w, r, resp.Body, scrubErrors(rs.Feed, route.apiKey), rs.Done, nil, 0)
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
		s.log.Warn("chat stream ended early", "model", route.alias, "err", route.scrub(err.Error()))
	}
}
