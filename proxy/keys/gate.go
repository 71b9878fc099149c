package keys

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Options are a Gate's settings.
type Options struct {
	Logger *slog.Logger
	// Retention is how long usage records are kept (0: 90 days).
	Retention time.Duration
	// Reload is how often the keys are read again from the store, for the
	// changes other processes made there (keys revoke on the command
	// line, another replica's admin API); 0: every second.
	Reload time.Duration
	// BatchDelay is how long the writer of usage records waits after a
	// record comes before it writes, to write what comes meanwhile in the
	// same transaction (0: 100 ms). With Postgres, the tokens of a request
	// count against the shared tpm and budget once written.
	BatchDelay time.Duration
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
}

// DefaultRetention is how long usage records are kept by default.
const DefaultRetention = 90 * 24 * time.Hour

// Gate is what the server asks about a request's key: who it is
// (Authenticate), whether it may make this request now (Admit), and what
// the request used (Record). It holds the keys in memory, by hash, read
// again from the store every Options.Reload.
type Gate struct {
	store     *Store
	log       *slog.Logger
	lim       limiter
	now       func() time.Time
	retention time.Duration
	reload    time.Duration
	delay     time.Duration

	byHash atomic.Pointer[map[string]*Key]

	mu      sync.Mutex
	pending []Record
	wake    chan struct{}
	writeMu sync.Mutex // one batch at a time, in order

	stop    chan struct{}
	stopped sync.WaitGroup
	closed  atomic.Bool
}

// NewGate reads the keys of store and starts the writer of usage records,
// the reloading of the keys and the purge of old records. Close stops
// them, after the last records are written.
func NewGate(ctx context.Context, store *Store, opts Options) (*Gate, error) {
	g := &Gate{store: store, log: opts.Logger, now: opts.Now, retention: opts.Retention, reload: opts.Reload, delay: opts.BatchDelay,
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.retention <= 0 {
		g.retention = DefaultRetention
	}
	if g.reload <= 0 {
		g.reload = time.Second
	}
	if g.delay <= 0 {
		g.delay = 100 * time.Millisecond
	}
	if err := g.Reload(ctx); err != nil {
		return nil, err
	}
	if store.dialect == Postgres {
		g.lim = sharedLimits{store}
	} else {
		mem := newMemoryLimits()
		if err := g.seedBudgets(ctx, mem); err != nil {
			return nil, err
		}
		g.lim = mem
	}
	if _, err := store.Purge(ctx, g.now(), g.retention); err != nil {
		return nil, err
	}
	g.stopped.Add(3)
	go g.writeLoop()
	go g.every(g.reload, func(ctx context.Context) error { return g.Reload(ctx) }, "reading the keys again")
	go g.every(time.Hour, func(ctx context.Context) error {
		_, err := store.Purge(ctx, g.now(), g.retention)
		return err
	}, "purging old usage records")
	return g, nil
}

// seedBudgets reads the tokens each key's budget period has used so far.
func (g *Gate) seedBudgets(ctx context.Context, mem *memoryLimits) error {
	now := g.now()
	for _, k := range *g.byHash.Load() {
		if k.BudgetTokens == 0 {
			continue
		}
		start := periodStart(now, k.BudgetPeriod)
		u, err := g.store.KeyUsageSince(ctx, k.Name, start)
		if err != nil {
			return err
		}
		mem.seed(k.Name, start, u.InputTokens+u.OutputTokens)
	}
	return nil
}

// Store is the gate's store.
func (g *Gate) Store() *Store { return g.store }

// Now is the gate's clock.
func (g *Gate) Now() time.Time { return g.now() }

// Reload reads the keys from the store.
func (g *Gate) Reload(ctx context.Context) error {
	list, err := g.store.List(ctx)
	if err != nil {
		return err
	}
	m := make(map[string]*Key, len(list))
	for _, k := range list {
		m[k.hash] = k
	}
	g.byHash.Store(&m)
	return nil
}

func (g *Gate) every(d time.Duration, f func(context.Context) error, what string) {
	defer g.stopped.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := f(ctx); err != nil {
				g.log.Warn(what, "err", err)
			}
			cancel()
		}
	}
}

// Authenticate finds the key whose text a client sent: a *Refusal
// (Unauthenticated) when it is unknown, expired or revoked.
func (g *Gate) Authenticate(text string) (*Key, error) {
	h := HashKey(text)
	k := (*g.byHash.Load())[h]
	// The map was found by the hash; the comparison is constant-time all
	// the same, for the hash's own sake.
	if k == nil || subtle.ConstantTimeCompare([]byte(k.hash), []byte(h)) != 1 {
		return nil, &Refusal{Reason: Unauthenticated, Message: "invalid key: send a key made by `proxy keys create` (or the admin API), or the proxy's master key"}
	}
	if k.Revoked() {
		return nil, &Refusal{Reason: Unauthenticated, Message: fmt.Sprintf("key %q was revoked at %s: ask the proxy's admin for a new one", k.Name, k.RevokedAt.Format(time.RFC3339))}
	}
	if now := g.now(); k.Expired(now) {
		return nil, &Refusal{Reason: Unauthenticated, Message: fmt.Sprintf("key %q expired at %s: ask the proxy's admin for a new one", k.Name, k.ExpiresAt.Format(time.RFC3339))}
	}
	return k, nil
}

// Admit decides whether k may make a request for a model now (models: the
// model_name it routes to and the model the client sent), and counts it,
// reserving no tokens (Reserve).
func (g *Gate) Admit(ctx context.Context, k *Key, models ...string) error {
	_, err := g.Reserve(ctx, k, 0, models...)
	return err
}

// Allow says whether k may use a model (models: the model_name it routes
// to and the model the client sent): a *Refusal (Forbidden) when not.
func (g *Gate) Allow(k *Key, models ...string) error {
	if !k.Allows(models...) {
		return &Refusal{Reason: Forbidden, Message: fmt.Sprintf("key %q may not use model %q: it may use %v", k.Name, models[len(models)-1], k.Models)}
	}
	return nil
}

// Reserve decides whether k may make a request for a model now, and
// counts it: the request reserves tokens (its estimated prompt and its
// max_tokens) against the key's tpm and budget, and is refused
// (*Refusal) when they do not fit what is left. Give the reservation to
// Record with the request's usage when it ends, whatever its end: the
// reservation becomes the real usage (nothing, for a request that
// failed). nil without a tpm or a budget. An error wrapping
// ErrUnreachable says the store (Postgres) did not answer.
func (g *Gate) Reserve(ctx context.Context, k *Key, tokens int64, models ...string) (*Reservation, error) {
	if err := g.Allow(k, models...); err != nil {
		return nil, err
	}
	if k.RPM == 0 && k.TPM == 0 && k.BudgetTokens == 0 {
		return nil, nil
	}
	res, err := g.lim.reserve(ctx, k, max(tokens, 0), g.now())
	if res != nil && k.TPM == 0 && k.BudgetTokens == 0 {
		res = nil // rpm only: nothing to settle
	}
	return res, err
}

// Record takes what a request made with k used, and settles its
// reservation (r.Reserved); it is written with the next batch, off the
// request's path.
func (g *Gate) Record(k *Key, r Record) {
	r.Key, r.budgetPeriod, r.tpm = k.Name, k.BudgetPeriod, k.TPM > 0
	r.limited = k.TPM > 0 || k.BudgetTokens > 0
	if k.BudgetTokens == 0 {
		r.budgetPeriod = 0
	}
	if r.At.IsZero() {
		r.At = g.now()
	}
	if r.limited {
		g.lim.settle(&r, g.now())
	}
	g.mu.Lock()
	g.pending = append(g.pending, r)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// writeLoop writes what was recorded: a batch is what came within
// Options.BatchDelay of its first record (and while the one before was
// written). Close writes the last one.
func (g *Gate) writeLoop() {
	defer g.stopped.Done()
	for {
		select {
		case <-g.stop:
			return
		case <-g.wake:
		}
		select {
		case <-g.stop:
			return
		case <-time.After(g.delay):
		}
		if err := g.Flush(context.Background()); err != nil {
			g.log.Warn("writing usage records (retried with the next batch)", "err", err)
			select {
			case <-g.stop:
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// maxPending bounds the records kept while the database refuses them.
const maxPending = 100000

// Flush writes every record taken so far.
func (g *Gate) Flush(ctx context.Context) error {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	batch := g.pending
	g.pending = nil
	g.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := g.store.insertUsage(ctx, batch, g.now())
	if err != nil {
		g.mu.Lock()
		g.pending = append(batch, g.pending...)
		if n := len(g.pending); n > maxPending {
			g.log.Error("usage records dropped: the database has refused them for too long", "dropped", n-maxPending)
			g.pending = g.pending[n-maxPending:]
		}
		g.mu.Unlock()
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
	return err
}

// Close writes the last records and stops the gate's work (not the store).
func (g *Gate) Close(ctx context.Context) error {
	if g.closed.Swap(true) {
		return nil
	}
	close(g.stop)
	g.stopped.Wait()
	return g.Flush(ctx)
}

// Create makes a key (Store.Create) and knows it at once.
func (g *Gate) Create(ctx context.Context, sp Spec) (*Key, string, error) {
	k, text, err := g.store.Create(ctx, sp, g.now())
	if err != nil {
		return nil, "", err
	}
	return k, text, g.Reload(ctx)
}

// Revoke revokes a key (Store.Revoke) and refuses it at once.
func (g *Gate) Revoke(ctx context.Context, name string) error {
	if err := g.store.Revoke(ctx, name, g.now()); err != nil {
		return err
	}
	return g.Reload(ctx)
}
