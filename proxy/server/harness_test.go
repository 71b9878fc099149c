package server_test

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
	"github.com/dragoman-dev/dragoman/proxy/internal/logbuf"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/metrics"
	"github.com/dragoman-dev/dragoman/proxy/server"
	"github.com/dragoman-dev/dragoman/proxy/stub"
	"github.com/dragoman-dev/dragoman/proxy/tracing"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

const (
	clientKey  = "sk-proxy-test-key"
	backendKey = "sk-backend-secret-key"
)

// harness is a real proxy on a loopback port in front of a stub backend.
type harness struct {
	t       *testing.T
	backend *stub.Server
	stubURL string
	proxy   *httptest.Server
	server  *server.Server
	logs    *logbuf.Buffer
	metrics *metrics.Metrics
}

type harnessOptions struct {
	stub       stub.Options
	extraYAML  string // appended to every route's proxy_params
	settings   string // general_settings body
	ping       time.Duration
	backendURL string         // overrides the stub's URL
	routesYAML string         // replaces the default model_list; {base} in it is the stub's URL, {host} its host:port
	pool       *upstream.Pool // nil: a pool with a 10 ms backoff
	metrics    bool           // export metrics on GET /metrics (h.metrics)
	tracer     *tracing.Tracer
	native     bool // vendora/ routes, to a stub serving the Messages format (unless stub.Protocol says otherwise)
	gate       *keys.Gate
	authLim    *authlimit.Limiter // counts failed authentications per address
	tls        bool               // the stub served over TLS (httptest.NewTLSServer), its certificate trusted by the pool
	// search, when set, is the search_settings provider, served by the
	// stub (searchExtra: more search_settings lines, indented).
	search, searchExtra string
	wsIdle              time.Duration // Options.WebSocketIdle
}

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	prefix := "vendorb/"
	if o.native {
		prefix = "vendora/"
		if o.stub.Protocol == "" {
			o.stub.Protocol = stub.ProtocolMessages
		}
	}
	h := &harness{t: t, backend: stub.New(o.stub), logs: &logbuf.Buffer{}}
	backend := httptest.NewUnstartedServer(h.backend)
	if o.tls {
		backend.StartTLS()
	} else {
		backend.Start()
	}
	t.Cleanup(backend.Close)
	h.stubURL = backend.URL
	base := backend.URL + "/v1"
	if o.backendURL != "" {
		base = o.backendURL
	}
	routes := strings.ReplaceAll(o.routesYAML, "{base}", base)
	routes = strings.ReplaceAll(routes, "{host}", strings.TrimPrefix(backend.URL, "http://"))
	if routes == "" {
		params := "      model: " + prefix + "qwen3-coder\n      api_base: " + base + "\n      api_key: os.environ/TEST_BACKEND_KEY\n" + o.extraYAML
		routes = "model_list:\n" +
			"  - model_name: claude-opus-5-5\n    proxy_params:\n" + params +
			"  - model_name: local-model\n    proxy_params:\n" + params
	}
	settings := o.settings
	if settings == "" {
		settings = "  enable_vendora_pass_through: true\n"
	}
	t.Setenv("TEST_BACKEND_KEY", backendKey)
	search := ""
	if o.search != "" {
		search = "search_settings:\n  provider: " + o.search + "\n  api_base: " + backend.URL + "\n  api_key: test-search-key\n" + o.searchExtra
	}
	cfg := loadConfig(t, routes+"general_settings:\n"+settings+search)
	pool := o.pool
	if pool == nil {
		pool = upstream.NewPool()
		pool.SetBackoff(func(int) time.Duration { return 10 * time.Millisecond })
	}
	if o.tls {
		roots := x509.NewCertPool()
		roots.AddCert(backend.Certificate())
		pool.SetRootCAs(roots)
	}
	var bal *balance.Balancer
	if o.metrics {
		bal = balance.New(cfg, balance.Options{Hooks: server.MetricsHooks(&h.metrics)})
		h.metrics = metrics.New(metrics.Setup{Version: "test", Routes: server.MetricRoutes(bal), Load: server.BackendLoad(bal)})
	}
	h.server = server.New(cfg, server.Options{
		Keys:          []string{clientKey},
		Logger:        slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PingInterval:  o.ping,
		Pool:          pool,
		Balancer:      bal,
		Metrics:       h.metrics,
		ServeMetrics:  o.metrics,
		Tracer:        o.tracer,
		Gate:          o.gate,
		AuthLimiter:   o.authLim,
		WebSocketIdle: o.wsIdle,
	})
	h.proxy = httptest.NewUnstartedServer(h.server)
	h.proxy.Config.ConnContext = server.ConnContext // as bin/proxy serves
	h.proxy.Start()
	t.Cleanup(h.proxy.Close)
	t.Cleanup(func() {
		if strings.Contains(h.logs.String(), backendKey) || strings.Contains(h.logs.String(), clientKey) {
			t.Errorf("a key reached the logs:\n%s", h.logs.String())
		}
	})
	return h
}

// Good requests, for checking that the proxy still serves.
const (
	goodMessages = `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"still serving"}]}`
	goodChat     = `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"still serving"}]}`
)

// post sends a raw request with the client key; header holds name, value
// pairs (a value "" deletes the header).
func (h *harness) post(path, body string, header ...string) *http.Response {
	h.t.Helper()
	return h.send(http.MethodPost, path, body, header, false)
}

// do sends a raw request with the client key (twice with addAuth) and
// reads its whole answer.
func (h *harness) do(method, path, body string, header []string, addAuth bool) (*http.Response, []byte) {
	h.t.Helper()
	resp := h.send(method, path, body, header, addAuth)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	return resp, b
}

func (h *harness) send(method, path, body string, header []string, addAuth bool) *http.Response {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.proxy.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	if addAuth {
		req.Header.Add("Authorization", "Bearer "+clientKey)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// stillServing asserts that both endpoints answer a good request.
func (h *harness) stillServing() {
	h.t.Helper()
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		body := goodMessages
		if path != "/v1/messages" {
			body = goodChat
		}
		resp, b := h.do(http.MethodPost, path, body, nil, false)
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte("still serving")) {
			h.t.Fatalf("%s after a bad request: %d %s", path, resp.StatusCode, b)
		}
	}
}

// drain reads a body to its end (readEvents) and closes it.
func drain(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	return string(readEvents(t, resp.Body))
}

// smallRequest is the small Messages request to alias coder that the
// in-process benchmarks send, with a client's headers, to url (a full URL,
// or a path for a handler called directly).
func smallRequest(url string, stream bool) *http.Request {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	body := `{"model":"coder","max_tokens":64,"messages":[{"role":"user","content":"Say hello in one short sentence."}]` + s + `}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	return req
}

// serveBackend serves backend on a loopback port until the test ends; it
// returns its api_base.
func serveBackend(t testing.TB, backend http.Handler) string {
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// cannedBackend answers every request with status and the JSON body; it
// returns its api_base.
func cannedBackend(t testing.TB, status int, body string) string {
	return serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
}

// quietServer is the proxy for cfg as bin/proxy builds it, logging
// nothing: the client key, a fresh pool unless o has one, and bal, its
// probes running until the test ends. o holds any other options.
func quietServer(tb testing.TB, cfg *config.Config, bal *balance.Balancer, o server.Options) *server.Server {
	go bal.Run(tb.Context())
	o.Keys, o.Balancer, o.Logger = []string{clientKey}, bal, slog.New(slog.DiscardHandler)
	if o.Pool == nil {
		o.Pool = upstream.NewPool()
	}
	return server.New(cfg, o)
}

// loadConfig loads a configuration file holding y.
func loadConfig(t testing.TB, y string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// backendRequests returns the bodies the backend received.
func (h *harness) backendRequests() []map[string]any {
	var out []map[string]any
	for _, r := range h.backend.Requests() {
		if r.Path != "/v1/chat/completions" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(r.Body, &m); err != nil {
			h.t.Fatalf("backend got invalid JSON: %v", err)
		}
		out = append(out, m)
		if got := r.Header.Get("Authorization"); got != "Bearer "+backendKey {
			h.t.Errorf("backend Authorization = %q, want the backend key", got)
		}
	}
	return out
}
