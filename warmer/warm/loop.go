package warm

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// HealthGrace is how late a tick may be, beyond one missed interval,
// before the loop reports itself unhealthy.
const HealthGrace = 5 * time.Second

// Loop is the keepalive: at start and then every Interval it sends one warm
// request to each target whose previous request has finished. A target
// whose request is still running (a cold or slow backend) skips the tick,
// so requests to one model never overlap or pile up. With Served set, a
// target the proxy is serving, or served within the last Interval, skips
// the tick too: it is warm, and a warm-up must not push a live session out
// of its cache. A target on Ollama is warmed sooner when its keep-alive
// runs out before the next tick: after each warm request the loop reads
// the model's expires_at from Ollama's GET /api/ps and warms it again with
// a quarter of the keep-alive left (keepalive.go). Loop is also the
// http.Handler of the health endpoint.
type Loop struct {
	Warmer   *Warmer
	Targets  []Target
	Interval time.Duration
	Now      func() time.Time // nil: time.Now; tests move it to check staleness
	// After is how the loop waits: nil is time.After; a test's fake
	// clock moves its Now instead.
	After  func(time.Duration) <-chan time.Time
	Served *Served      // nil: warm every target every tick
	Report func(Result) // nil: none; called with each warm request's result (the metrics)

	mu       sync.Mutex
	running  bool
	lastTick time.Time
	ticks    int
	state    []targetState
	wake     chan struct{} // a warm request ended: its target's next warm may be sooner
}

type targetState struct {
	busy    bool
	since   time.Time // start of the request in flight
	last    *Result
	lastOK  time.Time
	skipped int
	// next is when the target is warmed next: a tick's Interval later, or
	// sooner when its server says its keep-alive runs out before.
	next time.Time
	// notOllama: GET /api/ps is not Ollama's there; it is not asked again.
	notOllama bool
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Run warms until ctx ends, then cancels the requests in flight, waits for
// them and returns.
func (l *Loop) Run(ctx context.Context) {
	l.mu.Lock()
	l.state = make([]targetState, len(l.Targets))
	l.running = true
	l.wake = make(chan struct{}, 1)
	l.mu.Unlock()

	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		l.mu.Lock()
		l.running = false
		l.mu.Unlock()
	}()
	after := l.After
	if after == nil {
		after = time.After
	}
	l.tick(ctx, &wg)
	for {
		select {
		case <-ctx.Done():
			return
		case <-after(l.untilNext()):
		case <-l.wake:
		}
		l.tick(ctx, &wg)
	}
}

// due says whether a target is due now (tick has something to do).
func (l *Loop) due() bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastTick.IsZero() || !now.Before(l.lastTick.Add(l.Interval)) {
		return true
	}
	for _, st := range l.state {
		if !st.next.IsZero() && !now.Before(st.next) {
			return true
		}
	}
	return false
}

// untilNext is how long until a target is due: at most Interval (the
// health endpoint wants a tick each interval), never a busy loop.
func (l *Loop) untilNext() time.Duration {
	const least = 100 * time.Millisecond
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	wait := l.Interval
	if !l.lastTick.IsZero() {
		wait = l.lastTick.Add(l.Interval).Sub(now)
	}
	for _, st := range l.state {
		if !st.busy && !st.next.IsZero() {
			wait = min(wait, st.next.Sub(now))
		}
	}
	return max(wait, least)
}

func (l *Loop) tick(ctx context.Context, wg *sync.WaitGroup) {
	var busy map[string]Busy
	if l.Served != nil && l.due() {
		var err error
		if busy, err = l.Served.Backends(ctx); err != nil {
			l.Warmer.log().Warn("cannot read the proxy's /backends: warming every backend this round", slog.String("error", err.Error()))
		}
	}
	now := l.now()
	type skip struct {
		t       Target
		running time.Duration
		skipped int
	}
	var skips []skip
	l.mu.Lock()
	// A round, each Interval, is what the health endpoint counts.
	if l.lastTick.IsZero() || !now.Before(l.lastTick.Add(l.Interval)) {
		l.lastTick = now
		l.ticks++
	}
	for i, t := range l.Targets {
		st := &l.state[i]
		if !st.next.IsZero() && now.Before(st.next) {
			continue // warmed early for its keep-alive, or not due yet
		}
		st.next = now.Add(l.Interval)
		if b, ok := busy[t.key()]; ok && (b.InFlight > 0 || now.Sub(b.LastRequest) < l.Interval) {
			l.Warmer.log().Info("warm skipped: the proxy served this backend within the interval",
				slog.String("model", t.Model), slog.String("api_base", t.Base()), slog.Int("in_flight", b.InFlight))
			continue
		}
		if st.busy {
			st.skipped++
			skips = append(skips, skip{t, now.Sub(st.since), st.skipped})
			continue
		}
		st.busy, st.since = true, now
		wg.Go(func() { l.warm(ctx, i, t) })
	}
	l.mu.Unlock()
	for _, s := range skips {
		l.Warmer.log().Warn("warm skipped: previous request still running",
			slog.String("model", s.t.Model), slog.String("api_base", s.t.Base()),
			slog.Duration("running_for", s.running.Round(time.Millisecond)), slog.Int("skipped_total", s.skipped))
	}
}

func (l *Loop) warm(ctx context.Context, i int, t Target) {
	res := l.Warmer.Warm(ctx, t)
	if l.Report != nil && (res.OK() || ctx.Err() == nil) {
		l.Report(res)
	}
	l.mu.Lock()
	askPS := res.OK() && !l.state[i].notOllama
	l.mu.Unlock()
	var ka keepAlive
	if askPS {
		ka = l.Warmer.keepAlive(ctx, t)
	}
	l.mu.Lock()
	st := &l.state[i]
	st.busy = false
	st.last = &res
	if res.OK() {
		st.lastOK = res.Start.Add(res.Latency)
	}
	if ka.notOllama {
		st.notOllama = true
	}
	if !ka.expires.IsZero() {
		// Warm again with a quarter of the keep-alive left.
		now := l.now()
		if at := now.Add(ka.expires.Sub(now) * 3 / 4); at.Before(st.next) {
			st.next = at
		}
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	if ctx.Err() != nil && !res.OK() {
		l.Warmer.log().Info("warm request cancelled: stopping", slog.String("model", t.Model), slog.String("api_base", t.Base()))
		return
	}
	l.Warmer.logResult(res)
}

// Health is the loop's state as the health endpoint reports it.
type Health struct {
	OK       bool           `json:"ok"`
	Reason   string         `json:"reason,omitempty"`
	Interval string         `json:"interval"`
	Ticks    int            `json:"ticks"`
	LastTick *time.Time     `json:"last_tick,omitempty"`
	Targets  []TargetHealth `json:"targets"`
}

// TargetHealth is one target's latest result. It does not decide Health.OK:
// a cold backend is what the warmer is there for.
type TargetHealth struct {
	Model       string     `json:"model"`
	APIBase     string     `json:"api_base"`
	InFlight    bool       `json:"in_flight"`
	Skipped     int        `json:"skipped"`
	LastStatus  int        `json:"last_status,omitempty"`
	LastLatency string     `json:"last_latency,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	LastOK      *time.Time `json:"last_ok,omitempty"`
}

// Health reports whether the loop is alive: running, with its last tick no
// more than two intervals plus HealthGrace ago. It does not require the
// backends to answer.
func (l *Loop) Health() Health {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	h := Health{Interval: l.Interval.String(), Ticks: l.ticks}
	if !l.lastTick.IsZero() {
		lt := l.lastTick
		h.LastTick = &lt
	}
	for i, t := range l.Targets {
		th := TargetHealth{Model: t.Model, APIBase: t.Base()}
		if i < len(l.state) {
			st := l.state[i]
			th.InFlight, th.Skipped = st.busy, st.skipped
			if st.last != nil {
				th.LastStatus = st.last.Status
				th.LastLatency = st.last.Latency.Round(time.Millisecond).String()
				if st.last.Err != nil {
					th.LastError = st.last.Err.Error()
				}
			}
			if !st.lastOK.IsZero() {
				ok := st.lastOK
				th.LastOK = &ok
			}
		}
		h.Targets = append(h.Targets, th)
	}
	switch late := now.Sub(l.lastTick); {
	case !l.running && l.ticks == 0:
		h.Reason = "the warm loop has not started"
	case !l.running:
		h.Reason = "the warm loop has stopped"
	case late > 2*l.Interval+HealthGrace:
		h.Reason = "the warm loop is late: last tick " + late.Round(time.Millisecond).String() + " ago, interval " + l.Interval.String()
	default:
		h.OK = true
	}
	return h
}

// ServeHTTP answers the health endpoint: 200 while the loop is alive,
// 503 otherwise, with Health as JSON.
func (l *Loop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := l.Health()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !h.OK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if r.Method == http.MethodHead {
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(h)
}
