package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/metrics"
	"github.com/dragoman-dev/dragoman/proxy/server"
)

// serve runs Dragoman's server in this process, as cmd/proxy does, with
// profiles: a CPU profile over the process's life and a heap profile at
// its end. `bench --profile DIR` measures this instead of bin/proxy, to
// see where the time goes (go tool pprof DIR/cpu.pprof).
func serve(args []string) int {
	fs := flag.NewFlagSet("bench serve", flag.ContinueOnError)
	configPath := fs.String("config", "config.yaml", "path of the YAML config")
	port := fs.Int("port", 4000, "port to listen on (127.0.0.1)")
	level := fs.String("log-level", "warn", "log level")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile here")
	memProfile := fs.String("memprofile", "", "write a heap profile here at exit")
	metricsOn := fs.Bool("metrics", true, "Prometheus metrics, as bin/proxy --metrics (on by default, as there)")
	twins := fs.String("twins", "", "comma-separated ports: one more server on each, metrics off, on, off, … in turn (the first, on --port, follows --metrics); each its own balancer and metrics, all in this process")
	pprofAddr := fs.String("pprof", "", "serve Go's /debug/pprof/ on this address, as bin/proxy --pprof")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "bench serve:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	cfg, err := config.Load(*configPath, os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench serve: config:", err)
		return 1
	}
	var keys []string
	if k := os.Getenv("PROXY_API_KEY"); k != "" {
		keys = append(keys, k)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench serve:", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench serve:", err)
			return 1
		}
	}
	ports := []string{strconv.Itoa(*port)}
	if *twins != "" {
		ports = append(ports, strings.Split(*twins, ",")...)
	}
	var srvs []*http.Server
	for i, p := range ports {
		srvs = append(srvs, &http.Server{
			Addr:              net.JoinHostPort("127.0.0.1", strings.TrimSpace(p)),
			Handler:           handler(cfg, keys, log, *metricsOn == (i%2 == 0)),
			ConnContext:       server.ConnContext, // as bin/proxy's
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
		})
	}
	if *pprofAddr != "" {
		srvs = append(srvs, &http.Server{Addr: *pprofAddr, Handler: http.DefaultServeMux, ReadHeaderTimeout: 10 * time.Second})
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, srv := range srvs {
			srv.Shutdown(c)
		}
	}()
	errs := make(chan error, len(srvs))
	for _, srv := range srvs[1:] {
		go func() { errs <- srv.ListenAndServe() }()
	}
	err = srvs[0].ListenAndServe()
	if err == http.ErrServerClosed {
		for range srvs[1:] {
			if e := <-errs; e != http.ErrServerClosed {
				err = e
			}
		}
	}
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		if f, err := os.Create(*memProfile); err == nil {
			runtime.GC()
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "bench serve:", err)
		return 1
	}
	return 0
}

// handler is Dragoman's handler with its own balancer, and metrics or
// none, as cmd/proxy builds them.
func handler(cfg *config.Config, keys []string, log *slog.Logger, metricsOn bool) http.Handler {
	var m *metrics.Metrics
	bal := balance.New(cfg, balance.Options{Hooks: server.MetricsHooks(&m)})
	if metricsOn {
		m = metrics.New(metrics.Setup{Version: "bench", Routes: server.MetricRoutes(bal), Load: server.BackendLoad(bal)})
	}
	return server.New(cfg, server.Options{Keys: keys, Logger: log, Balancer: bal, Metrics: m, ServeMetrics: m != nil})
}
