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
	RetryAfter time.Duration // 0: retrying will not help (401, 403)
}

func (r *Refusal) Error() string { return r.Message }

// limiter counts the requests and tokens of each key in its windows: a
// minute (rpm, tpm) and the key's budget period.
type limiter interface {
	// admit counts a request of k at now, or refuses it (*Refusal).
	admit(ctx context.Context, k *Key, now time.Time) error
	// spend counts the tokens of a request that ended (in the process;
	// the shared limiter counts them when the record is written).
	spend(r *Record, now time.Time)
}

func minuteRefusal(k *Key, what string, used, limit int64, now time.Time) *Refusal {
	next := now.Truncate(time.Minute).Add(time.Minute)
	return &Refusal{Reason: RateLimited, RetryAfter: retryAfter(next, now),
		Message: fmt.Sprintf("rate limit of key %q reached: %d of its %d %s per minute used; retry after %s", k.Name, used, limit, what, next.UTC().Format(time.RFC3339))}
}

func budgetRefusal(k *Key, used int64, start, now time.Time) *Refusal {
	renews := start.Add(k.BudgetPeriod)
	return &Refusal{Reason: BudgetSpent, RetryAfter: retryAfter(renews, now),
		Message: fmt.Sprintf("budget of key %q spent: %d of its %d tokens per %s used; it renews at %s", k.Name, used, k.BudgetTokens, FormatPeriod(k.BudgetPeriod), renews.UTC().Format(time.RFC3339))}
}

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

func (w *windows) rollBudget(k *Key, now time.Time) {
	if k.BudgetTokens == 0 {
		return
	}
	if start := periodStart(now, k.BudgetPeriod); !w.budgetStart.Equal(start) {
		w.budgetStart, w.budgetTokens = start, 0
		if w.seededStart == start.Unix() {
			w.budgetTokens = w.seededTokens
		}
	}
}

func (l *memoryLimits) admit(_ context.Context, k *Key, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windowsOf(k.Name, now)
	w.rollBudget(k, now)
	switch {
	case k.BudgetTokens > 0 && w.budgetTokens >= k.BudgetTokens:
		return budgetRefusal(k, w.budgetTokens, w.budgetStart, now)
	case k.RPM > 0 && w.requests >= k.RPM:
		return minuteRefusal(k, "requests", w.requests, k.RPM, now)
	case k.TPM > 0 && w.tokens >= k.TPM:
		return minuteRefusal(k, "tokens", w.tokens, k.TPM, now)
	}
	w.requests++
	return nil
}

func (l *memoryLimits) spend(r *Record, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windowsOf(r.Key, now)
	w.tokens += r.Tokens()
	if r.budgetPeriod > 0 {
		if start := periodStart(now, r.budgetPeriod); w.budgetStart.Equal(start) {
			w.budgetTokens += r.Tokens()
		}
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

// sharedLimits counts in the database's limit_windows (Postgres: every
// replica counts in the same rows).
type sharedLimits struct{ s *Store }

func (l sharedLimits) admit(ctx context.Context, k *Key, now time.Time) error {
	s := l.s
	if k.BudgetTokens > 0 {
		start := periodStart(now, k.BudgetPeriod)
		var used int64
		err := s.db.QueryRowContext(ctx, s.q(`SELECT tokens FROM limit_windows WHERE key_name = ? AND window_kind = 'b' AND window_start = ?`), k.Name, start.Unix()).Scan(&used)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("database: reading the budget of key %q: %v", k.Name, err)
		}
		if used >= k.BudgetTokens {
			return budgetRefusal(k, used, start, now)
		}
	}
	if k.RPM == 0 && k.TPM == 0 {
		return nil
	}
	minute := now.Truncate(time.Minute)
	var n int64
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO limit_windows (key_name, window_kind, window_start, requests, tokens) VALUES (?, 'm', ?, 1, 0)
		ON CONFLICT (key_name, window_kind, window_start) DO UPDATE SET requests = limit_windows.requests + 1
		WHERE (? = 0 OR limit_windows.requests < ?) AND (? = 0 OR limit_windows.tokens < ?)
		RETURNING requests`), k.Name, minute.Unix(), k.RPM, k.RPM, k.TPM, k.TPM).Scan(&n)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("database: counting a request of key %q: %v", k.Name, err)
	}
	var requests, tokens int64
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT requests, tokens FROM limit_windows WHERE key_name = ? AND window_kind = 'm' AND window_start = ?`), k.Name, minute.Unix()).Scan(&requests, &tokens); err != nil {
		return fmt.Errorf("database: reading the limits of key %q: %v", k.Name, err)
	}
	if k.RPM > 0 && requests >= k.RPM {
		return minuteRefusal(k, "requests", requests, k.RPM, now)
	}
	return minuteRefusal(k, "tokens", tokens, k.TPM, now)
}

func (sharedLimits) spend(*Record, time.Time) {}

// spendShared adds the tokens of written records to the minute window and
// the budget windows of their keys, in the transaction tx that writes them.
func (s *Store) spendShared(ctx context.Context, tx *sql.Tx, recs []Record, now time.Time) error {
	type window struct {
		key, kind string
		start     int64
	}
	add := map[window]int64{}
	for i := range recs {
		r := &recs[i]
		if r.Tokens() == 0 || !r.limited {
			continue
		}
		add[window{r.Key, "m", now.Truncate(time.Minute).Unix()}] += r.Tokens()
		if r.budgetPeriod > 0 {
			add[window{r.Key, "b", periodStart(now, r.budgetPeriod).Unix()}] += r.Tokens()
		}
	}
	for w, n := range add {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO limit_windows (key_name, window_kind, window_start, requests, tokens) VALUES (?, ?, ?, 0, ?)
			ON CONFLICT (key_name, window_kind, window_start) DO UPDATE SET tokens = limit_windows.tokens + EXCLUDED.tokens`), w.key, w.kind, w.start, n); err != nil {
			return err
		}
	}
	return nil
}
