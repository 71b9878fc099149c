package keys

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Record is what one request made with a key did.
type Record struct {
	At                    time.Time
	Key                   string // the key's name
	Alias, Backend, Kind  string // kind: the endpoint (messages, chat_completions, responses, ...)
	Input, Output, Cached int64
	Estimated             bool // no usage from the backend: the counts are the proxy's estimate
	Duration              time.Duration
	Status                int
	// Reserved is what Gate.Reserve reserved for the request (nil: none):
	// the record's tokens take its place.
	Reserved *Reservation

	budgetPeriod time.Duration // the key's budget period (0: no budget), for its budget window
	tpm          bool          // the key has a tpm: its tokens are counted in the minute window
	limited      bool          // the key has a tpm or a budget: its tokens are counted in the windows
}

// Tokens is what the record counts against tpm and a budget.
func (r *Record) Tokens() int64 { return r.Input + r.Output }

// Usage sums a key's requests and tokens.
type Usage struct {
	Requests     int64 `json:"requests"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// insertUsage writes records, and on Postgres adds their tokens to the
// shared limit windows, in one transaction.
func (s *Store) insertUsage(ctx context.Context, recs []Record, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, s.q(`INSERT INTO usage_records (at_ms, key_name, alias, backend, kind, input_tokens, output_tokens, cached_tokens, estimated, duration_ms, status)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, r := range recs {
		est := 0
		if r.Estimated {
			est = 1
		}
		if _, err := ins.ExecContext(ctx, r.At.UnixMilli(), r.Key, r.Alias, r.Backend, r.Kind, r.Input, r.Output, r.Cached, est, r.Duration.Milliseconds(), r.Status); err != nil {
			return err
		}
	}
	if s.dialect == Postgres {
		if err := s.settleShared(ctx, tx, recs, now); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// UsageSince sums the usage of each key since t, by name.
func (s *Store) UsageSince(ctx context.Context, t time.Time) (map[string]Usage, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT key_name, COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0)
		FROM usage_records WHERE at_ms >= ? GROUP BY key_name`), t.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("database: reading usage: %v", err)
	}
	defer rows.Close()
	out := map[string]Usage{}
	for rows.Next() {
		var name string
		var u Usage
		if err := rows.Scan(&name, &u.Requests, &u.InputTokens, &u.OutputTokens); err != nil {
			return nil, fmt.Errorf("database: reading usage: %v", err)
		}
		out[name] = u
	}
	return out, rows.Err()
}

// KeyUsageSince sums one key's usage since t.
func (s *Store) KeyUsageSince(ctx context.Context, name string, t time.Time) (Usage, error) {
	var u Usage
	err := s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0)
		FROM usage_records WHERE key_name = ? AND at_ms >= ?`), name, t.UnixMilli()).Scan(&u.Requests, &u.InputTokens, &u.OutputTokens)
	if err != nil {
		return Usage{}, fmt.Errorf("database: reading usage: %v", err)
	}
	return u, nil
}

// PeriodStart is where the usage a key's listing shows starts at now: its
// budget period's start, or the day's (UTC) for a key without a budget.
func (k *Key) PeriodStart(now time.Time) time.Time {
	if k.BudgetPeriod > 0 {
		return periodStart(now, k.BudgetPeriod)
	}
	return periodStart(now, 24*time.Hour)
}

// Rows returns the usage records since t, oldest first (for tests and
// exports).
func (s *Store) Rows(ctx context.Context, since time.Time) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT at_ms, key_name, alias, backend, kind, input_tokens, output_tokens, cached_tokens, estimated, duration_ms, status
		FROM usage_records WHERE at_ms >= ? ORDER BY at_ms`), since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("database: reading usage: %v", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var at, dur int64
		var est int
		if err := rows.Scan(&at, &r.Key, &r.Alias, &r.Backend, &r.Kind, &r.Input, &r.Output, &r.Cached, &est, &dur, &r.Status); err != nil {
			return nil, err
		}
		r.At, r.Estimated, r.Duration = time.UnixMilli(at).UTC(), est == 1, time.Duration(dur)*time.Millisecond
		out = append(out, r)
	}
	return out, rows.Err()
}

// Series is one line of a chart: the tokens (input + output) of one key or
// one backend in each hour.
type Series struct {
	Label  string
	Tokens []int64 // one per hour, oldest first
}

// TokensPerHour returns the tokens of each hour from since (truncated to
// its hour) to now, by "key" or by "backend", the largest first.
func (s *Store) TokensPerHour(ctx context.Context, since, now time.Time, by string) ([]Series, error) {
	col := "key_name"
	if by == "backend" {
		col = "backend"
	}
	start := since.UTC().Truncate(time.Hour)
	hours := int(now.Sub(start)/time.Hour) + 1
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT label, hour, SUM(tokens) FROM (
		SELECT `+col+` AS label, (at_ms - ?) / 3600000 AS hour, input_tokens + output_tokens AS tokens FROM usage_records WHERE at_ms >= ?
		) AS recent GROUP BY label, hour`), start.UnixMilli(), start.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("database: reading usage: %v", err)
	}
	defer rows.Close()
	byLabel := map[string]*Series{}
	for rows.Next() {
		var label string
		var hour, tokens int64
		if err := rows.Scan(&label, &hour, &tokens); err != nil {
			return nil, err
		}
		if hour < 0 || hour >= int64(hours) {
			continue
		}
		sr := byLabel[label]
		if sr == nil {
			sr = &Series{Label: label, Tokens: make([]int64, hours)}
			byLabel[label] = sr
		}
		sr.Tokens[hour] += tokens
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]Series, 0, len(byLabel))
	for _, sr := range byLabel {
		out = append(out, *sr)
	}
	sort.Slice(out, func(i, j int) bool {
		ti, tj := sum(out[i].Tokens), sum(out[j].Tokens)
		if ti != tj {
			return ti > tj
		}
		return out[i].Label < out[j].Label
	})
	return out, nil
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// Purge deletes the usage records older than keep, and the limit windows
// no limit reads any more.
func (s *Store) Purge(ctx context.Context, now time.Time, keep time.Duration) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.q(`DELETE FROM usage_records WHERE at_ms < ?`), now.Add(-keep).UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("database: purging usage: %v", err)
	}
	n, _ := res.RowsAffected()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM limit_windows WHERE (window_kind = 'm' AND window_start < ?) OR window_start < ?`),
		now.Add(-time.Hour).Unix(), now.Add(-maxBudgetPeriod-24*time.Hour).Unix()); err != nil {
		return n, fmt.Errorf("database: purging limit windows: %v", err)
	}
	return n, nil
}
