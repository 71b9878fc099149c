package keys

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Reason is why a request made with a key is refused.
type Reason int

const (
	Unauthenticated Reason = iota // unknown, expired or revoked key: 401
	Forbidden                     // a model the key may not use: 403
	RateLimited                   // rpm or tpm reached: 429
	BudgetSpent                   // the period's token budget spent: 429
)

// Refusal is a request refused for its key; its message names the key by
// its name, never by its text.
type Refusal struct {
	Reason     Reason
	Message    string
	RetryAfter time.Duration // 0: retrying will not help (401, 403, a request larger than the whole limit)
}

func (r *Refusal) Error() string { return r.Message }

// ErrUnreachable is in the error of a request whose key's limits could
// not be counted because the store did not answer (errors.Is). The rest
// of the error is the driver's, for the log only.
var ErrUnreachable = errors.New("the key store is unreachable")

// Reservation is what a request admitted with a key holds against the
// key's tpm and budget while it runs: its estimated prompt and the
// max_tokens it was sent with. Record makes it the request's real usage
// (or nothing, for a request that failed).
type Reservation struct {
	Tokens      int64
	minute      time.Time // the minute window it was taken in
	budgetStart time.Time // the budget period it was taken in (zero: no budget)
}

// limiter counts the requests and tokens of each key in its windows: a
// minute (rpm, tpm) and the key's budget period.
type limiter interface {
	// reserve counts a request of k at now with the tokens it reserves,
	// or refuses it (*Refusal), in one step: requests admitted together
	// never reserve more than a limit holds.
	reserve(ctx context.Context, k *Key, tokens int64, now time.Time) (*Reservation, error)
	// settle replaces r's reservation by its real tokens (in the process;
	// the shared limiter settles when the record is written).
	settle(r *Record, now time.Time)
}

func minuteRefusal(k *Key, what string, used, limit, asked int64, now time.Time) *Refusal {
	next := now.Truncate(time.Minute).Add(time.Minute)
	r := &Refusal{Reason: RateLimited, RetryAfter: retryAfter(next, now)}
	switch {
	case asked > limit:
		r.RetryAfter = 0
		r.Message = fmt.Sprintf("request too large for the rate limit of key %q: it reserves %d tokens (its prompt and its max_tokens), more than the key's %d %s per minute: send a smaller max_tokens", k.Name, asked, limit, what)
	case used >= limit:
		r.Message = fmt.Sprintf("rate limit of key %q reached: %d of its %d %s per minute used; retry after %s", k.Name, used, limit, what, next.UTC().Format(time.RFC3339))
	default:
		r.Message = fmt.Sprintf("rate limit of key %q reached: %d of its %d %s per minute used or reserved, and this request reserves %d (its prompt and its max_tokens); retry after %s", k.Name, used, limit, what, asked, next.UTC().Format(time.RFC3339))
	}
	return r
}

func budgetRefusal(k *Key, used, asked int64, start, now time.Time) *Refusal {
	renews := start.Add(k.BudgetPeriod)
	r := &Refusal{Reason: BudgetSpent, RetryAfter: retryAfter(renews, now)}
	switch {
	case asked > k.BudgetTokens:
		r.RetryAfter = 0
		r.Message = fmt.Sprintf("request too large for the budget of key %q: it reserves %d tokens (its prompt and its max_tokens), more than the key's %d tokens per %s: send a smaller max_tokens", k.Name, asked, k.BudgetTokens, FormatPeriod(k.BudgetPeriod))
	case used >= k.BudgetTokens:
		r.Message = fmt.Sprintf("budget of key %q spent: %d of its %d tokens per %s used; it renews at %s", k.Name, used, k.BudgetTokens, FormatPeriod(k.BudgetPeriod), renews.UTC().Format(time.RFC3339))
	default:
		r.Message = fmt.Sprintf("budget of key %q nearly spent: %d of its %d tokens per %s used or reserved, and this request reserves %d (its prompt and its max_tokens); it renews at %s", k.Name, used, k.BudgetTokens, FormatPeriod(k.BudgetPeriod), asked, renews.UTC().Format(time.RFC3339))
	}
	return r
}

// over says whether tokens more on used pass limit (or used reached it).
func over(used, tokens, limit int64) bool { return used >= limit || used+tokens > limit }

// retryAfter rounds up to whole seconds, at least one.
func retryAfter(at, now time.Time) time.Duration {
	d := at.Sub(now)
	return max(time.Second, (d+time.Second-1)/time.Second*time.Second)
}

// memoryLimits counts in the process (SQLite: one proxy on the file).
type memoryLimits struct {
	mu    sync.Mutex
	byKey map[string]*windows
}

type windows struct {
	minute                    time.Time
	requests, tokens          int64
	budgetStart               time.Time
	budgetTokens              int64
	seededStart, seededTokens int64 // the budget period's tokens read from the store at start
}

func newMemoryLimits() *memoryLimits { return &memoryLimits{byKey: map[string]*windows{}} }

func (l *memoryLimits) windowsOf(name string, now time.Time) *windows {
	w := l.byKey[name]
	if w == nil {
		w = &windows{}
		l.byKey[name] = w
	}
	if m := now.Truncate(time.Minute); !w.minute.Equal(m) {
		w.minute, w.requests, w.tokens = m, 0, 0
	}
	return w
}

func (w *windows) rollBudget(period time.Duration, now time.Time) {
	if period == 0 {
		return
	}
	if start := periodStart(now, period); !w.budgetStart.Equal(start) {
		w.budgetStart, w.budgetTokens = start, 0
		if w.seededStart == start.Unix() {
			w.budgetTokens = w.seededTokens
		}
	}
}

func (l *memoryLimits) reserve(_ context.Context, k *Key, tokens int64, now time.Time) (*Reservation, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windowsOf(k.Name, now)
	w.rollBudget(k.BudgetPeriod, now)
	switch {
	case k.BudgetTokens > 0 && over(w.budgetTokens, tokens, k.BudgetTokens):
		return nil, budgetRefusal(k, w.budgetTokens, tokens, w.budgetStart, now)
	case k.RPM > 0 && w.requests >= k.RPM:
		return nil, minuteRefusal(k, "requests", w.requests, k.RPM, 0, now)
	case k.TPM > 0 && over(w.tokens, tokens, k.TPM):
		return nil, minuteRefusal(k, "tokens", w.tokens, k.TPM, tokens, now)
	}
	w.requests++
	res := &Reservation{Tokens: tokens, minute: w.minute}
	if k.TPM > 0 {
		w.tokens += tokens
	}
	if k.BudgetTokens > 0 {
		w.budgetTokens += tokens
		res.budgetStart = w.budgetStart
	}
	return res, nil
}

func (l *memoryLimits) settle(r *Record, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windowsOf(r.Key, now)
	w.rollBudget(r.budgetPeriod, now)
	minute, budget, delta := w.minute, w.budgetStart, r.Tokens()
	if res := r.Reserved; res != nil {
		// The reservation's windows take the difference; a window that
		// has passed since is left as it was.
		minute, budget, delta = res.minute, res.budgetStart, r.Tokens()-res.Tokens
	}
	if w.minute.Equal(minute) && r.tpm {
		w.tokens = max(0, w.tokens+delta)
	}
	if r.budgetPeriod > 0 && w.budgetStart.Equal(budget) {
		w.budgetTokens = max(0, w.budgetTokens+delta)
	}
}

// seed sets the tokens a key's budget period had used before the process
// started.
func (l *memoryLimits) seed(name string, start time.Time, tokens int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.byKey[name]
	if w == nil {
		w = &windows{}
		l.byKey[name] = w
	}
	w.seededStart, w.seededTokens = start.Unix(), tokens
}

// sharedLimits counts in the database's limit_counters (Postgres: every
// replica counts in the same row of a key).
type sharedLimits struct{ s *Store }

// reserveQuery checks a request against every limit of its key and
// reserves its tokens in one statement on the key's one row: Postgres
// locks the row for the upsert and evaluates the WHERE on its latest
// version, so that requests admitted together on any replica never hold
// more than a limit. A row in a past minute or budget period counts as
// empty. No row is returned when a limit refuses.
//
// Arguments: key, minute, budget start, tokens, rpm, tpm, budget.
const reserveQuery = `INSERT INTO limit_counters AS c (key_name, minute_start, minute_requests, minute_tokens, budget_start, budget_tokens)
	VALUES ($1, $2, 1, $4, $3, $4)
	ON CONFLICT (key_name) DO UPDATE SET
		minute_start = $2,
		minute_requests = (CASE WHEN c.minute_start = $2 THEN c.minute_requests ELSE 0 END) + 1,
		minute_tokens = (CASE WHEN c.minute_start = $2 THEN c.minute_tokens ELSE 0 END) + $4,
		budget_start = $3,
		budget_tokens = (CASE WHEN c.budget_start = $3 THEN c.budget_tokens ELSE 0 END) + $4
	WHERE ($5::BIGINT = 0 OR (CASE WHEN c.minute_start = $2 THEN c.minute_requests ELSE 0 END) < $5::BIGINT)
		AND ($6::BIGINT = 0 OR (CASE WHEN c.minute_start = $2 THEN c.minute_tokens ELSE 0 END) + $4 <= $6::BIGINT)
		AND ($7::BIGINT = 0 OR (CASE WHEN c.budget_start = $3 THEN c.budget_tokens ELSE 0 END) + $4 <= $7::BIGINT)
	RETURNING minute_requests`

func (l sharedLimits) reserve(ctx context.Context, k *Key, tokens int64, now time.Time) (*Reservation, error) {
	s := l.s
	minute := now.Truncate(time.Minute)
	var budgetStart time.Time
	var bs int64 // budgetStart in Unix seconds; 0 for a key without a budget
	if k.BudgetTokens > 0 {
		budgetStart = periodStart(now, k.BudgetPeriod)
		bs = budgetStart.Unix()
	}
	// A request larger than a whole limit never fits (the statement's
	// first insert of a key checks nothing).
	if k.BudgetTokens > 0 && tokens > k.BudgetTokens {
		return nil, budgetRefusal(k, 0, tokens, budgetStart, now)
	}
	if k.TPM > 0 && tokens > k.TPM {
		return nil, minuteRefusal(k, "tokens", 0, k.TPM, tokens, now)
	}
	var n int64
	err := s.db.QueryRowContext(ctx, reserveQuery, k.Name, minute.Unix(), bs, tokens, k.RPM, k.TPM, k.BudgetTokens).Scan(&n)
	if err == nil {
		return &Reservation{Tokens: tokens, minute: minute, budgetStart: budgetStart}, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, s.unreachable(fmt.Sprintf("counting a request of key %q", k.Name), err)
	}
	// Refused: read what refused it, for the message.
	var mStart, requests, mTokens, bStart, bTokens int64
	if err := s.db.QueryRowContext(ctx, `SELECT minute_start, minute_requests, minute_tokens, budget_start, budget_tokens FROM limit_counters WHERE key_name = $1`, k.Name).
		Scan(&mStart, &requests, &mTokens, &bStart, &bTokens); err != nil {
		return nil, s.unreachable(fmt.Sprintf("reading the limits of key %q", k.Name), err)
	}
	if mStart != minute.Unix() {
		requests, mTokens = 0, 0
	}
	if bStart != bs {
		bTokens = 0
	}
	switch {
	case k.BudgetTokens > 0 && over(bTokens, tokens, k.BudgetTokens):
		return nil, budgetRefusal(k, bTokens, tokens, budgetStart, now)
	case k.RPM > 0 && requests >= k.RPM:
		return nil, minuteRefusal(k, "requests", requests, k.RPM, 0, now)
	case k.TPM > 0 && over(mTokens, tokens, k.TPM):
		return nil, minuteRefusal(k, "tokens", mTokens, k.TPM, tokens, now)
	}
	// A request that ended meanwhile gave back some of its reservation:
	// the refusal held when the statement ran.
	switch {
	case k.BudgetTokens > 0:
		return nil, budgetRefusal(k, bTokens, tokens, budgetStart, now)
	case k.TPM > 0:
		return nil, minuteRefusal(k, "tokens", mTokens, k.TPM, tokens, now)
	}
	return nil, minuteRefusal(k, "requests", requests, k.RPM, 0, now)
}

func (sharedLimits) settle(*Record, time.Time) {}

// settleQuery adds a written record's difference from its reservation to
// the windows it was reserved in (a window that has passed since is left
// as it was; a record without a reservation counts in the windows of now).
//
// Arguments: key, minute, budget start, tokens.
const settleQuery = `INSERT INTO limit_counters AS c (key_name, minute_start, minute_requests, minute_tokens, budget_start, budget_tokens)
	VALUES ($1, $2, 0, GREATEST($4::BIGINT, 0), $3, GREATEST($4::BIGINT, 0))
	ON CONFLICT (key_name) DO UPDATE SET
		minute_start = GREATEST(c.minute_start, $2),
		minute_requests = CASE WHEN c.minute_start < $2 THEN 0 ELSE c.minute_requests END,
		minute_tokens = CASE WHEN c.minute_start = $2 THEN GREATEST(c.minute_tokens + $4::BIGINT, 0) WHEN c.minute_start < $2 THEN GREATEST($4::BIGINT, 0) ELSE c.minute_tokens END,
		budget_start = GREATEST(c.budget_start, $3),
		budget_tokens = CASE WHEN c.budget_start = $3 THEN GREATEST(c.budget_tokens + $4::BIGINT, 0) WHEN c.budget_start < $3 THEN GREATEST($4::BIGINT, 0) ELSE c.budget_tokens END`

// settleShared settles the reservations of written records, in the
// transaction tx that writes them.
func (s *Store) settleShared(ctx context.Context, tx *sql.Tx, recs []Record, now time.Time) error {
	type window struct {
		key           string
		minute, start int64
	}
	add := map[window]int64{}
	for i := range recs {
		r := &recs[i]
		if !r.limited {
			continue
		}
		w, delta := window{r.Key, now.Truncate(time.Minute).Unix(), 0}, r.Tokens()
		if r.budgetPeriod > 0 {
			w.start = periodStart(now, r.budgetPeriod).Unix()
		}
		if res := r.Reserved; res != nil {
			w.minute, w.start, delta = res.minute.Unix(), 0, r.Tokens()-res.Tokens
			if !res.budgetStart.IsZero() {
				w.start = res.budgetStart.Unix()
			}
		}
		if delta != 0 {
			add[w] += delta
		}
	}
	for w, n := range add {
		if _, err := tx.ExecContext(ctx, settleQuery, w.key, w.minute, w.start, n); err != nil {
			return err
		}
	}
	return nil
}
