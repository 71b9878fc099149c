package server

// The web search loop: a Messages request with a web_search_* server tool,
// or a Responses request with the hosted web_search tool, when
// search_settings is configured. The backend model is offered a web_search
// function in the tool's place (package translate); each turn goes to a
// backend of the alias's pool as a non-stream Chat request (translated for
// a vendora/ backend), and when the model calls web_search the proxy runs
// the search (package websearch), gives the model the results as the
// call's result and asks for the next turn, until the model answers
// without a search. The searches are bounded by the tool's max_uses (else
// defaultMaxSearches) and search_settings.time_budget; a search that fails
// becomes an error result inside the answer (web_search_tool_result_error,
// a failed web_search_call), never a failed request. A stream is committed
// when the first turn answers or the ping interval passes, whichever is
// first; pings keep it alive while the backend thinks and while a search
// runs, and each search's blocks go out as it ends.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

// defaultMaxSearches bounds the searches of a request whose tool sets no
// max_uses (Codex's web_search has none).
const defaultMaxSearches = 5

// errClientGone ends a loop whose stream client went away.
var errClientGone = errors.New("the client went away")

// searchLoop is one request's turns and searches.
type searchLoop struct {
	s        *Server
	w        http.ResponseWriter
	r        *http.Request
	alias    string
	tool     translate.WebSearchTool
	conv     *translate.SearchChat
	newID    func() string
	created  int64
	deadline time.Time

	calls []translate.SearchCall
	runs  int  // searches that went to the provider
	last  bool // the next turn may not search
	usage chat.Usage
	route routeInfo // of the latest turn
}

// loopStream is how a streamed loop writes to its client: out, with ping
// while it waits and searched once a turn's searches end.
type loopStream struct {
	out      *streamOut
	ping     func(dst []byte) []byte
	searched func(dst []byte, calls []translate.SearchCall) []byte
	cancel   context.CancelFunc
}

func (s *Server) newSearchLoop(w http.ResponseWriter, r *http.Request, alias string, tool translate.WebSearchTool, conv *translate.SearchChat, newID func() string) *searchLoop {
	return &searchLoop{s: s, w: w, r: r, alias: alias, tool: tool, conv: conv, newID: newID,
		created: time.Now().Unix(), deadline: time.Now().Add(s.search.TimeBudget())}
}

// webSearchTool finds the client's web search tool in a request body with
// find, when search_settings is configured: without it, a request costs
// nothing more than before.
func (s *Server) webSearchTool(body []byte, find func([]byte) (translate.WebSearchTool, bool)) (translate.WebSearchTool, bool) {
	if s.search == nil {
		return translate.WebSearchTool{}, false
	}
	return find(body)
}

// searchTarget resolves an alias for the translation that starts a loop:
// the first backend of its pool (each turn then takes its own slot).
func (s *Server) searchTarget(alias string) (translate.Target, error) {
	pool := s.poolOf(alias)
	if pool == "" {
		return translate.Target{}, &unknownAlias{alias: alias, known: s.cfg.Aliases()}
	}
	route, ok := s.bal.Route(pool)
	if !ok {
		return translate.Target{}, &unknownAlias{alias: alias, known: s.cfg.Aliases()}
	}
	return s.withDiscovered(newRouteInfo(alias, route)).target, nil
}

func (l *searchLoop) maxUses() int {
	if l.tool.MaxUses > 0 {
		return l.tool.MaxUses
	}
	return defaultMaxSearches
}

// run asks for turns until the model answers without searching, and
// returns that answer as a Chat response (a bufpool buffer). st is nil
// for a non-stream request.
func (l *searchLoop) run(ctx context.Context, st *loopStream) ([]byte, error) {
	for turns := 0; ; turns++ {
		if turns > l.maxUses() {
			l.last = true // a model that keeps calling: it answers now
		}
		var turn *translate.ChatTurn
		var body []byte
		var err error
		l.waiting(st, func() { turn, body, err = l.turn(ctx) })
		if err != nil {
			return nil, err
		}
		addUsage(&l.usage, turn.Usage)
		searches, _ := turn.SearchCalls()
		if len(searches) == 0 || l.last {
			return body, nil
		}
		bufpool.Put(body)
		var calls []translate.SearchCall
		l.waiting(st, func() { calls = l.searchAll(ctx, turn.Text, searches) })
		if st != nil && !st.out.emit(st.searched(nil, calls)) {
			return nil, errClientGone
		}
		l.conv.Add(turn, calls)
	}
}

// waiting runs fn, pinging a stream's client meanwhile.
func (l *searchLoop) waiting(st *loopStream, fn func()) {
	if st == nil {
		fn()
		return
	}
	p := startPinger(l.w, st.out.emit, st.cancel, st.ping, l.s.ping)
	fn()
	p.stop()
}

// turn asks a backend of the pool for the model's next turn and returns
// it, with the answer as a Chat response.
func (l *searchLoop) turn(ctx context.Context) (*translate.ChatTurn, []byte, error) {
	s := l.s
	body := l.conv.Body(l.last)
	x := s.newExchange(l.w, l.r, translate.ChatOnChatRequest, translate.ChatOnMessagesRequest)
	x.ctx = ctx
	x.body = body
	req, err := x.translateBody(body)
	if err != nil {
		x.done(balance.Abandoned, nil)
		bufpool.Put(body)
		return nil, nil, err
	}
	x.req = req
	resp, err := s.send(x)
	l.route = x.route
	if err != nil {
		return nil, nil, err
	}
	b, err := readResponse(resp)
	x.finish(err)
	if err != nil {
		bufpool.Put(b)
		return nil, nil, err
	}
	if x.route.Protocol == config.ProtocolMessages {
		chatBody, _, err := translate.ChatOnMessagesResponse(b, l.alias, l.created)
		bufpool.Put(b)
		if err != nil {
			return nil, nil, err
		}
		b = chatBody
	}
	turn, err := translate.ReadChatTurn(b)
	if err != nil {
		bufpool.Put(b)
		return nil, nil, err
	}
	return turn, b, nil
}

// searchAll runs a turn's web_search calls, in order.
func (l *searchLoop) searchAll(ctx context.Context, text string, calls []chat.ToolCall) []translate.SearchCall {
	out := make([]translate.SearchCall, 0, len(calls))
	for i, tc := range calls {
		c := translate.SearchCall{ID: l.newID(), CallID: tc.ID}
		if i == 0 {
			c.Text = text
		}
		q, ok := translate.SearchQuery(tc.Function.Arguments)
		c.Query = q
		var took time.Duration
		switch {
		case !ok:
			c.Code = websearch.InvalidInput
		case l.runs >= l.maxUses():
			c.Code, l.last = websearch.MaxUsesExceeded, true
		case l.repeated(q):
			// The results are in the model's history already: a second
			// search would find the same, and a model that repeats a
			// query is in a loop. It answers next.
			c.Code, l.last = websearch.InvalidInput, true
		case !time.Now().Before(l.deadline):
			c.Code, l.last = websearch.Unavailable, true
		default:
			start := time.Now()
			c.Results, c.Code = l.search(ctx, q)
			took = time.Since(start)
		}
		result := "ok"
		if c.Code != "" {
			result = string(c.Code)
		}
		l.s.metrics.WebSearch(l.s.search.Provider(), result, took)
		out = append(out, c)
		l.calls = append(l.calls, c)
	}
	return out
}

// search runs one query at the provider within the loop's time budget.
func (l *searchLoop) search(ctx context.Context, q string) ([]websearch.Result, websearch.Code) {
	ctx, cancel := context.WithDeadline(ctx, l.deadline)
	defer cancel()
	done := l.s.tracer.Search(ctx, l.s.search.Provider())
	query := websearch.Query{Text: q, AllowedDomains: l.tool.AllowedDomains, BlockedDomains: l.tool.BlockedDomains, Country: l.tool.Country}
	results, err := l.s.search.Search(ctx, query)
	var code websearch.Code
	if err != nil {
		code = websearch.CodeOf(err)
		if code == websearch.QueryTooLong || code == websearch.InvalidInput {
			err = nil // the model's fault, not the provider's: no warning
		} else {
			l.runs++
		}
	} else {
		l.runs++
	}
	if err != nil {
		l.s.log.Warn("web search failed", "provider", l.s.search.Provider(), "model", l.alias, "code", code, "err", err)
	}
	if done != nil {
		done(len(results), string(code))
	}
	return results, code
}

func (l *searchLoop) repeated(q string) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	for _, c := range l.calls {
		if c.Query != "" && norm(c.Query) == norm(q) && c.Code == "" {
			return true
		}
	}
	return false
}

func addUsage(sum *chat.Usage, u *chat.Usage) {
	if u == nil {
		return
	}
	sum.PromptTokens += u.PromptTokens
	sum.CompletionTokens += u.CompletionTokens
	sum.TotalTokens += u.TotalTokens
	if n := u.CachedTokens(); n > 0 {
		if sum.PromptTokensDetails == nil {
			sum.PromptTokensDetails = &chat.PromptTokensDetails{}
		}
		sum.PromptTokensDetails.CachedTokens += n
	}
}

// fail ends a loop that could not finish: a real HTTP error while nothing
// is committed, else fail's event on the stream.
func (l *searchLoop) fail(err error, st *loopStream, f format, fail func(dst []byte, p problem) []byte) {
	if l.r.Context().Err() != nil || errors.Is(err, errClientGone) {
		return
	}
	if st == nil || !st.out.committed {
		l.s.translatedBackendError(l.w, l.r, err, l.route, f)
		return
	}
	p := streamProblem(err, l.route)
	noteError(l.w, p.kind)
	st.out.emit(fail(nil, p))
}

// searchFront is how one endpoint answers a loop: its format, the ids of
// its search calls, its answer made from the model's last turn, and its
// stream's writer.
type searchFront struct {
	f      format
	newID  func() string
	answer func(l *searchLoop, final []byte) ([]byte, error)
	// newStream returns the stream's writer: ping and searched for the
	// loop, finish for the answer, fail for a failure after the commit.
	newStream func(l *searchLoop) (ping func([]byte) []byte, searched func([]byte, []translate.SearchCall) []byte,
		finish func(dst, answer []byte) ([]byte, error), fail func(dst []byte, p problem) []byte)
}

// serveSearch runs the loop of a request translated to the Chat format
// (br, whose body it takes) and answers with front.
func (s *Server) serveSearch(w http.ResponseWriter, r *http.Request, br translate.BackendRequest, tool translate.WebSearchTool, front searchFront) {
	alias := br.Target.Alias
	setAlias(w, alias)
	if o := observed(w); o != nil {
		o.stream, o.maxTokens, o.prompt = br.Stream, br.MaxTokens, br.InputTokens
	}
	conv, err := translate.NewSearchChat(br.Body, alias)
	bufpool.Put(br.Body)
	if err != nil {
		front.f.write(w, problemf(invalidRequest, "%s", err.Error()))
		return
	}
	l := s.newSearchLoop(w, r, alias, tool, conv, front.newID)
	answer := func(final []byte) ([]byte, error) {
		out, err := front.answer(l, final)
		bufpool.Put(final)
		noteUsage(w, &l.usage)
		return out, err
	}
	if !br.Stream {
		final, err := l.run(r.Context(), nil)
		if err != nil {
			l.fail(err, nil, front.f, nil)
			return
		}
		out, err := answer(final)
		if err != nil {
			front.f.write(w, problemf(badGateway, "the backend's answer is not a Chat Completions response: %s", l.route.scrub(err.Error())))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.Write(out)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ping, searched, finish, failEvent := front.newStream(l)
	st := &loopStream{out: newStreamOut(w), ping: ping, searched: searched, cancel: cancel}
	final, err := l.run(ctx, st)
	if err != nil {
		l.fail(err, st, front.f, failEvent)
		return
	}
	out, err := answer(final)
	if err == nil {
		out, err = finish(nil, out)
	}
	if err != nil {
		l.fail(err, st, front.f, failEvent)
		return
	}
	st.out.emit(out)
}

// messagesSearch serves a Messages request with a web search server tool.
func (s *Server) messagesSearch(w http.ResponseWriter, r *http.Request, body []byte, tool translate.WebSearchTool) {
	br, err := translate.MessagesOnChatRequest(body, s.searchTarget)
	bufpool.Put(body)
	if err != nil {
		messagesFormat.write(w, requestProblem(err))
		return
	}
	s.serveSearch(w, r, br, tool, searchFront{
		f:     messagesFormat,
		newID: translate.NewServerToolUseID,
		answer: func(l *searchLoop, final []byte) ([]byte, error) {
			msg, _, err := translate.MessagesOnChatResponseWithUsage(final, l.alias)
			if err != nil {
				return nil, err
			}
			return translate.MessagesWithSearches(msg, l.calls, translate.MapUsage(&l.usage))
		},
		newStream: func(l *searchLoop) (func([]byte) []byte, func([]byte, []translate.SearchCall) []byte, func(dst, answer []byte) ([]byte, error), func([]byte, problem) []byte) {
			ms := translate.NewSearchStream(l.alias, newMessageID(), br.InputTokens)
			return ms.Ping, ms.Searched, ms.Finish, func(dst []byte, p problem) []byte { return ms.Fail(dst, renderings[p.kind].messagesType, p.message) }
		},
	})
}

// responsesSearch serves a Responses request with the hosted web_search
// tool.
func (s *Server) responsesSearch(w http.ResponseWriter, r *http.Request, body []byte, tool translate.WebSearchTool) {
	br, call, err := translate.ResponsesOnChatRequest(body, s.searchTarget)
	bufpool.Put(body)
	if err != nil {
		responsesFormat.write(w, requestProblem(err))
		return
	}
	id := translate.NewResponseID()
	s.serveSearch(w, r, br, tool, searchFront{
		f:     responsesFormat,
		newID: translate.NewWebSearchCallID,
		answer: func(l *searchLoop, final []byte) ([]byte, error) {
			resp, _, err := translate.ResponsesOnChatResponse(final, l.alias, id, l.created, call)
			if err != nil {
				return nil, err
			}
			defer bufpool.Put(resp)
			return translate.ResponsesWithSearches(resp, l.calls)
		},
		newStream: func(l *searchLoop) (func([]byte) []byte, func([]byte, []translate.SearchCall) []byte, func(dst, answer []byte) ([]byte, error), func([]byte, problem) []byte) {
			rs := translate.NewResponsesSearchStream(l.alias, id, l.created, call)
			return rs.Ping, rs.Searched, rs.Finish, func(dst []byte, p problem) []byte { return rs.Fail(dst, responsesCode(p), p.message) }
		},
	})
}
