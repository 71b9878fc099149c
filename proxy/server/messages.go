package server

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/discover"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/metrics"
	"github.com/dragoman-dev/dragoman/proxy/tokenize"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

func (s *Server) passThroughOff(w http.ResponseWriter, f format) bool {
	if s.cfg.PassThrough {
		return false
	}
	f.write(w, problemf(notFound, "the messages endpoint is off: set general_settings.enable_vendora_pass_through: true in %s to turn it on", s.cfg.Path))
	return true
}

// messages serves a Messages request by translating it to the Chat format
// of the alias's backend and the answer back.
func (s *Server) messages(w http.ResponseWriter, r *http.Request, f format) {
	if s.passThroughOff(w, f) {
		return
	}
	body, ok := s.readBody(w, r, f)
	if !ok {
		return
	}
	if tool, ok := s.webSearchTool(body, translate.MessagesWebSearchTool); ok {
		s.messagesSearch(w, r, body, tool)
		return
	}
	x := s.newExchange(w, r, translate.MessagesOnChatRequest, translate.MessagesOnMessagesRequest)
	x.messagesBody = true
	x, ok = s.translateFor(w, r, f, x, body)
	if !ok {
		return
	}
	if x.req.Stream {
		s.messagesStream(w, r, x)
		return
	}
	s.translatedJSON(w, r, x, messagesFormat, func(b []byte) ([]byte, *chat.Usage, error) {
		if x.route.Protocol == config.ProtocolMessages {
			// The backend answered in the Messages format: only the model changes.
			return translate.MessagesResponseModel(b, x.alias)
		}
		return translate.MessagesOnChatResponseWithUsage(b, x.alias)
	})
}

// messagesStream serves a Messages stream (translatedStream, or
// nativeStream when a backend of the pool speaks the Messages format).
func (s *Server) messagesStream(w http.ResponseWriter, r *http.Request, x *exchange) {
	st := translate.NewMessagesOnChatStream(x.alias, newMessageID(), x.req.InputTokens)
	if x.native != nil {
		s.nativeStream(w, r, x, st)
		return
	}
	fail := func(dst []byte, p problem) []byte { return st.Fail(dst, renderings[p.kind].messagesType, p.message) }
	s.translatedStream(w, r, x, st, fail, messagesFormat)
}

func newMessageID() string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b [28]byte
	copy(b[:], "msg_")
	for i := 4; i < len(b); i++ {
		b[i] = digits[rand.IntN(len(digits))]
	}
	return string(b[:])
}

// countTokens answers POST /v1/messages/count_tokens locally: with the
// backend's /tokenize when it has one, an estimate otherwise. The header
// Dragoman-Token-Count says which. The body is decoded once: its model,
// the estimate and the text for /tokenize come from that decode.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request, f format) {
	if s.passThroughOff(w, f) {
		return
	}
	body, ok := s.readBody(w, r, f)
	if !ok {
		return
	}
	defer bufpool.Put(body)
	tc, err := translate.DecodeTokenCount(body)
	if err != nil {
		f.write(w, requestProblem(err))
		return
	}
	n, source := 0, "estimate"
	alias := tc.Model()
	pool, _, _ := s.poolFor(r.Header, alias, body)
	if k := keyOf(w); k != nil {
		// The key's models before any backend is asked (a count is not
		// counted against its limits).
		if err := s.gate.Allow(k, pool, alias); err != nil {
			f.write(w, requestProblem(err))
			return
		}
	}
	if first, ok := s.bal.Route(pool); ok {
		setAlias(w, alias)
		route := s.withDiscovered(newRouteInfo(alias, first))
		count, ok := 0, false
		// A Messages backend's own count_tokens, and llama-server's (it
		// serves one beside its Chat endpoint): exact, its chat template
		// included.
		if route.Protocol == config.ProtocolMessages || route.server == discover.LlamaCpp {
			count, ok = s.nativeCount(r, route, body)
		}
		if !ok {
			count, ok = s.counter.Count(r.Context(), tokenizer(route), tc.TokenizeParts())
		}
		if ok {
			n, source = count, "backend"
			noteBackend(w, s.bal.First(pool).Name)
		}
	}
	if source == "estimate" {
		n = tc.Estimate()
		noteBackend(w, metrics.Estimated)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Dragoman-Token-Count", source)
	w.Write([]byte(`{"input_tokens":` + strconv.Itoa(n) + "}"))
}

// tokenizer is the tokenizer of a route's backend model.
func tokenizer(route routeInfo) tokenize.Backend {
	return tokenize.Backend{Server: route.server, Root: strings.TrimSuffix(strings.TrimRight(route.apiBase, "/"), "/v1"), APIKey: route.apiKey, Model: route.BackendModel}
}
