// Command stub-backend is a deterministic Chat Completions server for the
// demo stack, tests and benchmarks. See package stub for what it answers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/healthcheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

func main() {
	var (
		port   = flag.Int("port", 8000, "port to listen on")
		host   = flag.String("host", "", "address to listen on (default all interfaces)")
		health = flag.Bool("healthcheck", false, "probe http://127.0.0.1:PORT/healthz and exit 0 when healthy")
		opts   stub.Options
	)
	flag.DurationVar(&opts.ColdStart, "cold-start", 0, "the first request waits this long, as a backend loading its model")
	flag.DurationVar(&opts.Loading, "loading", 0, "answer 503 \"Loading model\" for this long after start")
	flag.DurationVar(&opts.FirstTokenDelay, "first-token-delay", 0, "delay before every answer's first byte")
	flag.DurationVar(&opts.EventDelay, "event-delay", 0, "delay between stream events")
	flag.IntVar(&opts.Events, "events", 8, "stream text answers in this many events")
	flag.BoolVar(&opts.PadEvents, "pad-events", false, "repeat a text answer shorter than --events characters up to that many, so that every stream has --events events")
	flag.BoolVar(&opts.Tokenize, "tokenize", false, "serve POST /tokenize as vLLM does")
	flag.StringVar(&opts.Model, "model", "stub-model", "the model GET /v1/models lists")
	flag.IntVar(&opts.ContextWindow, "context-window", 0, "the model's context window: listed as max_model_len, and requests over it refused as vLLM does")
	flag.StringVar(&opts.APIKey, "api-key", "", "refuse requests without this key (401), as vLLM --api-key does")
	flag.BoolVar(&opts.StrictModel, "strict-model", false, "answer 404 to a model other than --model, as vLLM does")
	flag.BoolVar(&opts.NoTools, "no-tools", false, "a model that never calls tools")
	flag.StringVar(&opts.TextCalls, "text-calls", "", "a model that writes its tool calls as text in its content: hermes (<tool_call>{…}</tool_call>) or qwen3_coder (<function=…> without the <tool_call> wrapper)")
	flag.IntVar(&opts.GPU.Slots, "gpu-slots", 0, "model a GPU server with this many slots (a prefix cache, prefill time by uncached tokens, vLLM's /metrics); 0: off")
	flag.IntVar(&opts.GPU.CacheTokens, "gpu-cache-tokens", 262144, "with --gpu-slots: the prefix cache's size in tokens")
	flag.DurationVar(&opts.GPU.PrefillPerToken, "gpu-prefill-per-token", 2*time.Microsecond, "with --gpu-slots: time to compute one prompt token")
	flag.DurationVar(&opts.GPU.DecodePerToken, "gpu-decode-per-token", 200*time.Microsecond, "with --gpu-slots: time to decode one answer token")
	flag.IntVar(&opts.GPU.OutputTokens, "gpu-output-tokens", 64, "with --gpu-slots: answer tokens when the request says none (gpu:reply=N)")
	flag.StringVar(&opts.Protocol, "protocol", stub.ProtocolChat, "chat: Chat Completions only; messages: also the Messages format at /v1/messages (for vendora/ routes)")
	flag.Parse()
	if opts.Protocol != stub.ProtocolChat && opts.Protocol != stub.ProtocolMessages {
		fmt.Fprintf(os.Stderr, "--protocol is %q: write chat or messages\n", opts.Protocol)
		os.Exit(2)
	}

	if *health {
		if err := healthcheck.Probe("http://127.0.0.1:" + strconv.Itoa(*port) + "/healthz"); err != nil {
			fmt.Fprintln(os.Stderr, "unhealthy:", err)
			os.Exit(1)
		}
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv := &http.Server{
		Addr:              net.JoinHostPort(*host, strconv.Itoa(*port)),
		Handler:           stub.New(opts),
		ReadHeaderTimeout: 10 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	log.Info("stub-backend listening", "addr", srv.Addr, "cold_start", opts.ColdStart, "loading", opts.Loading, "protocol", opts.Protocol)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("stub-backend stopped", "err", err)
		os.Exit(1)
	}
}
