package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// responses serves POST /v1/responses (Codex CLI, the OpenAI SDKs'
// Responses clients): the request translated to the Chat format of the
// alias's backend, the answer translated back, streamed or not. The proxy
// is stateless: the client sends the whole conversation every turn.
func (s *Server) responses(w http.ResponseWriter, r *http.Request, f format) {
	var call *translate.ResponsesCall
	x, ok := s.prepare(w, r, f, func(body []byte, resolve translate.Resolver) (translate.BackendRequest, error) {
		br, c, err := translate.ResponsesToChat(body, resolve)
		call = c
		return br, err
	})
	if !ok {
		return
	}
	if len(call.Dropped) > 0 {
		s.log.Debug("left out of a Responses request: the backend cannot run them", "model", x.alias, "dropped", strings.Join(call.Dropped, ", "))
	}
	id, created := translate.NewResponseID(), time.Now().Unix()
	if x.req.Stream {
		st := translate.NewResponsesStream(x.alias, id, created, call, x.req.InputTokens)
		fail := func(dst []byte, p problem) []byte { return st.Fail(dst, responsesCode(p), p.message) }
		s.translatedStream(w, r, x, st, fail, f)
		return
	}
	s.translatedJSON(w, r, x, f, func(b []byte) ([]byte, *chat.Usage, error) {
		out, err := translate.ChatToResponses(b, x.alias, id, created, call)
		return out, chat.ParseUsage(b), err
	})
}

// responsesCode is the error code of a response.failed event: the error
// type a status answer would have carried.
func responsesCode(p problem) string {
	if p.overflow != nil {
		return overflow.ChatCode // Codex reads it as "context window exceeded"
	}
	switch p.kind {
	case rateLimited:
		return "rate_limit_exceeded"
	case overloaded, unavailable:
		return "server_is_overloaded"
	}
	return renderings[p.kind].chatType
}
