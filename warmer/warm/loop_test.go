package warm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// byModel groups the stub's recorded requests by the model they name.
func byModel(t *testing.T, reqs []stub.Request) map[string][]stub.Request {
	t.Helper()
	out := map[string][]stub.Request{}
	for _, r := range reqs {
		var b warmBody
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatalf("body %s: %v", r.Body, err)
		}
		out[b.Model] = append(out[b.Model], r)
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b stub.Request) int { return a.Time.Compare(b.Time) })
	}
	return out
}

// startLoop runs l in the background; the returned stop cancels it and
// waits for Run to return.
func startLoop(t *testing.T, l *Loop) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return within 5s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestLoopWarmsEveryInterval(t *testing.T) {
	t.Parallel()
	const (
		interval = 200 * time.Millisecond
		n        = 8
	)
	s, base := startStub(t, stub.Options{})
	w, _ := newWarmer(5 * time.Second)
	l := &Loop{Warmer: w, Interval: interval, Targets: []Target{
		{Model: "model-a", APIBase: base, APIKey: testKey},
		{Model: "model-b", APIBase: base, APIKey: testKey},
	}}
	start := time.Now()
	stop := startLoop(t, l)
	waitFor(t, 15*time.Second, "8 requests per model", func() bool {
		m := byModel(t, s.Requests())
		return len(m["model-a"]) >= n && len(m["model-b"]) >= n
	})
	stop()
	m := byModel(t, s.Requests())
	if len(m) != 2 {
		t.Fatalf("models warmed = %v, want model-a and model-b", keys(m))
	}
	// Ticks fall on a fixed grid from the start: request k of a model can
	// arrive late (a loaded machine), never before start + k×interval.
	for model, rs := range m {
		for k, r := range rs {
			checkWarmRequest(t, r, model, testKey)
			if due := start.Add(time.Duration(k) * interval); r.Time.Before(due) {
				t.Errorf("%s: request %d arrived %s after start, before its tick at %s: more than one per interval",
					model, k, r.Time.Sub(start), due.Sub(start))
			}
		}
		if late := rs[n-1].Time.Sub(start.Add((n - 1) * interval)); late > 4*interval {
			t.Errorf("%s: request %d arrived %s after its tick: the interval is longer than %s", model, n-1, late, interval)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestLoopNoOverlapWhenBackendSlowerThanInterval(t *testing.T) {
	t.Parallel()
	const (
		interval = 100 * time.Millisecond
		delay    = 350 * time.Millisecond
		window   = 1500 * time.Millisecond
	)
	s, base := startStub(t, stub.Options{FirstTokenDelay: delay})
	w, logs := newWarmer(5 * time.Second)
	l := &Loop{Warmer: w, Interval: interval, Targets: []Target{{Model: "slow-model", APIBase: base, APIKey: testKey}}}
	stop := startLoop(t, l)
	time.Sleep(window)
	stop()
	// The last request was cancelled by stop; wait for the stub to record its end.
	waitFor(t, 5*time.Second, "every request to end", func() bool {
		return !slices.ContainsFunc(s.Requests(), func(r stub.Request) bool { return r.Done.IsZero() })
	})
	rs := byModel(t, s.Requests())["slow-model"]
	// One request at a time, each at least `delay` long: at most window/delay+1.
	if maxN := int(window/delay) + 1; len(rs) < 2 || len(rs) > maxN {
		t.Fatalf("%d requests in %s with a %s backend, want 2..%d", len(rs), window, delay, maxN)
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].Time.Before(rs[i-1].Done) {
			t.Errorf("request %d started at %s, before request %d ended at %s: overlap",
				i, rs[i].Time.Format(time.StampMilli), i-1, rs[i-1].Done.Format(time.StampMilli))
		}
	}
	if !strings.Contains(logs.String(), "warm skipped: previous request still running") || !strings.Contains(logs.String(), "model=slow-model") {
		t.Errorf("no skip was logged:\n%s", logs)
	}
}

func TestLoopStopCancelsInFlight(t *testing.T) {
	t.Parallel()
	s, base := startStub(t, stub.Options{FirstTokenDelay: time.Minute})
	w, _ := newWarmer(time.Minute)
	l := &Loop{Warmer: w, Interval: time.Hour, Targets: []Target{{Model: "m", APIBase: base, APIKey: testKey}}}
	stop := startLoop(t, l)
	// With an hour's interval, this request is the one sent at start.
	waitFor(t, 5*time.Second, "the request sent at start", func() bool { return len(s.Requests()) == 1 })
	start := time.Now()
	stop()
	// The request in flight would last a minute: stop returning well
	// before that (and the stub seeing the cancellation) is the
	// cancellation; 20 s leaves a loaded machine room.
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("stopping took %s with a request in flight, want it cancelled, not waited for", el)
	}
	waitFor(t, 5*time.Second, "the stub to see the cancellation", func() bool { return s.Requests()[0].Cancelled })
}

func TestHealthFollowsTicksNotBackend(t *testing.T) {
	t.Parallel()
	// A backend that is down: health must not depend on it.
	base := startHandler(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	const interval = time.Hour // no tick but the first during the test
	w, _ := newWarmer(5 * time.Second)
	l := &Loop{Warmer: w, Interval: interval, Now: clock, Targets: []Target{{Model: "m", APIBase: base, APIKey: testKey}}}
	get := func() (int, Health) {
		rec := httptest.NewRecorder()
		l.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		var h Health
		if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
			t.Fatalf("health body %q: %v", rec.Body, err)
		}
		return rec.Code, h
	}

	if code, h := get(); code != 503 || h.OK || !strings.Contains(h.Reason, "not started") {
		t.Errorf("before Run: %d %+v, want 503 not started", code, h)
	}
	stop := startLoop(t, l)
	waitFor(t, 5*time.Second, "the first result", func() bool {
		_, h := get()
		return len(h.Targets) == 1 && h.Targets[0].LastStatus == 503
	})
	if code, h := get(); code != 200 || !h.OK || h.Ticks != 1 || h.Targets[0].LastError == "" {
		t.Errorf("running, backend failing: %d %+v, want 200 with the backend's error listed", code, h)
	}
	advance(2*interval + HealthGrace)
	if code, _ := get(); code != 200 {
		t.Errorf("tick exactly at the limit: %d, want 200", code)
	}
	advance(time.Millisecond)
	if code, h := get(); code != 503 || !strings.Contains(h.Reason, "late") {
		t.Errorf("tick overdue: %d %+v, want 503 late", code, h)
	}
	stop()
	advance(-(2*interval + HealthGrace + time.Millisecond))
	if code, h := get(); code != 503 || !strings.Contains(h.Reason, "stopped") {
		t.Errorf("after stop: %d %+v, want 503 stopped", code, h)
	}
}

// TestLoopSkipsBackendsTheProxyServes: with Served set, a backend that
// /backends shows serving (in flight, or a request within the interval)
// gets no warm-up; the others do; the proxy's key is sent.
func TestLoopSkipsBackendsTheProxyServes(t *testing.T) {
	t.Parallel()
	s, base := startStub(t, stub.Options{})
	var auth sync.Map
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"), true)
		now := time.Now().UTC().Format(time.RFC3339Nano)
		old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
		w.Write([]byte(`{"backends":[
			{"api_base":"` + base + `","model":"live","in_flight":0,"last_request":"` + now + `"},
			{"api_base":"` + base + `","model":"streaming","in_flight":1,"last_request":"` + old + `"},
			{"api_base":"` + base + `","model":"idle","in_flight":0,"last_request":"` + old + `"}]}`))
	}))
	t.Cleanup(proxy.Close)
	w, _ := newWarmer(5 * time.Second)
	l := &Loop{Warmer: w, Interval: 100 * time.Millisecond, Served: &Served{URL: proxy.URL, Key: "sk-proxy-key"}, Targets: []Target{
		{Model: "live", APIBase: base, APIKey: testKey},
		{Model: "streaming", APIBase: base, APIKey: testKey},
		{Model: "idle", APIBase: base, APIKey: testKey},
		{Model: "unknown-to-proxy", APIBase: base, APIKey: testKey},
	}}
	stop := startLoop(t, l)
	waitFor(t, 10*time.Second, "3 warm-ups of the idle backend", func() bool { return len(byModel(t, s.Requests())["idle"]) >= 3 })
	stop()
	m := byModel(t, s.Requests())
	if len(m["live"]) != 0 || len(m["streaming"]) != 0 {
		t.Errorf("warmed backends the proxy serves: live %d, streaming %d", len(m["live"]), len(m["streaming"]))
	}
	if len(m["unknown-to-proxy"]) == 0 {
		t.Error("a backend the proxy does not list was not warmed")
	}
	if _, ok := auth.Load("Bearer sk-proxy-key"); !ok {
		t.Error("/backends was read without the proxy's key")
	}
}
