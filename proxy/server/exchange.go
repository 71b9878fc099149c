package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	reqkind "github.com/dragoman-dev/dragoman/proxy/kind"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// SessionHeader carries the coding client's session id: the key that
// keeps a session on one backend of a pool. It goes on to the backend.
const SessionHeader = upstream.SessionHeader

// routeInfo is the backend a request goes to, seen from the client: the
// backend's route with the alias the client asked for.
type routeInfo struct {
	config.Route
	alias   string // what the client asked for; answers name it
	apiBase string
	apiKey  string
	target  translate.Target
	// window is the context window the request is translated for:
	// configured, else discovered; 0 when unknown.
	window int
	// server is the backend's server: proxy_params.server, else what
	// discovery found (discover's names); "" when not known yet. It is
	// what dialect rewrites for.
	server string
}

func newRouteInfo(alias string, r config.Route) routeInfo {
	return routeInfo{Route: r, alias: alias, apiBase: r.APIBase, apiKey: r.APIKey, window: r.ContextWindow, server: r.Server, target: translate.Target{
		Alias:                   alias,
		BackendModel:            r.BackendModel,
		SupportsSystemMessage:   r.SupportsSystemMessage,
		SupportsReasoningEffort: r.SupportsReasoningEffort,
		MaxOutputTokens:         r.MaxOutputTokens,
		ContextWindow:           r.ContextWindow,
		NoVision:                !r.SupportsVision,
		DropParams:              strings.Join(r.DropParams, ","),
		TextCalls:               r.TextCalls,
		TextReasoning:           r.TextReasoning,
	}}
}

// exchange is one client request on its way to a backend of its pool: the
// slot it holds, the backend's route, and what it needs to try another
// backend before the first byte.
type exchange struct {
	s       *Server
	ctx     context.Context
	alias   string // what the client asked for
	pool    string // the model_name it routes to (alias, or the pattern it matches)
	session string
	// body is the client's body, kept until a backend answers: a retry at
	// a backend with another model or other support translates it again.
	body      []byte
	translate translation
	// native, when set, translates for a backend that speaks the Messages
	// format (vendora/); header holds the client's headers such a backend
	// receives (nativeHeaders).
	native translation
	header http.Header
	// client is the client's request headers, for its kind.
	client http.Header
	// kinds are the request's kinds (package kind), set at its first
	// resolve; routed is the kind whose router_settings.routes entry sent
	// it to its pool, Main when none did.
	kinds  reqkind.Set
	routed reqkind.Kind
	// req.Body goes with the attempt that sends it (upstream lets it go
	// once sent): a retry translates the body again.
	req   translate.BackendRequest
	route routeInfo
	lease *balance.Lease
	tried []*balance.Backend
	// opensCompaction: the caller opens the compaction items of a
	// Responses request when the translation refuses one
	// (translate.CompactionRefused); translateFor then answers nothing,
	// keeps the body and sets metCompaction.
	opensCompaction, metCompaction bool
	// refitted: the request was sent again with a max_tokens that fits
	// (refit), which is done once.
	refitted bool
	// messagesBody: body is a Messages request (a Messages client's), whose
	// prompt a backend's tokenizer can count (counted).
	messagesBody bool
	obs          *observation // nil when the request is not observed
	key          *keys.Key    // the request's per-user key; nil: the master key
	// admitted is the admission share the request took to read its body,
	// given back once the first attempt was answered (admission.go).
	admitted *admitted
}

// resolve is the translator's Resolver: the first call takes a slot at a
// backend of the alias's pool, so that the request is translated for the
// backend that serves it.
func (x *exchange) resolve(alias string) (translate.Target, error) {
	if alias == "" {
		// What the translation knows of the client before its model.
		return translate.Target{Memo: memoOf(x.ctx, x.key)}, nil
	}
	if x.lease != nil {
		return x.route.target, nil
	}
	pool, kinds, routed := x.s.poolFor(x.client, alias, x.body)
	x.kinds = kinds
	if pool == "" {
		return translate.Target{}, &unknownAlias{alias: alias, known: x.s.cfg.Aliases()}
	}
	x.alias, x.pool, x.routed = alias, pool, routed
	if x.obs != nil {
		x.obs.kind = x.kind()
	}
	if x.key != nil {
		// The key's models before a slot is taken; its limits once the
		// body is translated (reserve), when its tokens are known.
		if err := x.s.gate.Allow(x.key, pool, alias); err != nil {
			return translate.Target{}, err
		}
	}
	lease, err := x.s.bal.Acquire(x.ctx, balance.Request{Alias: pool, Session: x.session, Priority: x.kinds.Priority()})
	if err != nil {
		return translate.Target{}, err
	}
	x.take(lease)
	return x.route.target, nil
}

func (x *exchange) take(lease *balance.Lease) {
	x.lease = lease
	x.route = x.s.withDiscovered(newRouteInfo(x.alias, lease.Route))
	x.route.target.Memo = memoOf(x.ctx, x.key)
	if x.obs != nil {
		x.obs.backend = lease.Backend.Name
	}
}

// done gives the slot back, saying how the exchange went for the
// backend's health.
func (x *exchange) done(res balance.Result, err error) {
	if x.lease == nil {
		return
	}
	detail := ""
	if err != nil {
		detail = clipMessage(x.route.scrub(err.Error()))
	}
	x.lease.Done(res, detail)
	x.lease = nil
}

// finish ends an exchange whose answer was relayed: err is what ended it
// early, nil for a clean end.
func (x *exchange) finish(err error) {
	switch {
	case err == nil:
		x.done(balance.Succeeded, nil)
	case x.ctx.Err() != nil:
		x.done(balance.Abandoned, nil)
	default:
		x.done(balance.Failed, err)
	}
}

// forget lets the client's body go.
func (x *exchange) forget() {
	if x.body != nil {
		bufpool.Put(x.body) // translate's output never shares the input's memory
		x.body = nil
	}
}

// send sends the request and returns the first backend answer that is not
// a retryable failure. A retry (num_retries of the first backend's route)
// goes to another healthy backend of the pool when there is one, at once,
// and after the backoff when it goes back to one it tried. It returns
// with x.lease held on success; on failure with no lease, and x.route the
// route of the last backend tried.
func (s *Server) send(x *exchange) (*upstream.Response, error) {
	defer x.forget()
	retries, waits := x.route.NumRetries, 0
	for attempt := 0; ; attempt++ {
		c := x.call()
		x.req.Body = nil
		resp, err := s.pool.Do(x.ctx, c)
		x.admitted.leave()
		if err == nil {
			if ue := streamStartError(resp); ue != nil {
				resp.Body.Close()
				resp, err = nil, ue
			}
		}
		if err == nil {
			x.textCalls(resp)
			return resp, nil
		}
		if x.refit(err) {
			s.metrics.Retried(x.lease.Backend.Name, RetryMaxTokens)
			attempt-- // not one of num_retries
			continue
		}
		res := backendResult(err)
		var ue *upstream.Error
		errors.As(err, &ue)
		backend := x.lease.Backend
		x.done(res, err)
		if !upstream.Retryable(err) || attempt >= retries {
			return nil, err
		}
		x.tried = append(x.tried, backend)
		s.metrics.Retried(backend.Name, retryReason(ue))
		lease, aerr := s.bal.Acquire(x.ctx, balance.Request{Alias: x.pool, Session: x.session, Tried: x.tried, Retry: retryReason(ue), Priority: x.kinds.Priority()})
		if aerr != nil {
			if x.ctx.Err() != nil {
				return nil, err
			}
			return nil, aerr
		}
		x.take(lease)
		if tried(x.tried, lease.Backend) {
			if !s.pool.Wait(x.ctx, waits) {
				x.done(balance.Abandoned, nil)
				return nil, err
			}
			waits++
		}
		// The last attempt let its body go once it was sent.
		if terr := x.retranslate(); terr != nil {
			x.done(balance.Abandoned, nil)
			return nil, terr
		}
	}
}

func tried(list []*balance.Backend, b *balance.Backend) bool {
	for _, t := range list {
		if t == b {
			return true
		}
	}
	return false
}

func retryReason(ue *upstream.Error) string {
	if ue.Kind == upstream.Status {
		return "status_" + strconv.Itoa(ue.Status)
	}
	return "unreachable"
}

// retranslate translates the client's body for the backend now held.
func (x *exchange) retranslate() error {
	req, err := x.translateBody(x.body)
	if err != nil {
		return err
	}
	x.req = req
	return nil
}

// translation translates a client's body for the backend resolve picks.
type translation func([]byte, translate.Resolver) (translate.BackendRequest, error)

// translateBody translates the client's body for the protocol of the
// backend it goes to: with native, when set and that backend speaks the
// Messages format. The backend is chosen (a slot taken) before the
// translation, from a quick look at the model.
func (x *exchange) translateBody(body []byte) (translate.BackendRequest, error) {
	if x.native != nil && x.lease == nil {
		if model := translate.RequestModel(body); model != "" {
			if _, err := x.resolve(model); err != nil {
				return translate.BackendRequest{}, err
			}
		}
	}
	if x.native != nil && x.lease != nil && x.route.Protocol == config.ProtocolMessages {
		return x.inWindow(x.fitted(x.native(body, x.resolve)))
	}
	return x.inWindow(x.counted(x.fitted(x.translate(body, x.resolve))))
}

func (x *exchange) call() upstream.Call {
	r := x.route
	if r.Protocol == config.ProtocolMessages {
		return x.nativeCall("/messages")
	}
	c := upstream.Call{
		BaseURL:       r.apiBase,
		Path:          "/chat/completions",
		APIKey:        r.apiKey,
		Body:          x.req.Body,
		Stream:        x.req.Stream,
		Session:       x.session,
		Timeout:       r.Timeout,
		StreamTimeout: r.StreamTimeout,
		Attempt:       x.s.tracer.Attempts(x.lease.Backend.Name, r.BackendModel, r.apiBase),
	}
	return c
}

// prepareFor reads a request body, takes a slot at a backend of its
// alias's pool and translates the body for that backend, answering the
// client itself when it cannot: with native when that backend speaks the
// Messages format (nil: every backend is translated for with
// translateBody).
func (s *Server) prepareFor(w http.ResponseWriter, r *http.Request, f format, translateBody, native translation) (*exchange, bool) {
	body, ok := s.readBody(w, r, f)
	if !ok {
		return nil, false
	}
	return s.translateFor(w, r, f, s.newExchange(w, r, translateBody, native), body)
}

func (s *Server) newExchange(w http.ResponseWriter, r *http.Request, translateBody, native translation) *exchange {
	x := &exchange{s: s, ctx: r.Context(), session: r.Header.Get(SessionHeader), client: r.Header, translate: translateBody, obs: observed(w), key: keyOf(w), admitted: admittedOf(w)}
	if native != nil && s.native {
		x.native, x.header = native, r.Header
	}
	return x
}

// translateFor translates the client's body, read whole, for the backend
// of x (chosen then, or before), answering the client itself when it
// cannot; but when x.opensCompaction and the translation refused a
// compaction item, it answers nothing and returns x with metCompaction
// set and the body in x.body, for the caller to open them.
func (s *Server) translateFor(w http.ResponseWriter, r *http.Request, f format, x *exchange, body []byte) (*exchange, bool) {
	body = s.describeImages(w, r, body)
	x.body = body
	req, err := x.translateBody(body)
	if err != nil {
		x.done(balance.Abandoned, nil)
		if x.opensCompaction && translate.CompactionRefused(err) {
			x.metCompaction = true
			return x, false
		}
		if r.Context().Err() == nil {
			f.write(w, requestProblem(err))
		}
		bufpool.Put(body)
		return nil, false
	}
	x.req = req
	if err := x.reserve(); err != nil {
		x.done(balance.Abandoned, nil)
		x.s.logStoreError(err)
		if r.Context().Err() == nil {
			f.write(w, requestProblem(err))
		}
		bufpool.Put(body)
		bufpool.Put(req.Body)
		return nil, false
	}
	setAlias(w, x.alias)
	if x.obs != nil {
		x.obs.stream, x.obs.maxTokens, x.obs.prompt = req.Stream, req.MaxTokens, req.InputTokens
	}
	return x, true
}

// balanceProblem renders what the balancer refused.
func balanceProblem(err error) (problem, bool) {
	var qt *balance.QueueTimeoutError
	if errors.As(err, &qt) {
		return problemf(rateLimited, "%s", qt.Error()), true
	}
	return problem{}, false
}

// kind is the request's kind for the metrics: the kind of the route that
// sent it to its pool, else its origin (main, subagent, background,
// warmer).
func (x *exchange) kind() reqkind.Kind {
	if x.routed != reqkind.Main {
		return x.routed
	}
	return x.kinds.Origin()
}

// poolFor is the pool a request for model goes to, with the request's
// kinds: the pool of the first router_settings.routes entry whose kind
// the request is (routed is that kind; Main when none), else poolOf's.
// The body tells the content kinds when a route needs them.
func (s *Server) poolFor(h http.Header, model string, body []byte) (pool string, kinds reqkind.Set, routed reqkind.Kind) {
	kinds = reqkind.Of(reqkind.Request{Header: h, Model: model, Body: body}, s.kindRules)
	for _, r := range s.cfg.Router.Routes {
		if kinds.Has(r.Kind) {
			return r.To, kinds, r.Kind
		}
	}
	return s.poolOf(model), kinds, reqkind.Main
}

// backendResult is what a failed exchange says of the backend's health:
// a 4xx means it is alive (the request is the matter), a cancel nothing.
func backendResult(err error) balance.Result {
	var ue *upstream.Error
	if errors.As(err, &ue) && (ue.Kind == upstream.Canceled || (ue.Kind == upstream.Status && ue.Status < 500)) {
		if ue.Kind == upstream.Canceled {
			return balance.Abandoned
		}
		return balance.Succeeded
	}
	return balance.Failed
}
