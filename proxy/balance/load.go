package balance

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/tick"
	"github.com/dragoman-dev/dragoman/proxy/serverload"
)

// serverLoad is a backend's last reading of its server's load.
type serverLoad struct {
	serverload.Load
	ok       bool      // a reading holds
	at       time.Time // when it was read
	inflight int       // this proxy's requests in flight there when it was read
	err      string    // why there is none ("" before the first try)
}

// ReadLoad reads one backend's load; serverload.Read by default.
type ReadLoad func(ctx context.Context, t serverload.Target) (serverload.Load, error)

// RunLoad reads every backend's load from its server every
// router_settings.load_poll_interval until ctx ends (with the interval 0
// it returns at once). serverOf tells the server a backend is when the
// config does not say (discovery); nil: unknown.
func (bl *Balancer) RunLoad(ctx context.Context, serverOf func(apiBase, model string) string) {
	every := bl.settings.LoadPollInterval
	if every <= 0 {
		return
	}
	bl.ReadLoadNow(ctx, serverOf)
	tick.Every(ctx, every, func(ctx context.Context) { bl.ReadLoadNow(ctx, serverOf) })
}

// ReadLoadNow reads every backend's load at once and waits for the
// answers, each within the poll interval (at most 5 s).
func (bl *Balancer) ReadLoadNow(ctx context.Context, serverOf func(apiBase, model string) string) {
	read := bl.readLoad
	if read == nil {
		read = func(ctx context.Context, t serverload.Target) (serverload.Load, error) {
			return serverload.Read(ctx, serverload.DefaultClient, t)
		}
	}
	limit := min(max(bl.settings.LoadPollInterval, 200*time.Millisecond), 5*time.Second)
	var wg sync.WaitGroup
	for _, b := range bl.backends {
		t := serverload.Target{APIBase: b.APIBase, APIKey: b.route.APIKey, Model: b.Model, Server: b.server}
		if t.Server == "" && serverOf != nil {
			t.Server = serverOf(b.APIBase, b.Model)
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, limit)
			l, err := read(rctx, t)
			cancel()
			if ctx.Err() != nil {
				return
			}
			bl.setLoad(b, l, err)
		})
	}
	wg.Wait()
}

// setLoad records a reading of b's load, or why there is none.
func (bl *Balancer) setLoad(b *Backend, l serverload.Load, err error) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	if err != nil {
		msg := "the server exposes no load"
		if !errors.Is(err, serverload.ErrNoLoad) {
			msg = err.Error()
		}
		b.srv = serverLoad{err: msg}
		return
	}
	b.srv = serverLoad{Load: l, ok: true, at: bl.now(), inflight: b.inflight}
}

// LoadStatus is a backend's load as /backends shows it, and where it came
// from.
type LoadStatus struct {
	// Source: "vllm metrics", "sglang metrics", "llama.cpp metrics",
	// "llama.cpp slots", or "proxy in-flight" (the server exposes none:
	// Running and Waiting are this proxy's in flight and queued).
	Source  string `json:"source"`
	Running int    `json:"running"`
	Waiting int    `json:"waiting"`
	// KVCacheUsage is the fraction of the server's KV cache in use, when
	// it says.
	KVCacheUsage *float64 `json:"kv_cache_usage,omitempty"`
	Slots        int      `json:"slots,omitempty"` // as the server says (llama.cpp /slots)
	// Load is what the balancer compares: the server's running and
	// waiting, the requests this proxy sent since, and its own queue.
	Load   int        `json:"load"`
	Full   bool       `json:"full"`
	ReadAt *time.Time `json:"read_at,omitempty"`
	// Error says why the server's own load is not used, when it is not.
	Error string `json:"error,omitempty"`
}

// loadStatus is b's LoadStatus; mu is held.
func loadStatus(b *Backend) LoadStatus {
	s := LoadStatus{Source: serverload.SourceProxy, Running: b.inflight, Waiting: len(b.queue), Load: b.load(), Full: b.full(), Error: config.ScrubCredentials(b.srv.err, b.APIBase)}
	if b.srv.ok {
		s.Source, s.Running, s.Waiting, s.Slots = b.srv.Source, b.srv.Running, b.srv.Waiting, b.srv.Slots
		if b.srv.KVUsage >= 0 {
			kv := b.srv.KVUsage
			s.KVCacheUsage = &kv
		}
		s.ReadAt = timePtr(b.srv.at)
	}
	return s
}
