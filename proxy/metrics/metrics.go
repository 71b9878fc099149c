// Package metrics owns the proxy's Prometheus metrics: the families, their
// labels and buckets, the registry they live in (with the Go and process
// collectors), and the handler that serves them. The server reports each
// API request once, when it ends (Metrics.Observe); nothing is counted on
// the path of a stream's events. Every family is exported from start-up,
// and the series whose label values are known in advance (each endpoint,
// alias, backend, token kind, reason) start at 0.
//
// No label ever holds request text, a key or a session id: label values come
// from the config (aliases, backend names) and from the fixed sets below.
package metrics

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dragoman-dev/dragoman/proxy/kind"
)

// Endpoint label values.
const (
	EndpointMessages    = "messages"
	EndpointChat        = "chat_completions"
	EndpointCountTokens = "count_tokens"
	EndpointResponses   = "responses"
	EndpointModels      = "models"
)

// Endpoints lists the endpoint label values the proxy serves.
var Endpoints = []string{EndpointMessages, EndpointChat, EndpointCountTokens, EndpointResponses, EndpointModels}

// Error types (the error_type label) that are not the proxy's own
// rejections of a request.
const (
	ErrorNone             = "none"              // the request succeeded
	ErrorClientDisconnect = "client_disconnect" // the client went away before the end
)

// StatusClientClosed is the status label of a request whose client went
// away before any status was sent (nginx's convention).
const StatusClientClosed = 499

// Token kinds (the kind label of dragoman_tokens_total).
var TokenKinds = []string{"input", "output", "cache_read", "reasoning"}

// Reasons for a retry (on another backend, or with a max_tokens that fits:
// "max_tokens") and for a session's move.
var (
	RetryReasons = []string{"unreachable", "timeout", "status_502", "status_503", "max_tokens"}
	MoveReasons  = []string{"home_full", "home_down"}
)

// Unknown is the alias and backend label of a request that named no
// configured alias: the model the client sent is never a label value.
const Unknown = "unknown"

// MasterKey is the key label of a request made with the proxy's own key
// (or with none, under --no-auth); a per-user key's label is its name,
// never the key.
const MasterKey = "master"

// Estimated is the backend label of a count_tokens request the proxy
// answered itself, with its estimate: no backend counted the tokens.
const Estimated = "estimate"

// DurationBuckets (seconds) reach 600 s: a long prefill on a local model
// takes minutes.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}

// RateBuckets (output tokens per second of one stream).
var RateBuckets = []float64{1, 2, 5, 10, 15, 20, 30, 40, 60, 80, 100, 150, 200, 300, 500, 1000}

// Route is one alias and the backend it reaches, known at start-up.
type Route struct {
	Alias, Backend string
}

// Setup is what the families are first exported with.
type Setup struct {
	Version string  // the proxy's version, for dragoman_build_info
	Routes  []Route // every alias and its backend(s)
	// SearchProvider is search_settings.provider ("" when web search is
	// off): its dragoman_web_searches_total series start at 0.
	SearchProvider string
	// Load reads each backend's state and load when Prometheus scrapes
	// (dragoman_backend_up, dragoman_inflight_requests,
	// dragoman_queued_requests); nil: every backend of Routes up, idle.
	Load func() []BackendLoad
}

// BackendLoad is a backend's state and load at a scrape.
type BackendLoad struct {
	Backend  string
	Up       bool
	InFlight int
	// QueuedByKind counts the queued requests by priority (main, subagent,
	// background, warmer); nil: none queued.
	QueuedByKind map[string]int
}

// Metrics holds the proxy's families. A nil *Metrics is off: every method
// does nothing.
type Metrics struct {
	reg *prometheus.Registry

	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	ttft        *prometheus.HistogramVec
	rate        *prometheus.HistogramVec
	tokens      *prometheus.CounterVec
	queueWait   *prometheus.HistogramVec
	retries     *prometheus.CounterVec
	moves       *prometheus.CounterVec
	pings       *prometheus.CounterVec
	disconnects *prometheus.CounterVec
	search      searchFamilies
	textCalls   *prometheus.CounterVec // textcalls.go
	// authThrottled counts the requests package authlimit refused.
	authThrottled prometheus.Counter

	// routes are the series of every route known at start-up, resolved
	// once there: Observe looks them up in a map that is never written
	// after New (no lock, no label hashing by the client library).
	routes map[seriesKey]*routeSeries
	// The children of the other families whose label values are known
	// at start-up, resolved there too (by endpoint; by backend; by backend
	// and reason; by alias and reason).
	endpointPings, endpointDisconnects map[string]prometheus.Counter
	backendWaits                       map[string]prometheus.Observer
	backendRetries, aliasMoves         map[[2]string]prometheus.Counter
	series                             sync.Map // seriesKey → *routeSeries: the routes not known at start-up
	counts                             sync.Map // countKey → prometheus.Counter: outcomes other than success
}

// New registers every family, with its known series at 0.
func New(s Setup) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_requests_total",
			Help: "API requests served, by endpoint, model alias, backend, key (the per-user key's name; master for the proxy's own), HTTP status sent, error type (none when it succeeded) and kind (main, subagent, background, warmer, or the kind of the router_settings.routes entry that routed it).",
		}, []string{"endpoint", "alias", "backend", "key", "status", "error_type", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dragoman_request_duration_seconds",
			Help:    "Time from the request's arrival to the end of its answer (the whole stream for a stream).",
			Buckets: DurationBuckets,
		}, []string{"endpoint", "alias", "backend"}),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dragoman_time_to_first_token_seconds",
			Help:    "Time from a stream request's arrival to the first content token relayed to the client.",
			Buckets: DurationBuckets,
		}, []string{"endpoint", "alias", "backend"}),
		rate: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dragoman_output_tokens_per_second",
			Help:    "Output tokens per second of one stream, from its first content token to its end (tokens the backend reported).",
			Buckets: RateBuckets,
		}, []string{"alias", "backend"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_tokens_total",
			Help: "Tokens the backend reported in its usage, by key (the per-user key's name; master for the proxy's own) and kind: input, output, cache_read (part of input), reasoning (part of output).",
		}, []string{"alias", "backend", "key", "kind"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dragoman_queue_wait_seconds",
			Help:    "Time a request waited in the proxy for a free slot of the backend.",
			Buckets: DurationBuckets,
		}, []string{"backend"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_backend_retries_total",
			Help: "Attempts of a request retried after this backend failed, by reason.",
		}, []string{"backend", "reason"}),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_session_moves_total",
			Help: "Session requests served by another backend than the session's home (the top of its rendezvous order, the same at every replica: summed over replicas, what the servers see), by reason: home_full, home_down.",
		}, []string{"alias", "reason"}),
		pings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_stream_pings_total",
			Help: "Pings sent to stream clients while the backend was silent.",
		}, []string{"endpoint"}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_client_disconnects_total",
			Help: "API requests whose client went away before the end of the answer.",
		}, []string{"endpoint"}),
	}
	m.routes = map[seriesKey]*routeSeries{}
	m.endpointPings, m.endpointDisconnects = map[string]prometheus.Counter{}, map[string]prometheus.Counter{}
	m.backendWaits, m.backendRetries, m.aliasMoves = map[string]prometheus.Observer{}, map[[2]string]prometheus.Counter{}, map[[2]string]prometheus.Counter{}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dragoman_build_info",
		Help: "The proxy's version and the Go version it was built with; always 1.",
	}, []string{"version", "goversion"})
	version := s.Version
	if version == "" {
		version = "unknown"
	}
	build.WithLabelValues(version, runtime.Version()).Set(1)
	m.search = newSearchFamilies(s.SearchProvider)
	m.textCalls = newTextCalls(s.Routes)
	m.authThrottled = newAuthThrottled()
	m.reg = newRegistry(build, m.requests, m.duration, m.ttft, m.rate, m.tokens, m.queueWait,
		m.retries, m.moves, m.pings, m.disconnects, m.search.searches, m.search.duration, newLoadCollector(s), m.authThrottled, m.textCalls)
	for _, e := range Endpoints {
		m.endpointPings[e] = m.pings.WithLabelValues(e)
		m.endpointDisconnects[e] = m.disconnects.WithLabelValues(e)
	}
	backends := map[string]bool{}
	aliases := map[string]bool{}
	for _, r := range s.Routes {
		for _, e := range []string{EndpointMessages, EndpointChat, EndpointResponses} {
			m.routes[seriesKey{e, r.Alias, r.Backend, MasterKey}] = m.newRouteSeries(seriesKey{e, r.Alias, r.Backend, MasterKey})
		}
		if !backends[r.Backend] {
			backends[r.Backend] = true
			m.backendWaits[r.Backend] = m.queueWait.WithLabelValues(r.Backend)
			for _, reason := range RetryReasons {
				m.backendRetries[[2]string{r.Backend, reason}] = m.retries.WithLabelValues(r.Backend, reason)
			}
		}
		if !aliases[r.Alias] {
			aliases[r.Alias] = true
			for _, reason := range MoveReasons {
				m.aliasMoves[[2]string{r.Alias, reason}] = m.moves.WithLabelValues(r.Alias, reason)
			}
		}
	}
	return m
}

// newRegistry is a registry of families, with the Go and process
// collectors (the proxy's and the warmer's alike).
func newRegistry(families ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(families...)
	return reg
}

// serveRegistry serves reg's families in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func serveRegistry(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// Registry is where the families are registered (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the families in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (m *Metrics) Handler() http.Handler { return serveRegistry(m.reg) }

// Usage is the token counts a backend reported for one request.
type Usage struct {
	Input, Output, CacheRead, Reasoning int
}

// Request is what one API request did, reported when it ends.
type Request struct {
	Endpoint   string
	Alias      string // Unknown when no configured alias was named
	Backend    string // Unknown when no backend was reached
	Key        string // the per-user key's name; MasterKey (or "") for the proxy's own
	Status     int    // the HTTP status sent; StatusClientClosed when none was
	ErrorType  string // ErrorNone, or what went wrong
	Duration   time.Duration
	FirstToken time.Duration // from arrival to the first content token of a stream; 0 when none was relayed
	Usage      Usage         // zero when the backend reported none
	Pings      int
	Disconnect bool // the client went away before the end
	Kind       kind.Kind
}

// routeSeries are the children of one route (endpoint, alias, backend),
// looked up once per route: its latencies, tokens, and its requests
// counter of success (status 200, error_type none) of main requests, the
// outcome of nearly every request.
type routeSeries struct {
	ok                               prometheus.Counter
	duration, ttft, rate             prometheus.Observer
	input, output, cached, reasoning prometheus.Counter
}

type seriesKey struct{ endpoint, alias, backend, key string }

type countKey struct {
	seriesKey
	status    int
	errorType string
	kind      kind.Kind
}

func (m *Metrics) newRouteSeries(k seriesKey) *routeSeries {
	return &routeSeries{
		ok:        m.requests.WithLabelValues(k.endpoint, k.alias, k.backend, k.key, "200", ErrorNone, kind.Main.String()),
		duration:  m.duration.WithLabelValues(k.endpoint, k.alias, k.backend),
		ttft:      m.ttft.WithLabelValues(k.endpoint, k.alias, k.backend),
		rate:      m.rate.WithLabelValues(k.alias, k.backend),
		input:     m.tokens.WithLabelValues(k.alias, k.backend, k.key, "input"),
		output:    m.tokens.WithLabelValues(k.alias, k.backend, k.key, "output"),
		cached:    m.tokens.WithLabelValues(k.alias, k.backend, k.key, "cache_read"),
		reasoning: m.tokens.WithLabelValues(k.alias, k.backend, k.key, "reasoning"),
	}
}

// routeSeries returns the series of route k: those resolved at start-up,
// else those resolved at the route's first request.
func (m *Metrics) routeSeries(k seriesKey) *routeSeries {
	if s, ok := m.routes[k]; ok {
		return s
	}
	if s, ok := m.series.Load(k); ok {
		return s.(*routeSeries)
	}
	actual, _ := m.series.LoadOrStore(k, m.newRouteSeries(k))
	return actual.(*routeSeries)
}

// count increments the requests counter of an outcome other than success.
func (m *Metrics) count(k countKey) {
	c, ok := m.counts.Load(k)
	if !ok {
		c, _ = m.counts.LoadOrStore(k, m.requests.WithLabelValues(k.endpoint, k.alias, k.backend, k.key, strconv.Itoa(k.status), k.errorType, k.kind.String()))
	}
	c.(prometheus.Counter).Inc()
}

// Observe reports one API request. A successful request on a route known
// at start-up costs one map lookup and the atomic adds of its series; it
// allocates nothing.
func (m *Metrics) Observe(r *Request) {
	if m == nil || r.Endpoint == "" {
		return
	}
	key := r.Key
	if key == "" {
		key = MasterKey
	}
	k := seriesKey{r.Endpoint, r.Alias, r.Backend, key}
	if r.Pings > 0 {
		known(m.endpointPings, r.Endpoint, func() prometheus.Counter { return m.pings.WithLabelValues(r.Endpoint) }).Add(float64(r.Pings))
	}
	if r.Disconnect {
		known(m.endpointDisconnects, r.Endpoint, func() prometheus.Counter { return m.disconnects.WithLabelValues(r.Endpoint) }).Inc()
	}
	if r.Backend == Unknown {
		m.count(countKey{k, r.Status, r.ErrorType, r.Kind})
		return // refused before a backend was chosen: no latency of its
	}
	s := m.routeSeries(k)
	if r.Status == http.StatusOK && r.ErrorType == ErrorNone && r.Kind == kind.Main {
		s.ok.Inc()
	} else {
		m.count(countKey{k, r.Status, r.ErrorType, r.Kind})
	}
	s.duration.Observe(r.Duration.Seconds())
	if r.FirstToken > 0 {
		s.ttft.Observe(r.FirstToken.Seconds())
	}
	u := r.Usage
	addTokens(s.input, u.Input)
	addTokens(s.output, u.Output)
	addTokens(s.cached, u.CacheRead)
	addTokens(s.reasoning, u.Reasoning)
	if gen := r.Duration - r.FirstToken; r.FirstToken > 0 && gen > 0 && u.Output > 0 {
		s.rate.Observe(float64(u.Output) / gen.Seconds())
	}
}

// addTokens adds n tokens to c; none (the usual cache_read and reasoning)
// costs no atomic add.
func addTokens(c prometheus.Counter, n int) {
	if n > 0 {
		c.Add(float64(n))
	}
}

// Retried counts an attempt at backend that failed and was tried again
// (on another backend of the pool when there is one).
func (m *Metrics) Retried(backend, reason string) {
	if m != nil {
		known(m.backendRetries, [2]string{backend, reason}, func() prometheus.Counter { return m.retries.WithLabelValues(backend, reason) }).Inc()
	}
}

// SessionMoved counts a session's request served by another backend than
// its home.
func (m *Metrics) SessionMoved(alias, reason string) {
	if m != nil {
		known(m.aliasMoves, [2]string{alias, reason}, func() prometheus.Counter { return m.moves.WithLabelValues(alias, reason) }).Inc()
	}
}

// QueueWait reports how long a request waited for a slot of backend.
func (m *Metrics) QueueWait(backend string, wait time.Duration) {
	if m != nil {
		known(m.backendWaits, backend, func() prometheus.Observer { return m.queueWait.WithLabelValues(backend) }).Observe(wait.Seconds())
	}
}

// known returns the child of labels among those resolved at start-up,
// else the one resolve finds in its family.
func known[K comparable, C any](children map[K]C, labels K, resolve func() C) C {
	if c, ok := children[labels]; ok {
		return c
	}
	return resolve()
}

// loadCollector reports each backend's state and load, read at the scrape.
type loadCollector struct {
	load                 func() []BackendLoad
	up, inflight, queued *prometheus.Desc
}

func newLoadCollector(s Setup) *loadCollector {
	load := s.Load
	if load == nil {
		var static []BackendLoad
		seen := map[string]bool{}
		for _, r := range s.Routes {
			if !seen[r.Backend] {
				seen[r.Backend] = true
				static = append(static, BackendLoad{Backend: r.Backend, Up: true})
			}
		}
		load = func() []BackendLoad { return static }
	}
	return &loadCollector{
		load:     load,
		up:       prometheus.NewDesc("dragoman_backend_up", "1 when the backend is healthy and takes requests, 0 when it is out (cooling down or being probed).", []string{"backend"}, nil),
		inflight: prometheus.NewDesc("dragoman_inflight_requests", "Requests being served by the backend now.", []string{"backend"}, nil),
		queued:   prometheus.NewDesc("dragoman_queued_requests", "Requests waiting in the proxy for a free slot of the backend (proxy_params.max_parallel_requests), by the kind that orders the queue (main, subagent, background, warmer).", []string{"backend", "kind"}, nil),
	}
}

func (c *loadCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.inflight
	ch <- c.queued
}

func (c *loadCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.load() {
		up := 0.0
		if b.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, b.Backend)
		ch <- prometheus.MustNewConstMetric(c.inflight, prometheus.GaugeValue, float64(b.InFlight), b.Backend)
		for p := range kind.Priorities {
			name := p.String()
			ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(b.QueuedByKind[name]), b.Backend, name)
		}
	}
}
