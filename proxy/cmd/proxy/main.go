// Command proxy serves the Messages and Chat Completions endpoints in front
// of Chat Completions backends, routing each model alias through a YAML
// config.
//
//	proxy --config config.yaml --port 4000
//	proxy check --config config.yaml [--json]
//	proxy keys create|list|show|revoke ... --config config.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	_ "golang.org/x/crypto/x509roots/fallback" // TLS roots for FROM scratch images

	"github.com/dragoman-dev/dragoman/proxy/admin"
	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/healthcheck"
	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/metrics"
	"github.com/dragoman-dev/dragoman/proxy/server"
	"github.com/dragoman-dev/dragoman/proxy/tracing"
)

// version is set at build time (-ldflags -X main.version=...).
var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check" {
		os.Exit(check(os.Args[2:], os.Stdout, os.Stderr, os.LookupEnv))
	}
	if len(os.Args) > 1 && os.Args[1] == "keys" {
		os.Exit(keysCmd(os.Args[2:], os.Stdout, os.Stderr, os.LookupEnv))
	}
	os.Exit(run(os.Args[1:], os.Stderr, os.LookupEnv))
}

func run(args []string, stderr io.Writer, getenv config.Getenv) int {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		configPath = fs.String("config", "config.yaml", "path of the YAML config")
		port       = fs.Int("port", 4000, "port to listen on")
		host       = fs.String("host", "", "address to listen on (default all interfaces)")
		noAuth     = fs.Bool("no-auth", false, "serve without a client key (only on a trusted network)")
		health     = fs.Bool("healthcheck", false, "probe http://127.0.0.1:PORT/healthz and exit 0 when healthy")
		grace      = fs.Duration("grace", 30*time.Second, "on SIGTERM, how long the proxy may take to finish the requests and streams in flight, the drain delay included")
		drainDelay = fs.Duration("drain-delay", 5*time.Second, "on SIGTERM, how long /readyz answers 503 while new connections are still served, before the proxy stops accepting them (so that a balancer sends them elsewhere first)")
		ping       = fs.Duration("ping-interval", server.DefaultPingInterval, "a Messages stream whose backend is silent this long is committed (200) and pinged every interval")
		logFormat  = fs.String("log-format", "text", "log format: text or json")
		logLevel   = fs.String("log-level", "info", "log level: debug, info, warn or error")
		pprofAddr  = fs.String("pprof", "", "serve Go's /debug/pprof/ on this address, e.g. 127.0.0.1:6060 (off by default; never expose it)")
		metricsOn  = fs.Bool("metrics", true, "export Prometheus metrics on GET /metrics (no client key needed)")
		metricsAt  = fs.String("metrics-addr", "", "serve /metrics on this address (e.g. :9464) instead of the API port")
		threads    = autoProcs
	)
	fs.Var(&threads, "procs", "how many threads run the proxy's Go code at once (GOMAXPROCS): auto, the default, is 1 where Go's own default is 2 or fewer (a 2-CPU VM or container) and Go's default above; 0 is Go's default (a thread per CPU the process may use, a container's CPU limit included); the GOMAXPROCS environment variable, when set, wins")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *health {
		if err := healthcheck.Probe("http://127.0.0.1:" + strconv.Itoa(*port) + "/healthz"); err != nil {
			fmt.Fprintln(stderr, "unhealthy:", err)
			return 1
		}
		return 0
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "proxy:", err)
		return 2
	}
	cfg, err := config.Load(*configPath, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "proxy: config:", err)
		return 1
	}
	var keys []string
	if k, ok := getenv("PROXY_API_KEY"); ok && k != "" {
		keys = append(keys, k)
	}
	if cfg.MasterKey != "" {
		keys = append(keys, cfg.MasterKey)
	}
	gate, closeGate, err := openGate(cfg, log, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "proxy:", err)
		return 1
	}
	defer closeGate()
	switch {
	case len(keys) == 0 && gate != nil:
		log.Warn("no master key: only the per-user keys of general_settings.database_url are accepted, and /admin is off (set general_settings.master_key to use it)")
	case len(keys) == 0 && !*noAuth:
		fmt.Fprintln(stderr, "proxy: no client key: set PROXY_API_KEY or general_settings.master_key, or pass --no-auth to serve without one on a trusted network")
		return 1
	case len(keys) == 0:
		log.Warn("serving WITHOUT client authentication (--no-auth): anyone who reaches this port can use the backends")
	}
	var m *metrics.Metrics
	hooks := server.MetricsHooks(&m)
	hooks.StateChanged = func(b *balance.Backend, st balance.State) {
		log.Info("backend state", "backend", b.Name, "api_base", config.RedactedURL(b.APIBase), "state", st.String())
	}
	bal := balance.New(cfg, balance.Options{Hooks: hooks})
	if *metricsOn {
		m = metrics.New(metrics.Setup{Version: version, Routes: server.MetricRoutes(bal), Load: server.BackendLoad(bal), SearchProvider: searchProvider(cfg)})
	}
	// One count of failed authentications per client address for the API
	// and /admin: the master key works at both.
	authLim := authlimit.New(nil)
	authLim.Throttled = func() { m.AuthThrottled() }
	tracer, err := tracing.New(context.Background(), getenv, "dragoman-proxy", version)
	if err != nil {
		fmt.Fprintln(stderr, "proxy: tracing:", err)
		return 1
	}
	if tracer != nil {
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tracer.Shutdown(ctx); err != nil {
				log.Warn("sending the last traces", "err", err)
			}
		}()
		log.Info("tracing on: OTLP over HTTP to the endpoint of OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT")
	}
	srv := server.New(cfg, server.Options{Keys: keys, Logger: log, PingInterval: *ping, Balancer: bal,
		Metrics: m, ServeMetrics: *metricsAt == "", Tracer: tracer, Gate: gate, Admin: adminOf(gate, keys, bal, log, authLim), AuthLimiter: authLim})
	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "proxy: cannot listen on %s: %v (is another process using port %d? pick another with --port)\n", addr, err, *port)
		return 1
	}
	ln := newDrainingListener(tcp.(*net.TCPListener))
	setProcs(threads, getenv)
	if *pprofAddr != "" {
		pln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			fmt.Fprintf(stderr, "proxy: --pprof: cannot listen on %s: %v\n", *pprofAddr, err)
			return 1
		}
		defer pln.Close()
		go (&http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second}).Serve(pln)
		log.Info("pprof listening", "addr", pln.Addr().String())
	}
	if m != nil && *metricsAt != "" {
		mln, err := net.Listen("tcp", *metricsAt)
		if err != nil {
			fmt.Fprintf(stderr, "proxy: --metrics-addr: cannot listen on %s: %v (pick another address, or leave it out to serve /metrics on the API port)\n", *metricsAt, err)
			return 1
		}
		defer mln.Close()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		go (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(mln)
		log.Info("metrics listening", "addr", mln.Addr().String())
	}
	conns := newConnTracker()
	httpServer := &http.Server{
		Handler: conns.Handler(srv),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return server.ConnContext(conns.ConnContext(ctx, c), c)
		},
		ConnState:         conns.ConnState,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()
	log.Info("proxy listening", "addr", ln.Addr().String(), "config", cfg.Path, "models", cfg.Aliases(),
		"messages_endpoint", cfg.PassThrough, "auth", len(keys) > 0 || gate != nil, "per_user_keys", gate != nil, "procs", runtime.GOMAXPROCS(0))
	// What each backend is (its context window, whether it reads images),
	// and whether it is down or refuses its key, shows in the log at start,
	// and is asked again every router_settings.health_check_interval.
	go srv.RunDiscovery(ctx, cfg.Router.HealthCheckInterval)
	go bal.Run(ctx)
	go bal.RunLoad(ctx, srv.ServerOf) // each server's own load (router_settings.load_poll_interval)

	select {
	case err := <-served:
		log.Error("proxy stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	stop()
	graceCtx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	// Leaving: /readyz says so at once, every request that comes is
	// served, and each answer closes its connection, so that a client's
	// next request opens a new one where its balancer now sends it.
	srv.Leave()
	httpServer.SetKeepAlivesEnabled(false)
	log.Info("shutting down: /readyz answers 503; new connections are served until the drain delay ends", "active", srv.Active(), "drain_delay", *drainDelay, "grace", *grace)
	select {
	case <-time.After(*drainDelay):
	case <-graceCtx.Done():
	}
	if left := ln.StopAccepting(time.Second); left > 0 {
		log.Warn("shutting down: connections accepted before the listener closed were not taken up by the server within a second", "connections", left)
	}
	log.Info("shutting down: no new connections; finishing requests in flight", "active", srv.Active(), "connections_without_request", conns.waitingConns())
	// Shutdown drops a request it reads after it began: first every
	// connection accepted has its request handled, within the grace.
	conns.Wait(graceCtx)
	if err := httpServer.Shutdown(graceCtx); err != nil {
		msg, attrs := graceOver(srv.Active(), conns.waitingConns())
		log.Warn(msg, attrs...)
		httpServer.Close()
	}
	// Responses WebSocket connections are hijacked, which Shutdown does
	// not wait for: each finishes its response in flight, then closes 1001.
	if err := srv.WaitWebSockets(graceCtx); err != nil {
		log.Warn("grace period over with WebSocket responses still in flight", "websockets", srv.WebSockets())
	}
	log.Info("proxy stopped")
	return 0
}

// openGate opens the store of per-user keys when the config names one
// (general_settings.database_url), migrated to this version's schema; the
// function it returns writes the last usage records and closes it.
func openGate(cfg *config.Config, log *slog.Logger, getenv config.Getenv) (*keys.Gate, func(), error) {
	if cfg.DatabaseURL == "" {
		return nil, func() {}, nil
	}
	if w := keys.SSLModeWarning(cfg.DatabaseURL, func(k string) string { v, _ := getenv(k); return v }); w != "" {
		log.Warn(w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := keys.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	gate, err := keys.NewGate(ctx, store, keys.Options{Logger: log, Retention: time.Duration(cfg.UsageRetentionDays) * 24 * time.Hour})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	log.Info("per-user keys on", "database", store.Dialect().String(), "schema_version", keys.SchemaVersion())
	return gate, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := gate.Close(ctx); err != nil {
			log.Warn("writing the last usage records", "err", err)
		}
		store.Close()
	}, nil
}

// adminOf is the /admin page and API of the per-user keys; nil (not
// served) without a database.
func adminOf(gate *keys.Gate, masterKeys []string, bal *balance.Balancer, log *slog.Logger, lim *authlimit.Limiter) http.Handler {
	if gate == nil {
		return nil
	}
	return admin.New(admin.Options{Gate: gate, MasterKeys: masterKeys, Backends: bal.Snapshot, Logger: log, Limiter: lim})
}

// pprofMux serves the runtime's profiles (goroutines, heap, CPU) for
// --pprof: the soak test reads the goroutine count from it.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// searchProvider is the web search provider the config names, "" when web
// search is off.
func searchProvider(cfg *config.Config) string {
	if cfg.Search == nil {
		return ""
	}
	return cfg.Search.Provider
}
