// Package balance owns the backends behind each alias: which backend a
// request goes to, how many requests each one carries, and whether it is
// healthy. It knows nothing of HTTP handlers or wire formats.
//
// Several model_list entries with one model_name form a pool. A backend is
// one server and model (api_base and backend model): when two aliases list
// the same one, they share its slots and its health.
//
// # Choosing a backend
//
// Acquire picks a backend of the alias's pool for a request and takes one
// of its slots (proxy_params.max_parallel_requests; no limit when unset),
// waiting in the backend's queue up to router_settings.queue_timeout when
// every slot is taken. A slot that comes free goes to the waiter of the
// best priority (package kind: main, then subagent, then background, then
// the warmer), the first come within one; a waiter that has waited half
// of queue_timeout goes before every other that has not, so that newer
// requests of a better priority cannot keep it waiting until it times
// out. A request holding a slot keeps it (nothing is preempted). The
// strategy is router_settings.routing_strategy:
//
//   - session-affinity (default): a request with a session key goes to the
//     session's home, the top of its weighted rendezvous order (highest
//     random weight of the key at each backend, which every replica
//     computes alone) among the pool's healthy backends. It leaves home only
//     when home is full (see Full): then it goes to the next in that order
//     that is not, and comes back as soon as home has room, so that its
//     turns touch at most two servers. When every backend is full it goes
//     to the first in its order whose load per weight is within Slack
//     requests of the least loaded one's: a hot server is still relieved. A session
//     whose home is out goes to the next in its order and stays there
//     until home is back. Without a session key, least-busy.
//   - least-busy: the backend with the lowest load per weight.
//
// A backend's load is what its server says (package serverload: vLLM,
// SGLang and llama.cpp expose it, read every
// router_settings.load_poll_interval by RunLoad; every replica reads the
// same), plus the requests this proxy sent it since the last reading; where
// the server exposes nothing, the requests this proxy has in flight and
// queued there.
//   - simple-shuffle: weighted random.
//
// Candidates come in tiers: the pool's healthy backends not yet tried by
// this request; then those of each fallback pool (router_settings.fallbacks)
// in order; then the pool's healthy backends, tried or not; then all of the
// pool's backends, whatever their state (a pool that is entirely down still
// answers with the backend's own error, as a single backend always did).
//
// # Health
//
// Lease.Done reports how an exchange ended. router_settings.allowed_fails
// consecutive failures take a backend out: it is cooling, gets no requests
// (but in the last tier above), and comes back at the first successful
// probe of {api_base}/models, made every health_check_interval by Run; a
// failed probe keeps it out for another cooldown_time. With probes off
// (health_check_interval 0) it comes back when cooldown_time ends. While a
// probe is in flight the backend is probing.
//
// # What others read
//
// Snapshot lists every backend with its state, load (and where it was
// read) and times (the /backends endpoint); Ready says whether any backend
// is healthy; Counters and Hooks give the session requests served away
// from their home and the retries, by reason, and the queue waits, for
// metrics.
package balance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/kind"
)

// Slack: when every backend of a pool is full, a session goes to the
// first of its order whose load per weight is within Slack requests (per
// weight) of the least loaded one's: a hot server is relieved, and a
// session keeps its cache when the pool is evenly busy.
const Slack = 1

// KVFull is the fraction of its KV cache in use at which a server is full.
const KVFull = 0.95

// State is a backend's health.
type State int

const (
	Healthy State = iota
	Cooling
	Probing
)

func (s State) String() string {
	switch s {
	case Cooling:
		return "cooling"
	case Probing:
		return "probing"
	}
	return "healthy"
}

// MoveReason says why a session's request was served away from its home
// (the top of its rendezvous order over the pool's backends).
type MoveReason string

const (
	MoveHomeFull MoveReason = "home_full" // home was full (Full)
	MoveHomeDown MoveReason = "home_down" // home was out, or failed this request
)

// MoveReasons lists every MoveReason.
var MoveReasons = []MoveReason{MoveHomeFull, MoveHomeDown}

// Result is how an exchange with a backend ended, as far as the backend's
// health goes.
type Result int

const (
	// Succeeded: the backend answered (a 4xx included: it is alive).
	Succeeded Result = iota
	// Failed: unreachable, 5xx, a timeout, or a stream that broke off.
	Failed
	// Abandoned: the client went away; it says nothing of the backend.
	Abandoned
)

// Hooks are called on events that metrics count. Each may be nil. They are
// called with the balancer's lock held: they must be quick and must not
// call the Balancer.
type Hooks struct {
	// Moved: a session's request served at another backend than its
	// home.
	Moved        func(alias string, home, to *Backend, reason MoveReason)
	Retried      func(alias, reason string)
	Waited       func(b *Backend, wait time.Duration, gotSlot bool)
	StateChanged func(b *Backend, s State)
}

// Options are the balancer's collaborators; every field may be zero.
type Options struct {
	Hooks Hooks
	// Probe checks a backend that is out; nil: GET {api_base}/models
	// answering 200.
	Probe func(ctx context.Context, r config.Route) error
	// Rand draws the random numbers of least-busy ties and simple-shuffle;
	// nil: math/rand/v2's global source. Tests seed it.
	Rand *rand.Rand
	Now  func() time.Time
	// ReadLoad reads a backend's load for RunLoad; nil: serverload.Read.
	ReadLoad ReadLoad
}

// Backend is one server and model. Its identity is fixed; its state is the
// Balancer's, read through Snapshot.
type Backend struct {
	Name    string // proxy_params.name, or host/model
	APIBase string
	Model   string // the backend model

	route       config.Route // of its first entry: the probe's key
	seed        uint64
	maxParallel int
	aliases     []string
	server      string // proxy_params.server; "" to ask discovery

	// guarded by Balancer.mu
	state       State
	coolUntil   time.Time
	fails       int
	inflight    int
	queue       []*waiter
	lastErr     string
	lastRequest time.Time
	lastSuccess time.Time
	outs        uint64 // times failures took it out
	requests    uint64
	failures    uint64
	srv         serverLoad // what its server says of its load
}

// load is the backend's load: the server's running and waiting requests
// as last read, corrected by this proxy's own requests since (those it
// sent, less those that ended: the reading counted them), and this
// proxy's queue for it; without a reading, this proxy's in flight and
// queued; mu is held.
func (b *Backend) load() int {
	if !b.srv.ok {
		return b.inflight + len(b.queue)
	}
	return max(b.inflight, b.srv.Running+b.srv.Waiting-b.srv.inflight+b.inflight) + len(b.queue)
}

func (b *Backend) hasSlot() bool { return b.maxParallel == 0 || b.inflight < b.maxParallel }

// full reports whether the backend is full: requests wait in this proxy's
// queue for it or would (max_parallel_requests), its load reaches its
// slots (max_parallel_requests, or the server's own count), requests wait
// in its server's queue (less those this proxy's ended requests have let
// in since the reading), or its KV cache is nearly full; mu is held.
func (b *Backend) full() bool {
	if len(b.queue) > 0 || !b.hasSlot() {
		return true
	}
	if !b.srv.ok {
		return false
	}
	slots := b.maxParallel
	if slots == 0 {
		slots = b.srv.Slots
	}
	if slots > 0 {
		if b.load() >= slots {
			return true
		}
	} else if b.srv.Waiting-max(0, b.srv.inflight-b.inflight) > 0 {
		return true
	}
	return b.srv.KVUsage >= KVFull
}

type member struct {
	b      *Backend
	route  config.Route
	weight float64
}

type pool struct {
	alias     string
	members   []member
	fallbacks []*pool
}

// Balancer holds the pools of a configuration. It is safe for concurrent
// use.
type Balancer struct {
	settings config.RouterSettings
	hooks    Hooks
	probe    func(ctx context.Context, r config.Route) error
	now      func() time.Time
	readLoad ReadLoad

	mu       sync.Mutex
	rand     *rand.Rand // nil: global; guarded by mu
	pools    map[string]*pool
	backends []*Backend
	moves    map[MoveReason]uint64
	retries  map[string]uint64
}

// New builds the pools of a validated configuration.
func New(cfg *config.Config, opts Options) *Balancer {
	bl := &Balancer{
		settings: cfg.Router,
		hooks:    opts.Hooks,
		probe:    opts.Probe,
		now:      opts.Now,
		rand:     opts.Rand,
		readLoad: opts.ReadLoad,
		pools:    map[string]*pool{},
		moves:    map[MoveReason]uint64{},
		retries:  map[string]uint64{},
	}
	if bl.probe == nil {
		bl.probe = ProbeModels
	}
	if bl.now == nil {
		bl.now = time.Now
	}
	byKey := map[string]*Backend{}
	for _, r := range cfg.Routes {
		key := r.APIBase + "\x00" + r.BackendModel
		b, ok := byKey[key]
		if !ok {
			b = &Backend{APIBase: r.APIBase, Model: r.BackendModel, route: r, maxParallel: r.MaxParallelRequests}
			byKey[key] = b
			bl.backends = append(bl.backends, b)
		}
		if b.Name == "" && r.Name != "" {
			b.Name = r.Name
		}
		if b.server == "" {
			b.server = r.Server
		}
		// Two aliases listing one backend with different limits: the
		// smaller holds.
		if r.MaxParallelRequests > 0 && (b.maxParallel == 0 || r.MaxParallelRequests < b.maxParallel) {
			b.maxParallel = r.MaxParallelRequests
		}
		if !slices.Contains(b.aliases, r.Alias) {
			b.aliases = append(b.aliases, r.Alias)
		}
		p, ok := bl.pools[r.Alias]
		if !ok {
			p = &pool{alias: r.Alias}
			bl.pools[r.Alias] = p
		}
		p.members = append(p.members, member{b: b, route: r, weight: r.Weight})
	}
	for _, b := range bl.backends {
		if b.Name == "" {
			b.Name = defaultName(b.APIBase, b.Model)
		}
	}
	uniqueNames(bl.backends)
	for _, b := range bl.backends {
		b.seed = hashString(b.Name)
	}
	for _, f := range cfg.Router.Fallbacks {
		p := bl.pools[f.Alias]
		for _, to := range f.To {
			if fp := bl.pools[to]; fp != nil && p != nil {
				p.fallbacks = append(p.fallbacks, fp)
			}
		}
	}
	return bl
}

// defaultName is a backend's name when the config gives none: the host
// of its api_base (never its credentials) and its model.
func defaultName(apiBase, model string) string {
	host := apiBase
	if u, err := url.Parse(apiBase); err == nil && u.Host != "" {
		host = u.Host
	}
	return host + "/" + model
}

// Backends lists every distinct backend in file order.
func (bl *Balancer) Backends() []*Backend { return bl.backends }

// Has reports whether alias names a pool.
func (bl *Balancer) Has(alias string) bool { return bl.pools[alias] != nil }

// Route returns the route of an alias's first backend: what a request is
// prepared for before Acquire picks its backend.
func (bl *Balancer) Route(alias string) (config.Route, bool) {
	p := bl.pools[alias]
	if p == nil {
		return config.Route{}, false
	}
	return p.members[0].route, true
}

// First returns an alias's first backend, the one its Route is of; nil
// for an unknown alias.
func (bl *Balancer) First(alias string) *Backend {
	if p := bl.pools[alias]; p != nil {
		return p.members[0].b
	}
	return nil
}

// Request is what Acquire needs to know of a request.
type Request struct {
	Alias   string
	Session string // the session key; "" for none
	// Tried are the backends this request already failed on before the
	// first byte; a retry goes elsewhere when the pool can.
	Tried []*Backend
	// Retry is why this is another attempt ("unreachable", "status_503",
	// ...); "" for the first.
	Retry string
	// Priority is the request's place in a full backend's queue.
	Priority kind.Priority
}

// Lease is a slot at a backend, held from Acquire until Done.
type Lease struct {
	Backend *Backend
	// Route is the backend's entry in the pool that serves the request:
	// its backend model, key, timeouts and protocol. Its Alias is that
	// pool's: another than the request's when Fallback is set.
	Route    config.Route
	Fallback bool
	Waited   time.Duration // in the backend's queue

	bl   *Balancer
	outs uint64 // the backend's outs when the lease was taken
	once sync.Once
}

// QueueTimeoutError: no slot of the chosen backend came free within
// router_settings.queue_timeout.
type QueueTimeoutError struct {
	Alias   string
	Backend string
	Limit   time.Duration
}

func (e *QueueTimeoutError) Error() string {
	return fmt.Sprintf("every slot of backend %s of model %q stayed taken for %s (proxy_params.max_parallel_requests, router_settings.queue_timeout): retry later", e.Backend, e.Alias, e.Limit)
}

// ErrUnknownAlias: the alias names no pool.
var ErrUnknownAlias = errors.New("balance: unknown alias")

type waiter struct {
	ch       chan struct{} // receives once: granted or repick set
	granted  bool          // the slot is the waiter's
	repick   bool          // its backend went out: choose again
	priority kind.Priority
	since    time.Time // when the request began to wait (Balancer.now)
}

// Acquire picks a backend for the request and takes one of its slots,
// waiting for one up to queue_timeout (or until ctx ends).
func (bl *Balancer) Acquire(ctx context.Context, r Request) (*Lease, error) {
	p := bl.pools[r.Alias]
	if p == nil {
		return nil, ErrUnknownAlias
	}
	var (
		timer *time.Timer
		start time.Time
		since time.Time // by bl.now, for the queue's order
	)
	bl.mu.Lock()
	if r.Retry != "" {
		bl.retries[r.Retry]++
		if bl.hooks.Retried != nil {
			bl.hooks.Retried(r.Alias, r.Retry)
		}
	}
	for {
		m, fallback := bl.choose(p, r)
		b := m.b
		b.lastRequest = bl.now()
		if b.hasSlot() && len(b.queue) == 0 {
			b.inflight++
			b.requests++
			outs := b.outs // read under the lock: fail writes it
			bl.mu.Unlock()
			return &Lease{Backend: b, Route: m.route, Fallback: fallback, bl: bl, outs: outs}, nil
		}
		if since.IsZero() {
			since = bl.now()
		}
		w := &waiter{ch: make(chan struct{}, 1), priority: r.Priority, since: since}
		b.queue = append(b.queue, w)
		bl.mu.Unlock()
		if timer == nil {
			start = time.Now()
			timer = time.NewTimer(bl.settings.QueueTimeout)
			defer timer.Stop()
		}
		var err error
		select {
		case <-w.ch:
		case <-timer.C:
			err = &QueueTimeoutError{Alias: r.Alias, Backend: b.Name, Limit: bl.settings.QueueTimeout}
		case <-ctx.Done():
			err = ctx.Err()
		}
		bl.mu.Lock()
		waited := time.Since(start)
		if w.granted {
			b.requests++
			if bl.hooks.Waited != nil {
				bl.hooks.Waited(b, waited, true)
			}
			if err == nil {
				outs := b.outs
				bl.mu.Unlock()
				return &Lease{Backend: b, Route: m.route, Fallback: fallback, Waited: waited, bl: bl, outs: outs}, nil
			}
			// The slot came with the timeout or the cancel: pass it on.
			bl.release(b)
		} else if !w.repick {
			b.queue = slices.DeleteFunc(b.queue, func(x *waiter) bool { return x == w })
		}
		if err != nil {
			if bl.hooks.Waited != nil {
				bl.hooks.Waited(b, waited, false)
			}
			bl.mu.Unlock()
			return nil, err
		}
		// repick: the backend went out while the request waited.
	}
}

// Done gives the slot back and records how the exchange went; detail
// (Failed only) is what /backends shows as the last error, and must hold
// no secret. Calls after the first do nothing.
func (l *Lease) Done(res Result, detail string) {
	l.once.Do(func() {
		bl := l.bl
		bl.mu.Lock()
		defer bl.mu.Unlock()
		b := l.Backend
		switch res {
		case Succeeded:
			b.lastSuccess = bl.now()
			// A request that began before failures took the backend out
			// says nothing of it now: under load its end can come after
			// theirs, and must not bring back a backend that is down.
			if l.outs == b.outs {
				b.fails = 0
				if b.state != Healthy {
					bl.setState(b, Healthy)
				}
			}
		case Failed:
			bl.fail(b, detail)
		}
		bl.release(b)
	})
}

// fail counts a failure; mu is held.
func (bl *Balancer) fail(b *Backend, detail string) {
	b.fails++
	b.failures++
	b.lastErr = detail
	if b.fails >= bl.settings.AllowedFails {
		b.outs++
		b.coolUntil = bl.now().Add(bl.settings.CooldownTime)
		if b.state != Cooling {
			bl.setState(b, Cooling)
		}
		// Those waiting for it choose again.
		for _, w := range b.queue {
			w.repick = true
			w.ch <- struct{}{}
		}
		b.queue = nil
	}
}

// release frees a slot, handing it to the next waiter; mu is held.
func (bl *Balancer) release(b *Backend) {
	if len(b.queue) > 0 {
		i := bl.next(b.queue)
		w := b.queue[i]
		b.queue = slices.Delete(b.queue, i, i+1)
		w.granted = true
		w.ch <- struct{}{}
		return
	}
	b.inflight--
}

// next is the index of the waiter a free slot goes to: the first (in
// arrival order) that has waited half of queue_timeout, else the first of
// the best priority; mu is held.
func (bl *Balancer) next(q []*waiter) int {
	aged := bl.now().Add(-bl.settings.QueueTimeout / 2)
	best := 0
	for i, w := range q {
		if !w.since.After(aged) {
			return i
		}
		if w.priority < q[best].priority {
			best = i
		}
	}
	return best
}

func (bl *Balancer) setState(b *Backend, s State) {
	b.state = s
	if bl.hooks.StateChanged != nil {
		bl.hooks.StateChanged(b, s)
	}
}

// usable reports whether b takes requests; mu is held. A cooling backend
// whose cooldown ended with probes off is back.
func (bl *Balancer) usable(b *Backend) bool {
	if b.state == Healthy {
		return true
	}
	if b.state == Cooling && bl.settings.HealthCheckInterval == 0 && !bl.now().Before(b.coolUntil) {
		b.fails = bl.settings.AllowedFails - 1 // on trial: one more failure and it is out again
		bl.setState(b, Healthy)
		return true
	}
	return false
}

// candidate is a member in a choice, with its hashing score. It points at
// the member: a member holds its route, too big to copy for each choice.
type candidate struct {
	*member
	score float64
}

// choose picks the member for a request and counts a session's request
// served away from its home; mu is held.
func (bl *Balancer) choose(p *pool, r Request) (*member, bool) {
	m, fallback := bl.chooseMember(p, r)
	if r.Session != "" && len(p.members) > 1 && bl.settings.RoutingStrategy != "simple-shuffle" && bl.settings.RoutingStrategy != "least-busy" {
		bl.noteHome(p, r, m.b)
	}
	return m, fallback
}

// chooseMember picks the member for a request; mu is held.
func (bl *Balancer) chooseMember(p *pool, r Request) (*member, bool) {
	var buf [16]candidate
	tried := func(b *Backend) bool { return slices.Contains(r.Tried, b) }
	collect := func(p *pool, healthy, untried bool) []candidate {
		cs := buf[:0]
		for i := range p.members {
			m := &p.members[i]
			if (healthy && !bl.usable(m.b)) || (untried && tried(m.b)) {
				continue
			}
			cs = append(cs, candidate{member: m})
		}
		return cs
	}
	if cs := collect(p, true, true); len(cs) > 0 {
		return bl.pick(p, cs, r.Session), false
	}
	for _, fp := range p.fallbacks {
		if cs := collect(fp, true, true); len(cs) > 0 {
			return bl.pick(fp, cs, r.Session), true
		}
	}
	if cs := collect(p, true, false); len(cs) > 0 {
		return bl.pick(p, cs, r.Session), false
	}
	return bl.pick(p, collect(p, false, false), r.Session), false
}

func (bl *Balancer) pick(p *pool, cs []candidate, session string) *member {
	// One candidate is the choice; a session need not be remembered in a
	// pool of one backend, where it can never move.
	if len(cs) == 1 && (session == "" || len(p.members) == 1) {
		return cs[0].member
	}
	switch {
	case bl.settings.RoutingStrategy == "simple-shuffle":
		return bl.shuffle(cs)
	case bl.settings.RoutingStrategy == "least-busy" || session == "":
		return bl.leastBusy(cs)
	}
	return bl.affinity(cs, session)
}

func (bl *Balancer) float() float64 {
	if bl.rand != nil {
		return bl.rand.Float64()
	}
	return rand.Float64()
}

func (bl *Balancer) shuffle(cs []candidate) *member {
	var total float64
	for _, c := range cs {
		total += c.weight
	}
	x := bl.float() * total
	for _, c := range cs {
		if x < c.weight {
			return c.member
		}
		x -= c.weight
	}
	return cs[len(cs)-1].member
}

// leastBusy picks the lowest load per weight; ties go to a random one of
// them, so that an idle pool still spreads its requests.
func (bl *Balancer) leastBusy(cs []candidate) *member {
	start := int(bl.float() * float64(len(cs)))
	best := -1
	var bestLoad float64
	for i := range cs {
		c := cs[(start+i)%len(cs)]
		l := float64(c.b.load()+1) / c.weight
		if best < 0 || l < bestLoad {
			best, bestLoad = (start+i)%len(cs), l
		}
	}
	return cs[best].member
}

// affinity is weighted rendezvous hashing that leaves home only when it
// is full.
func (bl *Balancer) affinity(cs []candidate, session string) *member {
	key := hashString(session)
	for i := range cs {
		cs[i].score = rendezvousScore(key, cs[i].b.seed, cs[i].weight)
	}
	slices.SortFunc(cs, byScore)
	for _, c := range cs {
		if !c.b.full() {
			return c.member
		}
	}
	// Every one is full: the first whose load per weight is within Slack
	// of the least loaded one's.
	least := math.Inf(1)
	for _, c := range cs {
		least = min(least, float64(c.b.load())/c.weight)
	}
	for _, c := range cs {
		if float64(c.b.load())/c.weight <= least+Slack/c.weight {
			return c.member
		}
	}
	return cs[0].member
}

func byScore(a, b candidate) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	return 0
}

// home is the session's home in pool p: the top of its rendezvous order
// over every member, whatever its state; mu is held.
func home(p *pool, session string) *Backend {
	key := hashString(session)
	var best *Backend
	bestScore := -1.0
	for _, m := range p.members {
		if s := rendezvousScore(key, m.b.seed, m.weight); s > bestScore {
			best, bestScore = m.b, s
		}
	}
	return best
}

// noteHome counts a session's request served at to when its home is
// another backend; mu is held.
func (bl *Balancer) noteHome(p *pool, r Request, to *Backend) {
	h := home(p, r.Session)
	if h == to {
		return
	}
	reason := MoveHomeFull
	if !bl.usable(h) || slices.Contains(r.Tried, h) {
		reason = MoveHomeDown
	}
	bl.moves[reason]++
	if bl.hooks.Moved != nil {
		bl.hooks.Moved(p.alias, h, to, reason)
	}
}

// rendezvousScore is the weighted highest-random-weight score of a key at
// a backend: -w / ln(u), u uniform in (0, 1) from the two hashes.
func rendezvousScore(key, seed uint64, w float64) float64 {
	u := (float64(mix64(key^seed)>>11) + 0.5) / (1 << 53)
	return -w / math.Log(u)
}

// hashString is FNV-1a, 64 bits.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is the splitmix64 finalizer: every input bit moves every output bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Status is a backend as /backends shows it.
type Status struct {
	Name         string     `json:"name"`
	Aliases      []string   `json:"aliases"`
	APIBase      string     `json:"api_base"`
	Model        string     `json:"model"`
	State        string     `json:"state"`
	CoolingUntil *time.Time `json:"cooling_until,omitempty"`
	InFlight     int        `json:"in_flight"`
	Queued       int        `json:"queued"`
	// QueuedByKind counts the queued requests by priority (main,
	// subagent, background, warmer); every one is present.
	QueuedByKind        map[string]int `json:"queued_by_kind"`
	MaxParallelRequests int            `json:"max_parallel_requests,omitempty"`
	ConsecutiveFailures int            `json:"consecutive_failures"`
	LastError           string         `json:"last_error,omitempty"`
	LastRequest         *time.Time     `json:"last_request,omitempty"`
	LastSuccess         *time.Time     `json:"last_success,omitempty"`
	Requests            uint64         `json:"requests"`
	Failures            uint64         `json:"failures"`
	// Load is the backend's load and where it was read.
	Load LoadStatus `json:"load"`
}

// Snapshot returns the state of every backend, in file order.
func (bl *Balancer) Snapshot() []Status {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	out := make([]Status, len(bl.backends))
	for i, b := range bl.backends {
		bl.usable(b) // brings a backend whose cooldown ended back first
		s := Status{
			Name: b.Name, Aliases: slices.Clone(b.aliases), APIBase: config.RedactedURL(b.APIBase), Model: b.Model,
			State: b.state.String(), InFlight: b.inflight, Queued: len(b.queue), QueuedByKind: queuedByKind(b.queue), MaxParallelRequests: b.maxParallel,
			ConsecutiveFailures: b.fails, LastError: config.ScrubCredentials(b.lastErr, b.APIBase), Requests: b.requests, Failures: b.failures, Load: loadStatus(b),
		}
		if b.state != Healthy {
			s.CoolingUntil = timePtr(b.coolUntil)
		}
		s.LastRequest = timePtr(b.lastRequest)
		s.LastSuccess = timePtr(b.lastSuccess)
		out[i] = s
	}
	return out
}

func queuedByKind(q []*waiter) map[string]int {
	out := make(map[string]int, kind.Priorities)
	for p := range kind.Priorities {
		out[p.String()] = 0
	}
	for _, w := range q {
		out[w.priority.String()]++
	}
	return out
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// Ready reports whether at least one backend is healthy.
func (bl *Balancer) Ready() bool {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	for _, b := range bl.backends {
		if bl.usable(b) {
			return true
		}
	}
	return false
}

// Counters are the balancer's running totals.
type Counters struct {
	Moves   map[MoveReason]uint64
	Retries map[string]uint64 // by reason
}

// Counters returns a copy of the running totals.
func (bl *Balancer) Counters() Counters {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	c := Counters{Moves: map[MoveReason]uint64{}, Retries: map[string]uint64{}}
	for k, v := range bl.moves {
		c.Moves[k] = v
	}
	for k, v := range bl.retries {
		c.Retries[k] = v
	}
	return c
}

// RetryReason names a failed attempt for the retry counters and the
// Request.Retry field: "unreachable", "timeout", or "status_NNN".
func RetryReason(unreachable, timeout bool, status int) string {
	switch {
	case unreachable:
		return "unreachable"
	case timeout:
		return "timeout"
	}
	return "status_" + fmt.Sprint(status)
}
