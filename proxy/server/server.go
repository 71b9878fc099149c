// Package server is the proxy's HTTP front: routing by path and by model
// alias, client authentication, error rendering in the caller's own format,
// streaming relays, health and model listing. How a body is translated is
// package translate's business; how a backend is reached is package
// upstream's.
package server

import (
	"crypto/subtle"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/alias"
	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/compaction"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/discover"
	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	reqkind "github.com/dragoman-dev/dragoman/proxy/kind"
	"github.com/dragoman-dev/dragoman/proxy/metrics"
	"github.com/dragoman-dev/dragoman/proxy/tokenize"
	"github.com/dragoman-dev/dragoman/proxy/tracing"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
	"github.com/dragoman-dev/dragoman/proxy/vision"
	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

// DefaultPingInterval is how long a Messages stream waits for the backend
// before it commits and starts sending pings. Five seconds keeps a backend
// that fails fast (retries included, about 2 s) answering with a real HTTP
// status, and a cold start of 5 s and more sending pings to the client.
const DefaultPingInterval = 5 * time.Second

// Options are the run-time settings that do not come from the config file.
type Options struct {
	Keys         []string // client keys accepted; none means no authentication
	Logger       *slog.Logger
	PingInterval time.Duration
	Pool         *upstream.Pool // nil: a new one
	// Balancer picks the backend of each request; nil: a new one for the
	// configuration, without health probes (its Run is the caller's).
	Balancer *balance.Balancer
	Metrics  *metrics.Metrics // nil: off
	// ServeMetrics serves Metrics on GET /metrics, without the client key.
	ServeMetrics bool
	Tracer       *tracing.Tracer // nil: no traces
	// Gate knows the per-user keys (package keys): with one, a request
	// needs the master key or one of them, and each key's limits and
	// usage apply. nil: the master key(s) of Keys only.
	Gate *keys.Gate
	// Admin serves /admin (the page and its API); nil: not served.
	Admin http.Handler
	// AuthLimiter refuses (429) a client address that failed to
	// authenticate too often (shared with Admin); nil: none.
	AuthLimiter *authlimit.Limiter
	// WebSocketIdle closes a Responses WebSocket connection that has had
	// no request for this long; 0: DefaultWebSocketIdle.
	WebSocketIdle time.Duration
}

// Server serves the proxy's endpoints. It is an http.Handler.
type Server struct {
	cfg  *config.Config
	keys [][]byte
	log  *slog.Logger
	pool *upstream.Pool
	bal  *balance.Balancer
	ping time.Duration
	mux  *http.ServeMux
	// native: some backend speaks the Messages format (vendora/).
	native bool

	draining atomic.Bool // /readyz answers 503: the proxy is leaving
	active   atomic.Int64

	metrics *metrics.Metrics  // nil: off
	tracer  *tracing.Tracer   // nil: off
	gate    *keys.Gate        // nil: no per-user keys
	search  *websearch.Client // search_settings; nil: web search off

	authLim *authlimit.Limiter // nil: failed authentications not limited

	tokenizeMu sync.Mutex
	tokenize   map[string]bool   // a Messages backend's count_tokens URL → served
	counter    *tokenize.Counter // backends' /tokenize
	scales     promptScales      // each backend model's count against the estimate

	knownMu sync.RWMutex
	known   map[backendModel]discover.Info // what discovery learnt

	kindRules reqkind.Rules // what a request's kind is read from
	// descriptions are the images the vision fallbacks described; nil
	// when no model_list entry names a proxy_params.vision_fallback.
	descriptions *vision.Cache

	sealer *compaction.Sealer // seals and opens remote compaction's summaries
	ws     webSockets         // the Responses WebSocket connections open

	aliasNames []string       // the model_names, each once, in file order
	aliases    *alias.Matcher // matches a requested model to one of aliasNames
	seen       seenModels     // models clients asked for that a pattern matched

	admission *admission // bounds the bytes of the bodies held at once (admission.go)
}

// New returns a Server for a validated configuration.
func New(cfg *config.Config, opts Options) *Server {
	s := &Server{
		cfg:      cfg,
		log:      opts.Logger,
		pool:     opts.Pool,
		bal:      opts.Balancer,
		ping:     opts.PingInterval,
		mux:      http.NewServeMux(),
		tokenize: map[string]bool{},
		counter:  tokenize.New(nil),
		known:    map[backendModel]discover.Info{},
		metrics:  opts.Metrics,
		tracer:   opts.Tracer,
		gate:     opts.Gate,
		authLim:  opts.AuthLimiter,

		admission: newAdmission(admissionBudget),
	}
	s.aliasNames = cfg.Aliases()
	s.kindRules = cfg.Router.KindRules()
	for _, r := range cfg.Routes {
		if r.VisionFallback != "" && s.descriptions == nil {
			s.descriptions = vision.NewCache(maxDescriptions)
		}
	}
	s.aliases = alias.New(s.aliasNames)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.pool == nil {
		s.pool = upstream.NewPool()
	}
	if s.bal == nil {
		s.bal = balance.New(cfg, balance.Options{})
	}
	if s.ping <= 0 {
		s.ping = DefaultPingInterval
	}
	for _, r := range cfg.Routes {
		s.native = s.native || r.Protocol == config.ProtocolMessages
	}
	if ss := cfg.Search; ss != nil {
		s.search = websearch.New(websearch.Settings{Provider: ss.Provider, APIBase: ss.APIBase, APIKey: ss.APIKey,
			MaxResults: ss.MaxResults, Timeout: ss.Timeout, TimeBudget: ss.TimeBudget})
	}
	for _, k := range opts.Keys {
		if k != "" {
			s.keys = append(s.keys, []byte(k))
		}
	}
	var sealedWith string
	s.sealer, sealedWith = newSealer(cfg.CompactionKeys, s.keys)
	if sealedWith == "" {
		s.log.Info("remote compaction: no general_settings.compaction_key and no master key: compaction items open only in this process, until it stops")
	}
	s.ws.init(opts.WebSocketIdle)
	s.mux.HandleFunc("/v1/chat/completions", s.api(chatFormat, http.MethodPost, s.chatCompletions))
	s.mux.HandleFunc("/chat/completions", s.api(chatFormat, http.MethodPost, s.chatCompletions))
	s.mux.HandleFunc("/v1/messages", s.api(messagesFormat, http.MethodPost, s.messages))
	s.mux.HandleFunc("/v1/messages/count_tokens", s.api(messagesFormat, http.MethodPost, s.countTokens))
	s.mux.HandleFunc("/v1/responses", s.api(responsesFormat, http.MethodPost, s.responses))
	s.mux.HandleFunc("/responses", s.api(responsesFormat, http.MethodPost, s.responses))
	s.mux.HandleFunc("/v1/responses/compact", s.api(responsesFormat, http.MethodPost, s.compactEndpoint))
	s.mux.HandleFunc("/responses/compact", s.api(responsesFormat, http.MethodPost, s.compactEndpoint))
	s.mux.HandleFunc("/v1/models", s.api(chatFormat, http.MethodGet, s.models))
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.HandleFunc("/backends", s.api(chatFormat, http.MethodGet, s.backends))
	s.mux.HandleFunc("HEAD /{$}", ok)
	s.mux.HandleFunc("HEAD /api/hello", ok)
	if opts.Admin != nil {
		s.mux.Handle("/admin", opts.Admin)
		s.mux.Handle("/admin/", opts.Admin)
	}
	if opts.ServeMetrics && opts.Metrics != nil {
		s.mux.Handle("GET /metrics", opts.Metrics.Handler())
	}
	s.mux.HandleFunc("/", s.notFound)
	return s
}

// ServeHTTP serves a request with a request id, an access log line, and
// panic recovery.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isResponsesUpgrade(r) {
		s.responsesWebSocket(w, r) // each response.create comes back here
		return
	}
	id := requestID(r)
	w.Header().Set("Request-Id", id)
	rec := &recorder{ResponseWriter: w}
	start := time.Now()
	r = s.startObservation(rec, r, start)
	defer s.report(rec, r)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic serving request", "request_id", id, "panic", v)
			if rec.status == 0 {
				formatOf(r.URL.Path).write(rec, problemf(badGateway, "internal error (request %s)", id))
			}
		}
		// Enabled first: the arguments would be boxed even for a level
		// that drops the line.
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && s.log.Enabled(r.Context(), slog.LevelInfo) {
			s.log.Info("request", "request_id", id, "method", r.Method, "path", r.URL.Path,
				"status", rec.status, "model", rec.alias, "bytes", rec.bytes, "duration", time.Since(start).Round(time.Microsecond))
		}
	}()
	s.mux.ServeHTTP(rec, r)
}

func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 {
		return id
	}
	return "req_" + strconv.FormatUint(rand.Uint64(), 36)
}

// Leave makes /readyz answer 503 from now on, so that a balancer stops
// sending requests here; every request that arrives is still served (no
// balancer retries a POST that got a 503). Stopping to accept
// connections, and waiting for the requests in flight, is the caller's
// (cmd/proxy: http.Server.Shutdown after --drain-delay).
func (s *Server) Leave() {
	s.draining.Store(true)
	s.ws.leave()
}

// Active reports the API requests in flight.
func (s *Server) Active() int64 { return s.active.Load() }

// api wraps an endpoint: method check, authentication.
func (s *Server) api(f format, method string, h func(http.ResponseWriter, *http.Request, format)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			f.write(w, problemf(methodNotAllowed, "method %s not allowed on %s: use %s", r.Method, r.URL.Path, method))
			return
		}
		s.active.Add(1)
		defer s.active.Add(-1)
		if !s.authAllowed(w, r, f) {
			return
		}
		key, p, ok := s.authenticate(r)
		if !ok {
			s.refuseAuth(w, r, f, p)
			return
		}
		if rec, isRec := w.(*recorder); isRec {
			rec.key, rec.authenticated = key, true
			defer rec.leaveAdmission()
		}
		h(w, r, f)
	}
}

// authenticate checks the request's key: the master key (key nil), or,
// with a gate, a per-user key (key its record).
func (s *Server) authenticate(r *http.Request) (*keys.Key, problem, bool) {
	if len(s.keys) == 0 && s.gate == nil {
		return nil, problem{}, true
	}
	auth := r.Header.Values("Authorization")
	xkey := r.Header.Values("X-Api-Key")
	if len(auth) > 1 || len(xkey) > 1 {
		return nil, problemf(invalidRequest, "send one Authorization header (or one x-api-key), not several"), false
	}
	var got string
	switch {
	case len(auth) == 1:
		scheme, token, found := strings.Cut(auth[0], " ")
		if !found || !strings.EqualFold(scheme, "Bearer") {
			return nil, problemf(unauthenticated, "the Authorization header must be \"Bearer <key>\""), false
		}
		got = strings.TrimSpace(token)
	case len(xkey) == 1:
		got = xkey[0]
	default:
		return nil, problemf(unauthenticated, "missing key: send Authorization: Bearer <key> (or x-api-key) with the proxy's key (PROXY_API_KEY or general_settings.master_key)"), false
	}
	if s.isMasterKey(got) {
		return nil, problem{}, true
	}
	if s.gate != nil {
		k, err := s.gate.Authenticate(got)
		if err != nil {
			return nil, problemf(unauthenticated, "%s", err.Error()), false
		}
		return k, problem{}, true
	}
	return nil, problemf(unauthenticated, "invalid key: send the proxy's key (PROXY_API_KEY or general_settings.master_key), not the backend's"), false
}

// isMasterKey says whether got is one of the proxy's own keys.
func (s *Server) isMasterKey(got string) bool {
	for _, k := range s.keys {
		if subtle.ConstantTimeCompare([]byte(got), k) == 1 {
			return true
		}
	}
	return false
}

// poolOf is the model_name a requested model routes to: itself when it is
// a configured model_name, else the longest pattern that matches it
// (package alias; the match is remembered for GET /v1/models), else "".
func (s *Server) poolOf(model string) string {
	if s.bal.Has(model) {
		return model
	}
	i, _, ok := s.aliases.Match(model)
	if !ok {
		return ""
	}
	s.seen.note(model)
	return s.aliasNames[i]
}

type unknownAlias struct {
	alias string
	known []string
}

func (e *unknownAlias) Error() string {
	if e.alias == "" {
		return "model is missing: send \"model\" with one of the configured aliases: " + strings.Join(e.known, ", ")
	}
	return "NotFoundError: model \"" + e.alias + "\" is not in model_list (configured: " + strings.Join(e.known, ", ") +
		"). Add it to model_list as model_name: " + e.alias + " in the proxy's config"
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}`))
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if s.draining.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"draining"}`))
		return
	}
	if !s.bal.Ready() {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"no healthy backend"}`))
		return
	}
	w.Write([]byte(`{"status":"ready"}`))
}

// backends answers GET /backends: every backend with its state and load
// (a per-user key: those of the models it may use).
func (s *Server) backends(w http.ResponseWriter, _ *http.Request, _ format) {
	b, err := json.Marshal(struct {
		Backends []balance.Status `json:"backends"`
	}{visibleBackends(s.bal.Snapshot(), keyOf(w))})
	if err != nil {
		chatFormat.write(w, problemf(badGateway, "rendering /backends: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	formatOf(r.URL.Path).write(w, problemf(notFound, "no endpoint %s %s: the proxy serves POST /v1/messages, POST /v1/chat/completions, POST /v1/responses, POST /v1/messages/count_tokens, GET /v1/models and GET /backends", r.Method, r.URL.Path))
}

func formatOf(path string) format {
	if strings.HasPrefix(path, "/v1/messages") {
		return messagesFormat
	}
	if strings.HasPrefix(path, "/v1/responses") || strings.HasPrefix(path, "/responses") {
		return responsesFormat
	}
	return chatFormat
}

// recorder notes what the access log reports.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
	alias  string
	obs    observation
	key    *keys.Key // the per-user key the request came with; nil: the master key
	// authenticated: the request's key was accepted (the master key when
	// key is nil); a request refused before is counted as key "unknown".
	authenticated bool
	admitted      *admitted // the request's admission share (admission.go); nil: none
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += n
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// keyOf is the per-user key of the request w answers (nil: the master
// key, or w is not the server's recorder).
func keyOf(w http.ResponseWriter) *keys.Key {
	if r, ok := w.(*recorder); ok {
		return r.key
	}
	return nil
}

// setAlias records the model for the access log.
func setAlias(w http.ResponseWriter, alias string) {
	if r, ok := w.(*recorder); ok {
		r.alias = alias
	}
}
