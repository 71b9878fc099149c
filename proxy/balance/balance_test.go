package balance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
)

// poolConfig is a config of one pool, "coder", with a backend per weight,
// and extra YAML appended (router_settings, more entries).
func poolConfig(t testing.TB, weights []float64, params, extra string) *config.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("model_list:\n")
	for i, w := range weights {
		fmt.Fprintf(&b, "  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: 'http://b%d:8000/v1', api_key: k, weight: %v%s}\n", i, w, params)
	}
	b.WriteString(extra)
	cfg, err := config.Parse("c.yaml", []byte(b.String()), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func index(bl *Balancer, b *Backend) int {
	for i, x := range bl.backends {
		if x == b {
			return i
		}
	}
	return -1
}

func acquire(t *testing.T, bl *Balancer, r Request) *Lease {
	t.Helper()
	l, err := bl.Acquire(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serveSession runs one request of session key to pool "coder" that ends
// with res (and detail), and returns the index of its backend.
func serveSession(t *testing.T, bl *Balancer, key string, res Result, detail string) int {
	t.Helper()
	l := acquire(t, bl, Request{Alias: "coder", Session: key})
	l.Done(res, detail)
	return index(bl, l.Backend)
}

func TestSimpleShuffleFollowsWeights(t *testing.T) {
	weights := []float64{1, 2, 3}
	bl := New(poolConfig(t, weights, "", "router_settings: {routing_strategy: simple-shuffle}\n"), Options{Rand: rand.New(rand.NewPCG(1, 2))})
	counts := make([]int, 3)
	const n = 3000
	for i := range n {
		counts[serveSession(t, bl, fmt.Sprint("s", i%7), Succeeded, "")]++ // sessions do not matter here
	}
	for i, w := range weights {
		want := n * w / 6
		if d := float64(counts[i]) - want; d > want/10 || d < -want/10 {
			t.Errorf("backend %d (weight %v): %d requests, want %.0f ±10 %%", i, w, counts[i], want)
		}
	}
	t.Logf("weights 1:2:3 over %d requests: %v", n, counts)
}

func TestAffinityKeepsSessionsAndSpreadsThem(t *testing.T) {
	bl := New(poolConfig(t, []float64{1, 1, 1}, "", ""), Options{})
	counts := make([]int, 3)
	home := map[string]*Backend{}
	for turn := range 6 {
		for s := range 500 {
			key := fmt.Sprintf("%08x-session", s*7919)
			l := acquire(t, bl, Request{Alias: "coder", Session: key})
			if turn == 0 {
				home[key] = l.Backend
				counts[index(bl, l.Backend)]++
			} else if home[key] != l.Backend {
				t.Fatalf("session %s moved from %s to %s while all were healthy", key, home[key].Name, l.Backend.Name)
			}
			l.Done(Succeeded, "")
		}
	}
	for i, c := range counts {
		if c < 133 || c > 200 {
			t.Errorf("backend %d has %d of 500 sessions, want 167 ±20 %%", i, c)
		}
	}
	if m := bl.Counters().Moves; len(m) != 0 {
		t.Errorf("moves %v, want none", m)
	}
	t.Logf("500 sessions over 3 backends: %v", counts)
}

func TestAffinityWeighted(t *testing.T) {
	bl := New(poolConfig(t, []float64{1, 3}, "", ""), Options{})
	counts := make([]int, 2)
	for s := range 2000 {
		counts[serveSession(t, bl, fmt.Sprint("w", s), Succeeded, "")]++
	}
	if counts[1] < 1350 || counts[1] > 1650 {
		t.Errorf("weights 1:3 gave sessions %v, want about 500:1500", counts)
	}
}

// TestHotSessionStaysHomeUntilFull: 64 streams held open at once, most
// of them of two hot sessions, on backends of 4 slots each
// (max_parallel_requests): a session stays at home until home's slots are
// taken, spills to the next of its order, and once every backend is full
// a hot one is relieved: none carries more than the least loaded one and
// Slack, the new request counted.
func TestHotSessionStaysHomeUntilFull(t *testing.T) {
	bl := New(poolConfig(t, []float64{1, 1, 1}, ", max_parallel_requests: 4", "router_settings: {queue_timeout: 5}\n"), Options{})
	// Below its slots, a session's requests all stay at home.
	var first []*Lease
	for range 4 {
		first = append(first, acquire(t, bl, Request{Alias: "coder", Session: "hot-1"}))
	}
	for _, l := range first[1:] {
		if l.Backend != first[0].Backend {
			t.Fatalf("hot-1 left home %s for %s with %d of 4 slots taken", first[0].Backend.Name, l.Backend.Name, index(bl, l.Backend))
		}
	}
	if m := bl.Counters().Moves; len(m) != 0 {
		t.Fatalf("moves %v below home's slots, want none", m)
	}
	// The fifth goes to the next of its order, and so on.
	fifth := acquire(t, bl, Request{Alias: "coder", Session: "hot-1"})
	if fifth.Backend == first[0].Backend {
		t.Fatal("the fifth request stayed at a full home")
	}
	if bl.Counters().Moves[MoveHomeFull] != 1 {
		t.Errorf("moves %v, want one home_full", bl.Counters().Moves)
	}
	leases := append(first, fifth)
	for len(leases) < 12 {
		leases = append(leases, acquire(t, bl, Request{Alias: "coder", Session: fmt.Sprint("s", len(leases))}))
	}
	// All 12 slots taken: the next requests queue, spread by Slack.
	got := make(chan *Lease, 12)
	for i := range 12 {
		go func() {
			l, err := bl.Acquire(context.Background(), Request{Alias: "coder", Session: []string{"hot-1", "hot-2"}[i%2]})
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		queued := 0
		for _, st := range bl.Snapshot() {
			queued += st.Queued
		}
		if queued == 12 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 12 queued", queued)
		}
		time.Sleep(time.Millisecond)
	}
	var per []int
	least, most := 100, 0
	for _, st := range bl.Snapshot() {
		per = append(per, st.InFlight+st.Queued)
		least, most = min(least, st.InFlight+st.Queued), max(most, st.InFlight+st.Queued)
	}
	if most > least+Slack+1 {
		t.Errorf("loads %v: the hottest above the least loaded + %d + 1", per, Slack)
	}
	for _, l := range leases {
		l.Done(Succeeded, "")
	}
	for range 12 {
		(<-got).Done(Succeeded, "")
	}
	t.Logf("12 queued behind 12 slots: in flight + queued per backend %v, moves %v", per, bl.Counters().Moves)
}

func TestMaxParallelQueuesThenTimesOut(t *testing.T) {
	cfg := poolConfig(t, []float64{1}, ", max_parallel_requests: 2", "router_settings: {queue_timeout: 0.2}\n")
	bl := New(cfg, Options{})
	a := acquire(t, bl, Request{Alias: "coder"})
	b := acquire(t, bl, Request{Alias: "coder"})
	got := make(chan *Lease)
	go func() {
		l, err := bl.Acquire(context.Background(), Request{Alias: "coder"})
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(20 * time.Millisecond)
	if st := bl.Snapshot()[0]; st.InFlight != 2 || st.Queued != 1 {
		t.Errorf("snapshot %+v, want 2 in flight and 1 queued", st)
	}
	a.Done(Succeeded, "")
	c := <-got
	if c.Waited <= 0 {
		t.Error("the queued request reports no wait")
	}
	start := time.Now()
	_, err := bl.Acquire(context.Background(), Request{Alias: "coder"})
	var qt *QueueTimeoutError
	if !errors.As(err, &qt) || time.Since(start) < 200*time.Millisecond {
		t.Fatalf("err %v after %s, want a QueueTimeoutError after 200 ms", err, time.Since(start))
	}
	b.Done(Succeeded, "")
	c.Done(Succeeded, "")
	if st := bl.Snapshot()[0]; st.InFlight != 0 || st.Queued != 0 {
		t.Errorf("snapshot %+v, want all slots free", st)
	}
}

func TestFailuresCoolAndProbeBringsBack(t *testing.T) {
	var probeOK sync.Map
	bl := New(poolConfig(t, []float64{1, 1}, "", "router_settings: {allowed_fails: 2, cooldown_time: 60}\n"), Options{
		Probe: func(_ context.Context, r config.Route) error {
			if _, ok := probeOK.Load(r.APIBase); ok {
				return nil
			}
			return errors.New("connection refused")
		},
	})
	// Find a session at backend 0, and fail it twice.
	var key string
	for i := 0; ; i++ {
		key = fmt.Sprint("k", i)
		if serveSession(t, bl, key, Succeeded, "") == 0 {
			break
		}
	}
	for range 2 {
		if serveSession(t, bl, key, Failed, "backend unreachable") != 0 {
			t.Fatal("session left its backend before it cooled")
		}
	}
	st := bl.Snapshot()[0]
	if st.State != "cooling" || st.CoolingUntil == nil || st.LastError != "backend unreachable" {
		t.Fatalf("after 2 failures: %+v", st)
	}
	if !bl.Ready() {
		t.Error("not ready with one healthy backend")
	}
	for range 20 {
		if serveSession(t, bl, key, Succeeded, "") != 1 {
			t.Fatal("a cooling backend got a request")
		}
	}
	if m := bl.Counters().Moves; m[MoveHomeDown] != 20 || m[MoveHomeFull] != 0 {
		t.Errorf("moves %v, want home_down 20 (each request served away from home)", m)
	}
	bl.ProbeNow(context.Background())
	if st := bl.Snapshot()[0]; st.State != "cooling" || !strings.Contains(st.LastError, "probe") {
		t.Fatalf("after a failed probe: %+v", st)
	}
	probeOK.Store("http://b0:8000/v1", true)
	bl.ProbeNow(context.Background())
	if st := bl.Snapshot()[0]; st.State != "healthy" {
		t.Fatalf("after a good probe: %+v", st)
	}
	if serveSession(t, bl, key, Succeeded, "") != 0 {
		t.Error("the session did not return to its backend")
	}
	if m := bl.Counters().Moves; m[MoveHomeDown] != 20 {
		t.Errorf("moves %v, want still home_down 20: a request at home is no move", m)
	}
}

func TestRetryGoesElsewhereThenFallbackThenPanic(t *testing.T) {
	cfg := poolConfig(t, []float64{1, 1}, "", `  - model_name: small
    proxy_params: {model: vendorb/s, api_base: 'http://laptop:8080/v1', api_key: k}
router_settings:
  allowed_fails: 1
  health_check_interval: 0
  cooldown_time: 0.05
  fallbacks:
    - coder: [small]
`)
	bl := New(cfg, Options{})
	first := acquire(t, bl, Request{Alias: "coder", Session: "s"})
	first.Done(Failed, "refused")
	second := acquire(t, bl, Request{Alias: "coder", Session: "s", Tried: []*Backend{first.Backend}, Retry: "unreachable"})
	if second.Backend == first.Backend || second.Fallback {
		t.Fatalf("retry went to %s, want the other backend of the pool", second.Backend.Name)
	}
	second.Done(Failed, "refused")
	third := acquire(t, bl, Request{Alias: "coder", Session: "s"})
	if !third.Fallback || third.Route.Alias != "small" || third.Route.BackendModel != "s" {
		t.Fatalf("with the pool down: %+v, want the fallback pool", third.Route)
	}
	third.Done(Failed, "refused")
	// Every backend is out: the pool's own backends still answer.
	fourth := acquire(t, bl, Request{Alias: "coder", Session: "s"})
	if fourth.Fallback {
		t.Error("with everything down, want the pool's own backend")
	}
	fourth.Done(Abandoned, "")
	if bl.Ready() {
		t.Error("ready with every backend cooling")
	}
	if c := bl.Counters().Retries["unreachable"]; c != 1 {
		t.Errorf("retries %v", bl.Counters().Retries)
	}
	time.Sleep(60 * time.Millisecond) // cooldown over, probes off: back
	if !bl.Ready() {
		t.Error("not back after the cooldown with probes off")
	}
}

func TestSharedBackendAcrossAliases(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte(`model_list:
  - model_name: a
    proxy_params: {model: vendorb/m, api_base: 'http://one/v1', api_key: k, max_parallel_requests: 3}
  - model_name: b
    proxy_params: {model: vendorb/m, api_base: 'http://one/v1', api_key: k, name: box, max_parallel_requests: 1}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	bl := New(cfg, Options{})
	st := bl.Snapshot()
	if len(st) != 1 || st[0].Name != "box" || strings.Join(st[0].Aliases, ",") != "a,b" || st[0].MaxParallelRequests != 1 {
		t.Fatalf("snapshot %+v, want one backend named box for a and b with 1 slot", st)
	}
}

// TestLateSuccessKeepsABackendOut: a request that began before its
// backend failed, and ends well after the failures took it out, does not
// bring it back (seen under load in TestPoolFailoverUnderLoad: the
// cooling backend was sent requests).
func TestLateSuccessKeepsABackendOut(t *testing.T) {
	bl := New(poolConfig(t, []float64{1}, "", "router_settings: {allowed_fails: 2, cooldown_time: 60}\n"), Options{
		Probe: func(context.Context, config.Route) error { return errors.New("connection refused") },
	})
	early := acquire(t, bl, Request{Alias: "coder"})
	for range 2 {
		acquire(t, bl, Request{Alias: "coder"}).Done(Failed, "backend unreachable")
	}
	early.Done(Succeeded, "")
	if st := bl.Snapshot()[0]; st.State != "cooling" {
		t.Fatalf("after a late success: %s, want cooling", st.State)
	}
	// A request sent while it is out (the pool has no other backend) and
	// answered does bring it back.
	acquire(t, bl, Request{Alias: "coder"}).Done(Succeeded, "")
	if st := bl.Snapshot()[0]; st.State != "healthy" {
		t.Fatalf("after a success while out: %s, want healthy", st.State)
	}
}

// TestSessionAcrossTwoAliasesMovesNothing: a coding client sends one
// session id to its main and its small model, two aliases on different
// backends; going back and forth between them is no move.
func TestSessionAcrossTwoAliasesMovesNothing(t *testing.T) {
	cfg, err := config.Parse("c.yaml", []byte(`model_list:
  - model_name: main
    proxy_params: {model: vendorb/m, api_base: 'http://one/v1', api_key: k}
  - model_name: small
    proxy_params: {model: vendorb/m, api_base: 'http://two/v1', api_key: k}
  - model_name: small
    proxy_params: {model: vendorb/m, api_base: 'http://three/v1', api_key: k}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var hooked int
	bl := New(cfg, Options{Hooks: Hooks{Moved: func(string, *Backend, *Backend, MoveReason) { hooked++ }}})
	for range 10 {
		for _, alias := range []string{"main", "small"} {
			l := acquire(t, bl, Request{Alias: alias, Session: "s1"})
			if want := "one"; alias == "main" && !strings.Contains(l.Backend.APIBase, want) {
				t.Fatalf("main went to %s", l.Backend.APIBase)
			}
			l.Done(Succeeded, "")
		}
	}
	if m := bl.Counters().Moves; len(m) != 0 || hooked != 0 {
		t.Errorf("moves %v (hook called %d times), want none", m, hooked)
	}
}

// BenchmarkAcquire is the choice a request pays for its pool: pick a
// backend for a session and take and give back its slot.
func BenchmarkAcquire(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprint("backends=", n), func(b *testing.B) {
			weights := make([]float64, n)
			for i := range weights {
				weights[i] = 1
			}
			bl := New(poolConfig(b, weights, "", ""), Options{})
			ctx := context.Background()
			r := Request{Alias: "coder", Session: "179b29e7-4a3f-4eb6-a37f-0c8eb28d1106"}
			b.ReportAllocs()
			for b.Loop() {
				l, err := bl.Acquire(ctx, r)
				if err != nil {
					b.Fatal(err)
				}
				l.Done(Succeeded, "")
			}
		})
	}
}

// TestSessionOnOneBackendPool: in a pool of one backend a session is
// served by it, full or not, and never counted as moved.
func TestSessionOnOneBackendPool(t *testing.T) {
	bl := New(poolConfig(t, []float64{1}, ", max_parallel_requests: 2", ""), Options{})
	var held []*Lease
	for i := range 2 {
		l := acquire(t, bl, Request{Alias: "coder", Session: fmt.Sprint("s", i)})
		if l.Backend.APIBase != "http://b0:8000/v1" {
			t.Fatalf("session s%d went to %s", i, l.Backend.APIBase)
		}
		held = append(held, l)
	}
	for _, l := range held {
		l.Done(Succeeded, "")
	}
	if m := bl.Counters().Moves; len(m) != 0 {
		t.Errorf("moves %v in a pool of one backend, want none", m)
	}
}
