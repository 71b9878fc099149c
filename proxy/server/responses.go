package server

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// responses serves POST /v1/responses (Codex CLI, the OpenAI SDKs'
// Responses clients): the request translated to the Chat format of the
// alias's backend, the answer translated back, streamed or not. A backend
// that speaks the Messages format (vendora/) is reached through the Chat
// format, as a Chat client's request to it is: Responses → Chat → Messages,
// and the answer Messages → Chat → Responses. Over HTTP the proxy is
// stateless: the client sends the whole conversation every turn (the
// WebSocket transport, responses_websocket.go, keeps the last turn of its
// connection). Compaction items are opened, and a compaction_trigger
// answered, where the translation meets one (responsesOpened).
func (s *Server) responses(w http.ResponseWriter, r *http.Request, f format) {
	body, ok := s.readBody(w, r, f)
	if !ok {
		return
	}
	s.responsesBody(w, r, f, body, false)
}

// responsesBody serves a Responses request whose body has been read;
// opened: its compaction items have been opened (responsesOpened), and a
// compaction or compaction_trigger item the translation meets is refused.
func (s *Server) responsesBody(w http.ResponseWriter, r *http.Request, f format, body []byte, opened bool) {
	if tool, ok := s.webSearchTool(body, translate.ResponsesWebSearchTool); ok {
		if !opened && mentionsCompaction(body) {
			s.responsesOpened(w, r, f, body)
			return
		}
		s.responsesSearch(w, r, body, tool)
		return
	}
	var call *translate.ResponsesCall
	x := s.newExchange(w, r, func(body []byte, resolve translate.Resolver) (translate.BackendRequest, error) {
		br, c, err := translate.ResponsesOnChatRequest(body, resolve)
		call = c
		return br, err
	}, func(body []byte, resolve translate.Resolver) (translate.BackendRequest, error) {
		br, c, err := translate.ResponsesOnMessagesRequest(body, resolve)
		call = c
		return br, err
	})
	x.opensCompaction = !opened
	x, ok := s.translateFor(w, r, f, x, body)
	if !ok {
		if x != nil && x.metCompaction {
			s.responsesOpened(w, r, f, x.body)
		}
		return
	}
	// Codex offers a hosted tool (web_search) in every request: without
	// search_settings the line is written, and its arguments made, only
	// at debug level.
	if len(call.Dropped) > 0 && s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.Debug("left out of a Responses request: the backend cannot run them", "model", x.alias, "dropped", strings.Join(call.Dropped, ", "))
	}
	id, created := translate.NewResponseID(), time.Now().Unix()
	if x.req.Stream {
		st := translate.NewResponsesOnChatStream(x.alias, id, created, call, x.req.InputTokens)
		fail := func(dst []byte, p problem) []byte { return st.Fail(dst, responsesCode(p), p.message) }
		out := newStreamOut(w)
		res, cancel, ok := s.awaitStream(r, x, out, func(dst []byte) []byte { return st.Ping(st.Start(dst)) })
		defer cancel()
		if !ok {
			return
		}
		var tr streamTranslator = st
		if res.err == nil && x.route.Protocol == config.ProtocolMessages {
			tr = translate.NewResponsesOnMessagesStream(translate.NewChatOnMessagesStream(x.alias, created, true), st)
		}
		s.translatedRelay(w, r, x, out, res, tr, fail, f)
		return
	}
	s.translatedJSON(w, r, x, f, func(b []byte) ([]byte, *chat.Usage, error) {
		if x.route.Protocol == config.ProtocolMessages {
			chatBody, _, err := translate.ChatOnMessagesResponse(b, x.alias, created)
			if err != nil {
				return nil, nil, err
			}
			b = chatBody
		}
		return translate.ResponsesOnChatResponse(b, x.alias, id, created, call)
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
	case overloaded:
		return "server_is_overloaded"
	}
	return renderings[p.kind].chatType
}
