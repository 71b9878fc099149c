package server

import (
	"bytes"
	"net/http"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	reqkind "github.com/dragoman-dev/dragoman/proxy/kind"
	"github.com/dragoman-dev/dragoman/proxy/metrics"
	"github.com/dragoman-dev/dragoman/proxy/tracing"
)

// observation is what one API request did, for the metrics and the trace:
// the handlers note it on the recorder as they learn it, and ServeHTTP
// reports it once, when the request ends. Only the request's own goroutine
// writes it, but for pings, which the stream's pinger counts under its lock
// (stopped before the handler returns).
type observation struct {
	endpoint   string
	start      time.Time
	kind       reqkind.Kind // the request's kind, for the kind label
	backend    string
	errorType  string
	stream     bool
	maxTokens  int
	firstToken time.Duration // 0: no content token relayed yet
	usage      *chat.Usage
	pings      int
	trace      *tracing.Request
	// reservation is what the request's per-user key reserved for it
	// (nil: none); its usage takes its place when it is recorded.
	reservation *keys.Reservation
}

// MetricRoutes lists each alias and each backend of its pool, for the
// series the metrics export at 0 from start-up.
func MetricRoutes(bal *balance.Balancer) []metrics.Route {
	var out []metrics.Route
	for _, b := range bal.Snapshot() {
		for _, alias := range b.Aliases {
			out = append(out, metrics.Route{Alias: alias, Backend: b.Name})
		}
	}
	return out
}

// MetricsHooks are the balancer's hooks that feed the metrics *m (set
// once, before the balancer's first request): session moves and queue
// waits.
func MetricsHooks(m **metrics.Metrics) balance.Hooks {
	return balance.Hooks{
		Moved: func(alias string, _, _ *balance.Backend, reason balance.MoveReason) {
			(*m).SessionMoved(alias, string(reason))
		},
		Waited: func(b *balance.Backend, wait time.Duration, _ bool) { (*m).QueueWait(b.Name, wait) },
	}
}

// BackendLoad reads the balancer's backends for the metrics' scrape: their
// state, requests in flight and queued.
func BackendLoad(bal *balance.Balancer) func() []metrics.BackendLoad {
	return func() []metrics.BackendLoad {
		snap := bal.Snapshot()
		out := make([]metrics.BackendLoad, len(snap))
		for i, b := range snap {
			out[i] = metrics.BackendLoad{Backend: b.Name, Up: b.State == balance.Healthy.String(), InFlight: b.InFlight, QueuedByKind: b.QueuedByKind}
		}
		return out
	}
}

// endpointOf names the API endpoint of a path for the metrics; "" for the
// paths that are not reported (health, model list, unknown paths, whose
// label values would be the client's to choose).
func endpointOf(path string) string {
	switch path {
	case "/v1/messages":
		return metrics.EndpointMessages
	case "/v1/chat/completions", "/chat/completions":
		return metrics.EndpointChat
	case "/v1/messages/count_tokens":
		return metrics.EndpointCountTokens
	case "/v1/responses", "/v1/responses/compact":
		return metrics.EndpointResponses
	}
	return ""
}

// errorTypes are the error_type label values of the proxy's problems.
var errorTypes = map[kind]string{
	invalidRequest:   "invalid_request",
	unauthenticated:  "authentication",
	notFound:         "not_found",
	methodNotAllowed: "method_not_allowed",
	tooLarge:         "too_large",
	unsupportedMedia: "unsupported_media_type",
	rateLimited:      "rate_limited",
	overloaded:       "overloaded",
	badGateway:       "bad_gateway",
	timedOut:         "timeout",
	unavailable:      "key_store_unreachable",
}

func errorType(k kind) string {
	if t, ok := errorTypes[k]; ok {
		return t
	}
	return "error"
}

// observed returns the observation of the request w answers, nil when w is
// not the server's recorder.
func observed(w http.ResponseWriter) *observation {
	if r, ok := w.(*recorder); ok && r.obs.endpoint != "" {
		return &r.obs
	}
	return nil
}

// noteError records what went wrong; the first note stays.
func noteError(w http.ResponseWriter, k kind) {
	if o := observed(w); o != nil && o.errorType == "" {
		o.errorType = errorType(k)
	}
}

// noteUsage records the usage the backend reported.
func noteUsage(w http.ResponseWriter, u *chat.Usage) {
	if o := observed(w); o != nil && u != nil {
		o.usage = u
	}
}

// noteBackend records the backend that answered, by name; metrics.Estimated
// when the proxy answered itself.
func noteBackend(w http.ResponseWriter, name string) {
	if o := observed(w); o != nil {
		o.backend = name
	}
}

// notePing counts a ping sent to a stream's client.
func notePing(w http.ResponseWriter) {
	if o := observed(w); o != nil {
		o.pings++
	}
}

// noteFirstToken records the time to the first content token once out, an
// answer's bytes just relayed, carries one.
func (o *observation) noteFirstToken(out []byte) {
	if o != nil && o.firstToken == 0 && carriesToken(out) {
		o.firstToken = max(time.Since(o.start), time.Nanosecond)
	}
}

var (
	messagesDelta = []byte(`"content_block_delta"`)
	// Every Responses event named *.delta carries content (output text,
	// reasoning, a refusal, a tool call's arguments or input); the name is
	// on the event line.
	responsesDelta = []byte(".delta\ndata: ")
	toolCalls      = []byte(`"tool_calls":[`)
	textFields     = [][]byte{[]byte(`"content":`), []byte(`"reasoning_content":`), []byte(`"reasoning":`)}
)

// carriesToken reports whether relayed stream bytes hold content: a
// Messages content_block_delta, a Responses delta event, or a Chat chunk
// whose delta has non-empty text, reasoning or a tool call (the first
// chunk, with the role and an empty content, has none).
func carriesToken(out []byte) bool {
	// The Responses name first: its search stops at each '.', where the
	// others stop at each quote, and a Responses answer is all quotes.
	if bytes.Contains(out, responsesDelta) || bytes.Contains(out, messagesDelta) || bytes.Contains(out, toolCalls) {
		return true
	}
	for _, f := range textFields {
		rest := out
		for {
			i := bytes.Index(rest, f)
			if i < 0 {
				break
			}
			rest = bytes.TrimLeft(rest[i+len(f):], " ")
			if len(rest) >= 2 && rest[0] == '"' && rest[1] != '"' {
				return true
			}
		}
	}
	return false
}

// startObservation begins the observation of an API request, and its
// server span when tracing is on.
func (s *Server) startObservation(rec *recorder, r *http.Request, start time.Time) *http.Request {
	endpoint := endpointOf(r.URL.Path)
	if endpoint == "" || (s.metrics == nil && s.tracer == nil && s.gate == nil) {
		return r
	}
	rec.obs = observation{endpoint: endpoint, start: start}
	if s.tracer != nil {
		ctx, q := s.tracer.Start(r.Context(), endpoint, r.Header)
		rec.obs.trace = q
		r = r.WithContext(ctx)
	}
	return r
}

// report sends a request's observation to the metrics and closes its
// trace.
func (s *Server) report(rec *recorder, r *http.Request) {
	o := &rec.obs
	if o.endpoint == "" {
		return
	}
	status, errType := rec.status, o.errorType
	disconnect, elapsed := r.Context().Err() != nil, time.Since(o.start)
	// The answer goes out before it is counted: an answer of known length
	// (a JSON one) still sits in net/http's buffer until the handler
	// returns, and the observation's time would be added to the client's
	// wait (issue 15). The bytes on the wire are the same: the length is
	// declared, so nothing turns chunked. The outcome and the duration are
	// read first: a client that has its answer may close at once, which
	// is no disconnect.
	if rec.status != 0 && rec.Header().Get("Content-Length") != "" {
		rec.Flush()
	}
	switch {
	case disconnect:
		errType = metrics.ErrorClientDisconnect
		if status == 0 {
			status = metrics.StatusClientClosed
		}
	case status == 0:
		status = http.StatusOK
	}
	if errType == "" {
		errType = metrics.ErrorNone
		if status >= 400 {
			errType = "error"
		}
	}
	alias, backend := rec.alias, o.backend
	if alias == "" {
		alias = metrics.Unknown
	}
	if backend == "" {
		backend = metrics.Unknown
	}
	var usage metrics.Usage
	if u := o.usage; u != nil {
		usage = metrics.Usage{Input: u.PromptTokens, Output: u.CompletionTokens, CacheRead: u.CachedTokens(), Reasoning: u.ReasoningTokens()}
	}
	keyName := metrics.MasterKey
	if !rec.authenticated {
		keyName = metrics.Unknown // no key accepted: not the master key's request
	}
	if rec.key != nil {
		keyName = rec.key.Name
		s.recordUsage(rec, r, alias, backend, status, elapsed, usage)
	}
	s.metrics.Observe(&metrics.Request{
		Endpoint: o.endpoint, Alias: alias, Backend: backend, Key: keyName, Status: status, ErrorType: errType,
		Duration: elapsed, FirstToken: o.firstToken, Usage: usage, Pings: o.pings, Disconnect: disconnect, Kind: o.kind,
	})
	if o.trace != nil {
		out := tracing.Outcome{Alias: rec.alias, Backend: o.backend, Status: status, ErrorType: errType,
			MaxTokens: o.maxTokens, Stream: o.stream, FirstToken: o.firstToken}
		if o.usage != nil {
			out.HaveUsage, out.InputTokens, out.OutputTokens = true, usage.Input, usage.Output
		}
		o.trace.End(out)
	}
}

// recordUsage hands what a request made with a per-user key used to the
// gate, which writes it with its next batch. A request the backend
// answered without usage is recorded with an estimate, marked as one:
// about four bytes a token of the request's and the answer's bodies.
func (s *Server) recordUsage(rec *recorder, r *http.Request, alias, backend string, status int, elapsed time.Duration, u metrics.Usage) {
	k := keys.Record{At: rec.obs.start, Alias: alias, Backend: backend, Kind: rec.obs.endpoint, Status: status, Duration: elapsed,
		Input: int64(u.Input), Output: int64(u.Output), Cached: int64(u.CacheRead), Reserved: rec.obs.reservation}
	if rec.obs.usage == nil && backend != metrics.Unknown && status < 400 {
		k.Estimated = true
		k.Input, k.Output = max(r.ContentLength, 0)/4, int64(rec.bytes)/4
	}
	s.gate.Record(rec.key, k)
}
