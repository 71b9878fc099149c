package balance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/serverload"
)

// fakeLoads is what each server (by api_base) says of its load; a base
// absent exposes nothing.
type fakeLoads struct {
	mu sync.Mutex
	by map[string]serverload.Load
}

func (f *fakeLoads) set(base string, l serverload.Load) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = map[string]serverload.Load{}
	}
	f.by[base] = l
}

func (f *fakeLoads) read(_ context.Context, t serverload.Target) (serverload.Load, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.by[t.APIBase]
	if !ok {
		return serverload.Load{}, serverload.ErrNoLoad
	}
	return l, nil
}

func idle() serverload.Load { return serverload.Load{KVUsage: 0.1, Source: serverload.SourceVLLM} }

// order is a session's rendezvous order over bl's backends, best first.
func order(bl *Balancer, session string) []int {
	cs := make([]candidate, 0, len(bl.backends))
	p := bl.pools["coder"]
	for i := range p.members {
		m := &p.members[i]
		cs = append(cs, candidate{member: m, score: rendezvousScore(hashString(session), m.b.seed, m.weight)})
	}
	sortByScore(cs)
	var out []int
	for _, c := range cs {
		out = append(out, index(bl, c.b))
	}
	return out
}

func sortByScore(cs []candidate) {
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			if byScore(cs[j], cs[i]) < 0 {
				cs[i], cs[j] = cs[j], cs[i]
			}
		}
	}
}

// TestSpillAndReturn: three replicas (balancers of one config) read the
// same servers. A session stays home at low load though home carries
// more than the pool's average; when home's server has a request waiting
// every replica sends it to the next in its order, and back home once
// home has room. Its turns touch two servers; each replica counts the
// request served away (home_full), so their sum is the servers' count.
func TestSpillAndReturn(t *testing.T) {
	loads := &fakeLoads{}
	cfg := poolConfig(t, []float64{1, 1, 1, 1}, "", "")
	var replicas []*Balancer
	for range 3 {
		replicas = append(replicas, New(cfg, Options{ReadLoad: loads.read}))
	}
	const session = "0c8eb28d-4a3f-4eb6-a37f-000000000042"
	ord := order(replicas[0], session)
	base := func(i int) string { return fmt.Sprintf("http://b%d:8000/v1", i) }
	for i := range 4 {
		loads.set(base(i), idle())
	}
	// Home runs 3 requests, the others none: more than the average, not full.
	l := idle()
	l.Running = 3
	loads.set(base(ord[0]), l)
	readAll := func() {
		for _, bl := range replicas {
			bl.ReadLoadNow(context.Background(), nil)
		}
	}
	turn := func(n int) int {
		bl := replicas[n%3] // each turn through another replica, as a Service sends them
		return serveSession(t, bl, session, Succeeded, "")
	}
	readAll()
	var served []int
	for n := range 3 {
		served = append(served, turn(n))
	}
	// Home's server queues a request: full.
	l.Running, l.Waiting = 4, 1
	loads.set(base(ord[0]), l)
	readAll()
	for n := 3; n < 6; n++ {
		served = append(served, turn(n))
	}
	// Room again.
	l.Running, l.Waiting = 2, 0
	loads.set(base(ord[0]), l)
	readAll()
	for n := 6; n < 9; n++ {
		served = append(served, turn(n))
	}
	want := []int{ord[0], ord[0], ord[0], ord[1], ord[1], ord[1], ord[0], ord[0], ord[0]}
	if fmt.Sprint(served) != fmt.Sprint(want) {
		t.Fatalf("turns served by %v, want %v (order %v)", served, want, ord)
	}
	var full, down uint64
	for _, bl := range replicas {
		m := bl.Counters().Moves
		full, down = full+m[MoveHomeFull], down+m[MoveHomeDown]
	}
	if full != 3 || down != 0 {
		t.Errorf("moves summed over the replicas: home_full %d, home_down %d; want 3 and 0 (the 3 requests served away)", full, down)
	}
	// The KV cache nearly full is full too.
	l.KVUsage = 0.96
	loads.set(base(ord[0]), l)
	readAll()
	if got := turn(9); got != ord[1] {
		t.Errorf("with home's KV cache at 0.96 the turn went to %d, want %d", got, ord[1])
	}
	// When the next is full as well, the one after it.
	l2 := idle()
	l2.Waiting = 2
	loads.set(base(ord[1]), l2)
	readAll()
	if got := turn(10); got != ord[2] {
		t.Errorf("with home and the next full the turn went to %d, want %d", got, ord[2])
	}
	st := replicas[0].Snapshot()[ord[0]]
	if st.Load.Source != serverload.SourceVLLM || !st.Load.Full || st.Load.KVCacheUsage == nil || *st.Load.KVCacheUsage != 0.96 || st.Load.ReadAt == nil {
		t.Errorf("/backends of home: %+v", st.Load)
	}
}

// TestHomeDiesMovesOnceAndStays: a session's home fails and is out; every
// turn goes to the next in its order and stays there, whatever the load
// elsewhere (no ping-pong), until home is back; then home again.
func TestHomeDiesMovesOnceAndStays(t *testing.T) {
	var up sync.Map
	cfg := poolConfig(t, []float64{1, 1, 1, 1}, "", "router_settings: {allowed_fails: 1, cooldown_time: 60}\n")
	bl := New(cfg, Options{Probe: func(_ context.Context, r config.Route) error {
		if _, ok := up.Load(r.APIBase); ok {
			return nil
		}
		return errors.New("connection refused")
	}})
	const session = "session-whose-home-dies"
	ord := order(bl, session)
	if got := serveSession(t, bl, session, Succeeded, ""); got != ord[0] {
		t.Fatalf("first turn at %d, want home %d", got, ord[0])
	}
	// Home fails the next turn; its retry goes to the next of the order.
	first := acquire(t, bl, Request{Alias: "coder", Session: session})
	first.Done(Failed, "refused")
	retry := acquire(t, bl, Request{Alias: "coder", Session: session, Tried: []*Backend{first.Backend}, Retry: "unreachable"})
	retry.Done(Succeeded, "")
	if index(bl, retry.Backend) != ord[1] {
		t.Fatalf("the retry went to %d, want %d", index(bl, retry.Backend), ord[1])
	}
	// Other sessions load the pool meanwhile; this one stays put.
	var others []*Lease
	var served []int
	homeless := 0 // other sessions whose home is the dead one
	for n := range 12 {
		if order(bl, fmt.Sprint("other-", n))[0] == ord[0] {
			homeless++
		}
		others = append(others, acquire(t, bl, Request{Alias: "coder", Session: fmt.Sprint("other-", n)}))
		served = append(served, serveSession(t, bl, session, Succeeded, ""))
	}
	for _, i := range served {
		if i != ord[1] {
			t.Fatalf("while home was out the session was served by %v, want %d every time", served, ord[1])
		}
	}
	for _, l := range others {
		l.Done(Succeeded, "")
	}
	if m := bl.Counters().Moves; m[MoveHomeDown] != uint64(13+homeless) || m[MoveHomeFull] != 0 {
		t.Errorf("moves %v, want home_down %d (the retry, 12 turns away from home, %d other sessions of that home)", m, 13+homeless, homeless)
	}
	// A failed probe keeps it out; a good one brings the session home.
	bl.ProbeNow(context.Background())
	if got := serveSession(t, bl, session, Succeeded, ""); got != ord[1] {
		t.Fatalf("after a failed probe: %d, want %d", got, ord[1])
	}
	up.Store(fmt.Sprintf("http://b%d:8000/v1", ord[0]), true)
	bl.ProbeNow(context.Background())
	for range 3 {
		if got := serveSession(t, bl, session, Succeeded, ""); got != ord[0] {
			t.Fatalf("home back: served by %d, want home %d", got, ord[0])
		}
	}
}

// TestLoadSourceFallsBackToInFlight: a server that exposes no load (or
// cannot be read) is judged by this proxy's own requests in flight, and
// /backends says so; a reading that comes back is used again.
func TestLoadSourceFallsBackToInFlight(t *testing.T) {
	loads := &fakeLoads{}
	bl := New(poolConfig(t, []float64{1, 1}, ", max_parallel_requests: 2", ""), Options{ReadLoad: loads.read})
	bl.ReadLoadNow(context.Background(), nil)
	held := acquire(t, bl, Request{Alias: "coder"})
	st := bl.Snapshot()[index(bl, held.Backend)].Load
	if st.Source != serverload.SourceProxy || st.Running != 1 || st.Load != 1 || st.Error != "the server exposes no load" || st.ReadAt != nil {
		t.Errorf("a server that exposes nothing: %+v", st)
	}
	// Its server says 2 running (another replica's too): full at 2 slots.
	l := idle()
	l.Running = 2
	loads.set(held.Backend.APIBase, l)
	bl.ReadLoadNow(context.Background(), nil)
	st = bl.Snapshot()[index(bl, held.Backend)].Load
	if st.Source != serverload.SourceVLLM || st.Running != 2 || st.Load != 2 || !st.Full {
		t.Errorf("read from its server: %+v", st)
	}
	// A request sent after the reading counts on top of it.
	other := acquire(t, bl, Request{Alias: "coder"})
	if other.Backend == held.Backend {
		t.Error("least-busy sent a request to the backend its server says is full")
	}
	held.Done(Succeeded, "")
	other.Done(Succeeded, "")
}

// TestAffinityUnderRace: requests, readings and snapshots at once (run
// with -race).
func TestAffinityUnderRace(t *testing.T) {
	loads := &fakeLoads{}
	for i := range 3 {
		loads.set(fmt.Sprintf("http://b%d:8000/v1", i), idle())
	}
	bl := New(poolConfig(t, []float64{1, 1, 1}, ", max_parallel_requests: 3", "router_settings: {queue_timeout: 5}\n"), Options{ReadLoad: loads.read})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			bl.ReadLoadNow(ctx, nil)
			bl.Snapshot()
			time.Sleep(time.Millisecond)
		}
	})
	var work sync.WaitGroup
	for g := range 8 {
		work.Go(func() {
			for n := range 50 {
				l, err := bl.Acquire(context.Background(), Request{Alias: "coder", Session: fmt.Sprint("s", (g*50+n)%7)})
				if err != nil {
					t.Error(err)
					return
				}
				l.Done(Succeeded, "")
			}
		})
	}
	work.Wait()
	cancel()
	wg.Wait()
	for _, st := range bl.Snapshot() {
		if st.InFlight != 0 || st.Queued != 0 {
			t.Errorf("%s: %d in flight, %d queued after all ended", st.Name, st.InFlight, st.Queued)
		}
	}
}

// TestHomeDiesThroughReplicas: three replicas, the session's turns
// through each in turn. Home dies: each replica's first attempt there
// fails and is retried on the next of the order, which every replica
// agrees on; every turn is served there, none at a third server, and
// none back at home while it is out.
func TestHomeDiesThroughReplicas(t *testing.T) {
	cfg := poolConfig(t, []float64{1, 1, 1, 1}, "", "router_settings: {allowed_fails: 1, cooldown_time: 60}\n")
	var replicas []*Balancer
	for range 3 {
		replicas = append(replicas, New(cfg, Options{Probe: func(context.Context, config.Route) error { return errors.New("refused") }}))
	}
	const session = "session-through-three-replicas"
	ord := order(replicas[0], session)
	homeAttempts := 0
	var served []int
	for n := range 12 {
		bl := replicas[n%3]
		l := acquire(t, bl, Request{Alias: "coder", Session: session})
		if index(bl, l.Backend) == ord[0] {
			homeAttempts++
			l.Done(Failed, "refused")
			l = acquire(t, bl, Request{Alias: "coder", Session: session, Tried: []*Backend{l.Backend}, Retry: "unreachable"})
		}
		served = append(served, index(bl, l.Backend))
		l.Done(Succeeded, "")
	}
	for _, s := range served {
		if s != ord[1] {
			t.Fatalf("turns served by %v, want %d every time", served, ord[1])
		}
	}
	if homeAttempts != 3 {
		t.Errorf("%d attempts at the dead home, want 3 (one per replica)", homeAttempts)
	}
	var down uint64
	for _, bl := range replicas {
		down += bl.Counters().Moves[MoveHomeDown]
	}
	if down != 12 {
		t.Errorf("home_down summed over the replicas %d, want 12 (every turn served away from home)", down)
	}
}
