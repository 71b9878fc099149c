package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/server"
	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// poolBackend is a stub backend on a loopback port that can be killed and
// restarted on the same port, and counts the chat requests it carries.
type poolBackend struct {
	t    *testing.T
	stub *stub.Server
	addr string

	mu  sync.Mutex
	srv *http.Server

	inflight, peak, served atomic.Int64
	// untilAnswer ends a request's count when its answer is written rather
	// than when the handler returns: a non-stream answer is flushed whole
	// before the handler's epilogue runs, so the proxy may rightly send the
	// next request while this one's handler is still returning. A streamed
	// answer's count ends when its last event (usage, or data: [DONE]) is
	// written.
	untilAnswer bool
}

func newPoolBackend(t *testing.T, opts stub.Options) *poolBackend {
	t.Helper()
	b := &poolBackend{t: t, stub: stub.New(opts)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = ln.Addr().String()
	b.serve(ln)
	t.Cleanup(b.kill)
	return b
}

func (b *poolBackend) url() string { return "http://" + b.addr + "/v1" }

func (b *poolBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/chat/completions" {
		n := b.inflight.Add(1)
		if b.untilAnswer {
			aw := &answerWriter{ResponseWriter: w, done: func() { b.inflight.Add(-1) }}
			defer aw.end()
			w = aw
		} else {
			defer b.inflight.Add(-1)
		}
		for {
			p := b.peak.Load()
			if n <= p || b.peak.CompareAndSwap(p, n) {
				break
			}
		}
		b.served.Add(1)
	}
	b.stub.ServeHTTP(w, r)
}

// answerWriter calls done once, when the answer's first byte is written,
// or for an event stream its last event: the usage chunk, after which the
// proxy may end the client's stream without waiting for data: [DONE] (or
// when the handler ends without writing).
type answerWriter struct {
	http.ResponseWriter
	done  func()
	ended bool
}

func (a *answerWriter) Write(p []byte) (int, error) {
	if a.Header().Get("Content-Type") != "text/event-stream" || bytes.Contains(p, []byte(`"usage":`)) || bytes.Contains(p, []byte("data: [DONE]")) {
		a.end()
	}
	return a.ResponseWriter.Write(p)
}

func (a *answerWriter) end() {
	if !a.ended {
		a.ended = true
		a.done()
	}
}

func (a *answerWriter) Flush() {
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (b *poolBackend) serve(ln net.Listener) {
	srv := &http.Server{Handler: b}
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go srv.Serve(ln)
}

// kill closes the listener and every connection at once, as a process
// that dies.
func (b *poolBackend) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		b.srv.Close()
		b.srv = nil
	}
}

// restart listens again on the same port.
func (b *poolBackend) restart() {
	b.t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", b.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("restarting the backend on %s: %v", b.addr, err)
	}
	b.serve(ln)
}

// texts returns the user texts of the chat requests the backend received.
func (b *poolBackend) texts() map[string]bool {
	out := map[string]bool{}
	for _, r := range b.stub.Requests() {
		if r.Path != "/v1/chat/completions" {
			continue
		}
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(r.Body, &req)
		for _, m := range req.Messages {
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				out[s] = true
			}
		}
	}
	return out
}

// poolProxy is a proxy in front of a pool.
type poolProxy struct {
	t       *testing.T
	url     string
	bal     *balance.Balancer
	backend []*poolBackend
	client  *http.Client
}

// newPoolProxy serves a pool "coder" of the given backends (a weight per
// backend), with extra YAML after the pool (more entries, router_settings).
func newPoolProxy(t *testing.T, backends []*poolBackend, weights []float64, extra string, opts balance.Options) *poolProxy {
	t.Helper()
	var y strings.Builder
	y.WriteString("model_list:\n")
	for i, b := range backends {
		fmt.Fprintf(&y, "  - model_name: coder\n    proxy_params: {model: vendorb/m%d, api_base: '%s', api_key: k, name: b%d, weight: %v}\n", i, b.url(), i, weights[i])
	}
	y.WriteString(extra)
	return newPoolProxyYAML(t, y.String(), backends, opts)
}

func (p *poolProxy) post(path, session, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	if session != "" {
		req.Header.Set(server.SessionHeader, session)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b, err
}

// coderBody is a request to the pool "coder" with one user message, valid
// for both /v1/messages and /v1/chat/completions.
func coderBody(text string, stream bool) string {
	return fmt.Sprintf(`{"model":"coder","max_tokens":16,"stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, text)
}

// servedBy returns a function that tells the index of the backend that
// received a text (-1 for none), from the requests received so far.
func (p *poolProxy) servedBy() func(text string) int {
	var seen []map[string]bool
	for _, b := range p.backend {
		seen = append(seen, b.texts())
	}
	return func(text string) int { return p.which(seen, text) }
}

func (p *poolProxy) which(seen []map[string]bool, text string) int {
	found := -1
	for i, texts := range seen {
		if texts[text] {
			if found >= 0 {
				p.t.Fatalf("%q reached backends %d and %d", text, found, i)
			}
			found = i
		}
	}
	return found
}

func threeBackends(t *testing.T, opts stub.Options) []*poolBackend {
	return []*poolBackend{newPoolBackend(t, opts), newPoolBackend(t, opts), newPoolBackend(t, opts)}
}

// TestPoolSimpleShuffleWeights: weights 1:2:3 over 3,000 requests through
// the proxy to three stub backends, each within ±10 % of its share.
func TestPoolSimpleShuffleWeights(t *testing.T) {
	backends := threeBackends(t, stub.Options{Events: 1})
	weights := []float64{1, 2, 3}
	p := newPoolProxy(t, backends, weights, "router_settings: {routing_strategy: simple-shuffle}\n", balance.Options{Rand: rand.New(rand.NewPCG(7, 11))})
	const n = 3000
	for i := range n {
		resp, b, err := p.post("/v1/chat/completions", "", coderBody("hi", false))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %s", i, err, b)
		}
	}
	var got []int64
	for i, b := range backends {
		want := float64(n) * weights[i] / 6
		c := b.served.Load()
		got = append(got, c)
		if d := float64(c) - want; d > want/10 || d < -want/10 {
			t.Errorf("backend %d (weight %v) served %d, want %.0f ±10 %%", i, weights[i], c, want)
		}
	}
	t.Logf("weights 1:2:3, %d requests: served %v", n, got)
}

// TestPoolSessionAffinity: 500 sessions × 6 requests (Messages and Chat
// alternately): each session's requests on one backend, the sessions
// within ±20 % of even.
func TestPoolSessionAffinity(t *testing.T) {
	backends := threeBackends(t, stub.Options{Events: 1})
	p := newPoolProxy(t, backends, []float64{1, 1, 1}, "", balance.Options{})
	const sessions, turns = 500, 6
	for turn := range turns {
		for s := range sessions {
			session := fmt.Sprintf("%08x-4a3f-4eb6-a37f-0c8eb28d1106", s*2654435761)
			path, body := "/v1/messages", coderBody(fmt.Sprintf("s%d t%d", s, turn), false)
			if turn%2 == 1 {
				path, body = "/v1/chat/completions", coderBody(fmt.Sprintf("s%d t%d", s, turn), false)
			}
			resp, b, err := p.post(path, session, body)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: %v %s", path, err, b)
			}
		}
	}
	counts := make([]int, 3)
	servedBy := p.servedBy()
	for s := range sessions {
		home := servedBy(fmt.Sprintf("s%d t0", s))
		if home < 0 {
			t.Fatalf("session %d's first request reached no backend", s)
		}
		counts[home]++
		for turn := 1; turn < turns; turn++ {
			if got := servedBy(fmt.Sprintf("s%d t%d", s, turn)); got != home {
				t.Fatalf("session %d: turn 0 on backend %d, turn %d on %d", s, home, turn, got)
			}
		}
	}
	for i, c := range counts {
		if c < 133 || c > 200 {
			t.Errorf("backend %d holds %d of 500 sessions, want 167 ±20 %%", i, c)
		}
	}
	t.Logf("500 sessions × 6 requests: sessions per backend %v", counts)
}

// TestPoolHotSessionRelievedWhenFull: 64 concurrent streams of a hot
// session mix (half of them one session) on three backends of 8 slots
// (max_parallel_requests): a session stays home while home has room, and
// once home is full its requests go to the next of its order, so no
// backend carries more than its slots, the hot session's home is filled
// first, and every stream is served (issue 42: a session leaves home only
// when home is full).
func TestPoolHotSessionRelievedWhenFull(t *testing.T) {
	backends := threeBackends(t, stub.Options{FirstTokenDelay: 600 * time.Millisecond, Events: 2})
	var y strings.Builder
	y.WriteString("model_list:\n")
	for i, b := range backends {
		// Counted until each stream's last event: the proxy gives the slot
		// back then, and may send the next request while the backend's
		// handler is still returning (a loaded CI run saw 11 on one).
		b.untilAnswer = true
		fmt.Fprintf(&y, "  - model_name: coder\n    proxy_params: {model: vendorb/m%d, api_base: '%s', api_key: k, name: b%d, max_parallel_requests: 8}\n", i, b.url(), i)
	}
	y.WriteString("router_settings: {queue_timeout: 30, load_poll_interval: 0}\n")
	p := newPoolProxyYAML(t, y.String(), backends, balance.Options{})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 64 {
		session := "hot-session"
		switch {
		case i%4 == 1:
			session = "warm-session"
		case i%4 == 3:
			session = fmt.Sprint("cold-", i)
		}
		wg.Go(func() {
			resp, b, err := p.post("/v1/messages", session, coderBody("stream", true))
			if err != nil || resp.StatusCode != 200 || ssecheck.Check(b) != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d streams failed", failed.Load())
	}
	var peaks []int64
	for i, b := range backends {
		peaks = append(peaks, b.peak.Load())
		if b.peak.Load() > 8 {
			t.Errorf("backend %d carried %d streams at once, over its 8 slots", i, b.peak.Load())
		}
	}
	if p.bal.Counters().Moves[balance.MoveHomeFull] == 0 {
		t.Error("no request counted as served away from a full home")
	}
	t.Logf("64 streams, half one session: peak in flight per backend %v, moves %v", peaks, p.bal.Counters().Moves)
}

// TestPoolSessionStaysHomeAtLowLoad: a session whose home carries more
// than the pool's average, but is not full (no limit, a server that says
// nothing of its load), stays home: 12 concurrent streams of one session
// all reach one backend, and none counts as a move.
func TestPoolSessionStaysHomeAtLowLoad(t *testing.T) {
	backends := threeBackends(t, stub.Options{FirstTokenDelay: 300 * time.Millisecond, Events: 2})
	p := newPoolProxy(t, backends, []float64{1, 1, 1}, "router_settings: {load_poll_interval: 0}\n", balance.Options{})
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			resp, b, err := p.post("/v1/messages", "one-session", coderBody("stream", true))
			if err != nil || resp.StatusCode != 200 || ssecheck.Check(b) != nil {
				t.Errorf("a stream failed: %v", err)
			}
		})
	}
	wg.Wait()
	var served []int64
	busy := 0
	for _, b := range backends {
		served = append(served, b.served.Load())
		if b.served.Load() > 0 {
			busy++
		}
	}
	if busy != 1 || len(p.bal.Counters().Moves) != 0 {
		t.Errorf("12 streams of one session served %v, moves %v; want all at its home, no move", served, p.bal.Counters().Moves)
	}
}

// maxParallelProxy is the proxy with one alias, coder, on backend b with
// max_parallel_requests: 2 and the given queue_timeout (seconds).
func maxParallelProxy(t *testing.T, b *poolBackend, queueTimeout string) *poolProxy {
	y := fmt.Sprintf("model_list:\n  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '%s', api_key: k, max_parallel_requests: 2}\nrouter_settings: {queue_timeout: %s}\n", b.url(), queueTimeout)
	return newPoolProxyYAML(t, y, []*poolBackend{b}, balance.Options{})
}

// TestPoolMaxParallel: max_parallel_requests 2 and 10 concurrent
// requests: never more than 2 at the backend, all served in turn; with a
// short queue_timeout the ones left waiting get 429 in their endpoint's
// shape.
func TestPoolMaxParallel(t *testing.T) {
	b := newPoolBackend(t, stub.Options{FirstTokenDelay: 50 * time.Millisecond, Events: 1})
	b.untilAnswer = true
	p := maxParallelProxy(t, b, "30")
	var wg sync.WaitGroup
	var ok atomic.Int64
	// Non-stream answers, counted at the backend from arrival until the
	// answer is written (untilAnswer): the backend's own view of what it
	// is working on.
	for i := range 10 {
		wg.Go(func() {
			path, body := "/v1/messages", coderBody("q", false)
			if i%2 == 1 {
				path, body = "/v1/chat/completions", coderBody("q", false)
			}
			if resp, _, err := p.post(path, "", body); err == nil && resp.StatusCode == 200 {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 10 || b.peak.Load() != 2 {
		t.Errorf("%d of 10 served, peak %d in flight at the backend; want 10 and 2", ok.Load(), b.peak.Load())
	}

	p = maxParallelProxy(t, b, "0.02") // 20 ms: shorter than one answer
	var mu sync.Mutex
	shapes := map[string][]byte{}
	for i := range 8 {
		wg.Go(func() {
			path, body := "/v1/messages", coderBody("q", i%4 < 2)
			if i%2 == 1 {
				path, body = "/v1/chat/completions", coderBody("q", i%4 < 2)
			}
			resp, b, err := p.post(path, "", body)
			if err == nil && resp.StatusCode == 429 {
				mu.Lock()
				shapes[path] = b
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		body, ok := shapes[path]
		if !ok {
			t.Errorf("%s: no 429 among 4 requests queued behind 2 slots for 20 ms", path)
			continue
		}
		checkErrorShape(t, path, body, "rate_limit_error", "queue_timeout")
	}
}

// TestPoolMaxParallelStreams: max_parallel_requests: 2 with 10 concurrent
// streamed requests (Messages and Chat): a stream holds its slot until it
// ends, so the backend never carries more than 2 at once and the rest are
// served in turn; a streamed request that finds no slot within
// queue_timeout gets 429 rate_limit_error in its endpoint's shape, as a
// JSON answer before any byte of a stream.
func TestPoolMaxParallelStreams(t *testing.T) {
	// 8 events 10 ms apart: each stream holds its slot for 80 ms or more.
	b := newPoolBackend(t, stub.Options{Events: 8, EventDelay: 10 * time.Millisecond})
	b.untilAnswer = true
	p := maxParallelProxy(t, b, "30")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	start := time.Now()
	for i := range 10 {
		wg.Go(func() {
			path, body, end := "/v1/messages", coderBody(fmt.Sprint("s", i), true), "event: message_stop"
			if i%2 == 1 {
				path, body, end = "/v1/chat/completions", coderBody(fmt.Sprint("s", i), true), "data: [DONE]"
			}
			resp, got, err := p.post(path, "", body)
			if err == nil && resp.StatusCode == 200 && bytes.Contains(got, []byte(end)) &&
				(path == "/v1/chat/completions" || ssecheck.Check(got) == nil) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", path, err))
			} else {
				bad = append(bad, fmt.Sprintf("%s: %d %.200s", path, resp.StatusCode, got))
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if len(bad) > 0 || b.peak.Load() != 2 || b.served.Load() != 10 {
		t.Errorf("%d of 10 streams incomplete %v; peak %d streams at the backend, %d served; want 0, 2 and 10", len(bad), bad, b.peak.Load(), b.served.Load())
	}
	// 10 streams of 80 ms or more, 2 at a time: 5 turns.
	if took < 400*time.Millisecond {
		t.Errorf("10 streams of 80 ms through 2 slots took %v: they were not served in turn", took)
	}
	t.Logf("10 streams, 2 slots: peak %d in flight at the backend until each stream's last event, all served in %v", b.peak.Load(), took.Round(time.Millisecond))

	// Two streams hold both slots for 80 ms or more; a stream queued
	// behind them gives up after 20 ms.
	p = maxParallelProxy(t, b, "0.02")
	b.peak.Store(0)
	for i := range 2 {
		wg.Go(func() { p.post("/v1/chat/completions", "", coderBody(fmt.Sprint("hold", i), true)) })
	}
	waitUntil(t, 10*time.Second, "two streams in flight at the backend", func() bool { return b.inflight.Load() == 2 })
	for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
		body := coderBody("queued", true)
		if path == "/v1/chat/completions" {
			body = coderBody("queued", true)
		}
		resp, got, err := p.post(path, "", body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 429 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: a stream queued past queue_timeout got %d %s, want 429 application/json: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), got)
			continue
		}
		checkErrorShape(t, path, got, "rate_limit_error", "queue_timeout")
		t.Logf("%s stream past queue_timeout: %d %s", path, resp.StatusCode, got)
	}
	wg.Wait()
	if b.peak.Load() != 2 {
		t.Errorf("peak %d streams at the backend while 2 held the slots, want 2", b.peak.Load())
	}
}

// newPoolProxyYAML serves a model_list and router_settings of its own;
// the balancer probes backends that are out (Run).
func newPoolProxyYAML(t *testing.T, y string, backends []*poolBackend, opts balance.Options) *poolProxy {
	t.Helper()
	cfg := loadConfig(t, y+"general_settings: {enable_vendora_pass_through: true}\n")
	bal := balance.New(cfg, opts)
	pool := upstream.NewPool()
	pool.SetBackoff(func(int) time.Duration { return 10 * time.Millisecond })
	hs := httptest.NewServer(quietServer(t, cfg, bal, server.Options{Pool: pool}))
	t.Cleanup(hs.Close)
	return &poolProxy{t: t, url: hs.URL, bal: bal, backend: backends, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}}
}

// TestPoolFallback: with every backend of a pool down, requests are served
// by the fallback pool, under the alias the client asked for.
func TestPoolFallback(t *testing.T) {
	small := newPoolBackend(t, stub.Options{Events: 1})
	y := fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params: {model: vendorb/big, api_base: '%s', api_key: k}
  - model_name: coder
    proxy_params: {model: vendorb/big, api_base: '%s', api_key: k}
  - model_name: small
    proxy_params: {model: vendorb/small, api_base: '%s', api_key: k}
router_settings:
  allowed_fails: 1
  fallbacks:
    - coder: [small]
`, refusedURL(t), refusedURL(t), small.url())
	p := newPoolProxyYAML(t, y, []*poolBackend{small}, balance.Options{})
	for i := range 6 {
		path, body := "/v1/messages", coderBody(fmt.Sprint("fb", i), i%3 == 0)
		if i%2 == 1 {
			path, body = "/v1/chat/completions", coderBody(fmt.Sprint("fb", i), i%3 == 0)
		}
		resp, b, err := p.post(path, fmt.Sprint("session-", i), body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %d %s", i, err, resp.StatusCode, b)
		}
		if !bytes.Contains(b, []byte(`"model":"coder"`)) {
			t.Errorf("request %d answered without the alias asked for: %s", i, b)
		}
	}
	if small.served.Load() != 6 {
		t.Errorf("fallback served %d of 6", small.served.Load())
	}
	for _, r := range small.stub.Requests() {
		if r.Path == "/v1/chat/completions" && !bytes.Contains(r.Body, []byte(`"model":"small"`)) {
			t.Errorf("fallback backend got model other than its own: %s", r.Body)
		}
	}
	st := p.bal.Snapshot()
	if st[0].State != "cooling" || st[1].State != "cooling" || st[2].State != "healthy" {
		t.Errorf("states %s %s %s, want cooling cooling healthy", st[0].State, st[1].State, st[2].State)
	}
}

// TestPoolFailoverUnderLoad: 32 clients stream through a pool of 3; one
// backend is killed mid-run. No request that had not reached it fails; the
// streams on it end with a clean error event; it gets no request while
// cooling; restarted, the first probe after the restart that gets an
// answer brings it back, and its sessions return to it.
//
// Under load the probes' timing is not the test's to assert: a probe may
// start late, or outlast its own limit (health_check_interval) and fail.
// So the test records each probe of the killed backend and asserts on
// them, not on a wall-clock bound (it had "back within the interval plus
// 200 ms", which failed at load ~20).
func TestPoolFailoverUnderLoad(t *testing.T) {
	backends := threeBackends(t, stub.Options{EventDelay: 20 * time.Millisecond, Events: 6})
	const interval = 300 * time.Millisecond
	const victim = 0
	type probe struct {
		start time.Time
		err   error
	}
	var (
		probesMu sync.Mutex
		probes   []probe // of the victim
	)
	probeVictim := func(ctx context.Context, r config.Route) error {
		start := time.Now()
		err := balance.ProbeModels(ctx, r)
		if r.APIBase == backends[victim].url() {
			probesMu.Lock()
			probes = append(probes, probe{start, err})
			probesMu.Unlock()
		}
		return err
	}
	p := newPoolProxy(t, backends, []float64{1, 1, 1}, fmt.Sprintf("router_settings: {health_check_interval: %g, cooldown_time: 60}\n", interval.Seconds()), balance.Options{Probe: probeVictim})
	const clients = 32
	session := func(c int) string { return fmt.Sprintf("client-%02d-session", c) }
	// Each session's home, asked one at a time (no load to move it).
	home := func(round string) []int {
		out := make([]int, clients)
		for c := range clients {
			text := fmt.Sprintf("%s c%d", round, c)
			if resp, b, err := p.post("/v1/messages", session(c), coderBody(text, false)); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s: %v %s", text, err, b)
			}
			out[c] = p.servedBy()(text)
		}
		return out
	}
	before := home("before")
	onVictim := 0
	for _, h := range before {
		if h == victim {
			onVictim++
		}
	}
	if onVictim == 0 {
		t.Fatal("no session lives on the backend to kill: pick other session names")
	}

	type result struct {
		text   string
		status int
		body   []byte
		err    error
	}
	var (
		mu      sync.Mutex
		results []result
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				text := fmt.Sprintf("load c%d n%d", c, n)
				resp, b, err := p.post("/v1/messages", session(c), coderBody(text, true))
				r := result{text: text, body: b, err: err}
				if resp != nil {
					r.status = resp.StatusCode
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		})
	}
	time.Sleep(400 * time.Millisecond)
	backends[victim].kill()
	killedAt := time.Now()
	waitUntil(t, 10*time.Second, "the killed backend cooling", func() bool { return p.bal.Snapshot()[victim].State != "healthy" })
	cooling := p.bal.Snapshot()[victim].Requests
	time.Sleep(500 * time.Millisecond)
	if got := p.bal.Snapshot()[victim].Requests; got != cooling {
		t.Errorf("the cooling backend was sent %d requests", got-cooling)
	}
	backends[victim].restart()
	restartedAt := time.Now()
	waitUntil(t, 100*interval, "the restarted backend healthy", func() bool { return p.bal.Snapshot()[victim].State == "healthy" })
	back := time.Since(restartedAt)
	// The probes that started after the restart: each one before the
	// first that got an answer ran out of its time; that one succeeded.
	probesMu.Lock()
	var sinceRestart []probe
	for _, pr := range probes {
		if pr.start.After(restartedAt) {
			sinceRestart = append(sinceRestart, pr)
		}
	}
	probesMu.Unlock()
	for i, pr := range sinceRestart {
		if pr.err == nil {
			break
		}
		if !errors.Is(pr.err, context.DeadlineExceeded) {
			t.Errorf("probe %d after the restart failed with %v, want the first answered probe to bring the backend back", i, pr.err)
		}
		if i == len(sinceRestart)-1 {
			t.Errorf("no probe after the restart succeeded, yet the backend is healthy: %v", sinceRestart)
		}
	}
	if len(sinceRestart) == 0 {
		t.Error("the backend came back without a probe after its restart")
	}
	// Probes come every health_check_interval: the (lower) median gap between two
	// probes of the killed backend (a refused connection answers at once)
	// is the interval, whatever a few ticks delayed by the load.
	probesMu.Lock()
	var gaps []time.Duration
	for i := 1; i < len(probes); i++ {
		if probes[i-1].start.After(killedAt) {
			gaps = append(gaps, probes[i].start.Sub(probes[i-1].start))
		}
	}
	probesMu.Unlock()
	slices.Sort(gaps)
	if len(gaps) < 2 {
		t.Errorf("%d probes of the killed backend over %s, want one every %s", len(gaps)+1, time.Since(killedAt).Round(time.Millisecond), interval)
	} else if med := gaps[(len(gaps)-1)/2]; med < interval/2 || med > 2*interval {
		t.Errorf("median gap between probes %s, want the health_check_interval %s", med, interval)
	} else {
		t.Logf("%d probes of the killed backend, median gap %s (health_check_interval %s)", len(gaps)+1, med, interval)
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	reached := backends[victim].texts()
	failed := 0
	for _, r := range results {
		if r.err == nil && r.status == 200 && ssecheck.Check(r.body) == nil && bytes.Contains(r.body, []byte("event: message_stop")) {
			continue
		}
		failed++
		switch {
		case !reached[r.text]:
			t.Errorf("%s failed without having reached the killed backend: %v %d %s", r.text, r.err, r.status, r.body)
		case r.err != nil || r.status != 200 || ssecheck.Check(r.body) != nil || !bytes.Contains(r.body, []byte("event: error")):
			t.Errorf("%s, on the killed backend, did not end with a clean error event: %v %d %s", r.text, r.err, r.status, r.body)
		}
	}
	after := home("after")
	returned := 0
	for c := range clients {
		if before[c] == victim && after[c] == victim {
			returned++
		}
		if before[c] != after[c] {
			t.Errorf("session %d: on backend %d before the kill, on %d after the recovery", c, before[c], after[c])
		}
	}
	t.Logf("%d streams; killed backend %d (home of %d sessions), restarted %s later; %d streams on it ended with an error event, none elsewhere; back %s after its restart; %d sessions returned; moves %v, retries %v",
		len(results), victim, onVictim, restartedAt.Sub(killedAt).Round(time.Millisecond), failed, back.Round(time.Millisecond), returned, p.bal.Counters().Moves, p.bal.Counters().Retries)
}

// waitUntil polls cond until it holds; within only ends a hang (a loaded
// -race run may take seconds to get there), it bounds no speed.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPoolBackendsAndReadyz: /backends needs the client key and lists each
// backend with its state and load; /readyz is 200 while a backend is
// healthy, 503 once none is.
func TestPoolBackendsAndReadyz(t *testing.T) {
	backends := threeBackends(t, stub.Options{Events: 1})
	p := newPoolProxy(t, backends, []float64{1, 1, 1}, "router_settings: {allowed_fails: 1, health_check_interval: 0}\n", balance.Options{})
	resp, err := http.Get(p.url + "/backends")
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("/backends without the key: %v %v", err, resp.Status)
	}
	resp.Body.Close()
	if resp, _, err := p.post("/v1/messages", "s", coderBody("hello", false)); err != nil || resp.StatusCode != 200 {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, p.url+"/backends", nil)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Backends []map[string]any `json:"backends"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Backends) != 3 {
		t.Fatalf("/backends: %v %s", err, b)
	}
	served := 0
	for i, be := range doc.Backends {
		if be["name"] != fmt.Sprint("b", i) || be["api_base"] != backends[i].url() || be["model"] != fmt.Sprint("m", i) || be["state"] != "healthy" {
			t.Errorf("backend %d: %v", i, be)
		}
		for _, k := range []string{"aliases", "in_flight", "queued", "consecutive_failures"} {
			if _, ok := be[k]; !ok {
				t.Errorf("backend %d lacks %s: %v", i, k, be)
			}
		}
		if _, ok := be["last_request"]; ok {
			served++
			if _, ok := be["last_success"]; !ok {
				t.Errorf("backend %d served without a last_success: %v", i, be)
			}
		}
	}
	if served != 1 {
		t.Errorf("%d backends show a last request, want 1: %s", served, b)
	}
	if bytes.Contains(b, []byte(`"k"`)) || bytes.Contains(b, []byte(clientKey)) {
		t.Errorf("/backends shows a key: %s", b)
	}
	ready := func() int {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := ready(); got != 200 {
		t.Errorf("/readyz %d with 3 healthy backends", got)
	}
	for i, be := range backends {
		be.kill()
		p.post("/v1/chat/completions", "", coderBody("down", false))
		want := 200
		if i == 2 {
			want = 503
		}
		if got := ready(); got != want {
			t.Errorf("/readyz %d with %d backends down, want %d", got, i+1, want)
		}
	}
}
