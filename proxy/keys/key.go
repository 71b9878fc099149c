package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Key is a key's record: its name and limits, never its text.
type Key struct {
	Name         string
	Models       []string // the model_names it may use; none: all
	RPM, TPM     int64    // requests, tokens (input + output) per minute; 0: no limit
	BudgetTokens int64    // tokens per BudgetPeriod; 0: no budget
	BudgetPeriod time.Duration
	CreatedAt    time.Time
	ExpiresAt    time.Time // zero: never
	RevokedAt    time.Time // zero: not revoked

	hash string
}

// Revoked says whether the key was revoked.
func (k *Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// Expired says whether the key is past its expiry at now.
func (k *Key) Expired(now time.Time) bool { return !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt) }

// Allows says whether the key may use model (a model_name, or the model
// the client sent).
func (k *Key) Allows(models ...string) bool {
	if len(k.Models) == 0 {
		return true
	}
	for _, allowed := range k.Models {
		for _, m := range models {
			if m == allowed {
				return true
			}
		}
	}
	return false
}

// Spec is what a new key is made with.
type Spec struct {
	Name         string
	Models       []string
	RPM, TPM     int64
	BudgetTokens int64
	BudgetPeriod time.Duration
	ExpiresIn    time.Duration // 0: never
}

// Prefix starts every key the proxy makes, so that a leaked one is
// recognized (by secret scanners too).
const Prefix = "sk-dm-"

// ReservedName is the name the metrics and the usage give the proxy's own
// (master) key: no key may take it.
const ReservedName = "master"

// UnknownName is the key label the metrics give a request whose key was
// refused (or that sent none): no key may take it.
const UnknownName = "unknown"

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// maxBudgetPeriod is the longest budget period (the limit windows older
// than it are purged).
const maxBudgetPeriod = 366 * 24 * time.Hour

// ErrExists is the error of a Create whose name is taken.
var ErrExists = errors.New("a key of that name exists")

// ErrNotFound is the error of a key name the store does not hold.
var ErrNotFound = errors.New("no key of that name")

func (sp Spec) validate() error {
	switch {
	case !namePattern.MatchString(sp.Name):
		return fmt.Errorf("key name %q: use 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", sp.Name)
	case sp.Name == ReservedName:
		return fmt.Errorf("key name %q is the proxy's own key's in the metrics and usage: choose another", ReservedName)
	case sp.Name == UnknownName:
		return fmt.Errorf("key name %q is the metrics' name for a request whose key was refused: choose another", UnknownName)
	case sp.RPM < 0 || sp.TPM < 0 || sp.BudgetTokens < 0:
		return errors.New("rpm, tpm and budget_tokens must be 0 (no limit) or positive")
	case sp.BudgetTokens > 0 && sp.BudgetPeriod <= 0:
		return errors.New("budget_tokens needs budget_period, e.g. 1d, 7d or 30d")
	case sp.BudgetPeriod < 0 || sp.BudgetPeriod > 0 && sp.BudgetPeriod < time.Minute || sp.BudgetPeriod > maxBudgetPeriod:
		return errors.New("budget_period must be from a minute to 366 days, e.g. 1h, 1d, 7d, 30d")
	case sp.ExpiresIn < 0:
		return errors.New("expires must be positive, e.g. 30d")
	}
	for _, m := range sp.Models {
		if m == "" || strings.Contains(m, ",") {
			return fmt.Errorf("models: %q is not a model_name", m)
		}
	}
	return nil
}

// HashKey is the stored form of a key's text.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func newKeyText() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return Prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// Create makes a key, stores its hash and returns its text, which nothing
// keeps: show it to its owner once.
func (s *Store) Create(ctx context.Context, sp Spec, now time.Time) (*Key, string, error) {
	if err := sp.validate(); err != nil {
		return nil, "", err
	}
	text, err := newKeyText()
	if err != nil {
		return nil, "", fmt.Errorf("making a key: %v", err)
	}
	k := &Key{Name: sp.Name, Models: sp.Models, RPM: sp.RPM, TPM: sp.TPM, BudgetTokens: sp.BudgetTokens,
		BudgetPeriod: sp.BudgetPeriod, CreatedAt: now.UTC().Truncate(time.Second), hash: HashKey(text)}
	if sp.ExpiresIn > 0 {
		k.ExpiresAt = now.Add(sp.ExpiresIn).UTC().Truncate(time.Second)
	}
	var exists int
	err = s.db.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM api_keys WHERE name = ?`), k.Name).Scan(&exists)
	if err != nil {
		return nil, "", fmt.Errorf("database: %v", err)
	}
	if exists > 0 {
		return nil, "", fmt.Errorf("key %q: %w (revoked keys keep their name for their usage): choose another name", k.Name, ErrExists)
	}
	_, err = s.db.ExecContext(ctx, s.q(`INSERT INTO api_keys (name, key_hash, models, rpm, tpm, budget_tokens, budget_period_seconds, created_at, expires_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`),
		k.Name, k.hash, strings.Join(k.Models, ","), k.RPM, k.TPM, k.BudgetTokens, int64(k.BudgetPeriod/time.Second), k.CreatedAt.Unix(), unixOrZero(k.ExpiresAt))
	if err != nil {
		return nil, "", fmt.Errorf("database: storing key %q: %v", k.Name, err)
	}
	return k, text, nil
}

// Revoke revokes the key named name; its usage stays.
func (s *Store) Revoke(ctx context.Context, name string, now time.Time) error {
	res, err := s.db.ExecContext(ctx, s.q(`UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at = 0`), now.Unix(), name)
	if err != nil {
		return fmt.Errorf("database: %v", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		// None to revoke: there is no such key, or it was revoked before.
		_, err := s.Get(ctx, name)
		return err
	}
	return nil
}

const keyColumns = `name, key_hash, models, rpm, tpm, budget_tokens, budget_period_seconds, created_at, expires_at, revoked_at`

// Get returns the key named name (ErrNotFound when there is none).
func (s *Store) Get(ctx context.Context, name string) (*Key, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+keyColumns+` FROM api_keys WHERE name = ?`), name)
	if err != nil {
		return nil, fmt.Errorf("database: %v", err)
	}
	list, err := scanKeys(rows)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("key %q: %w (keys list shows them)", name, ErrNotFound)
	}
	return list[0], nil
}

// List returns every key, revoked ones too, by name.
func (s *Store) List(ctx context.Context) ([]*Key, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("database: %v", err)
	}
	return scanKeys(rows)
}

func scanKeys(rows *sql.Rows) ([]*Key, error) {
	defer rows.Close()
	var out []*Key
	for rows.Next() {
		var (
			k                           Key
			models                      string
			period, created, exp, revok int64
		)
		if err := rows.Scan(&k.Name, &k.hash, &models, &k.RPM, &k.TPM, &k.BudgetTokens, &period, &created, &exp, &revok); err != nil {
			return nil, fmt.Errorf("database: reading keys: %v", err)
		}
		if models != "" {
			k.Models = strings.Split(models, ",")
		}
		k.BudgetPeriod = time.Duration(period) * time.Second
		k.CreatedAt = time.Unix(created, 0).UTC()
		k.ExpiresAt = timeOrZero(exp)
		k.RevokedAt = timeOrZero(revok)
		out = append(out, &k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("database: reading keys: %v", err)
	}
	return out, nil
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func timeOrZero(sec int64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// ParsePeriod reads a period or an age: a whole number and a unit, m
// (minutes), h (hours), d (days) or w (weeks): 30m, 12h, 1d, 7d, 4w.
func ParsePeriod(s string) (time.Duration, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("%q is not a period: write a number and m, h, d or w, e.g. 1d", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n <= 0 || n > 100000 {
		return 0, fmt.Errorf("%q is not a period: write a positive whole number and m, h, d or w, e.g. 30d", s)
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, fmt.Errorf("%q is not a period: its unit must be m, h, d or w, e.g. 7d", s)
	}
	return time.Duration(n) * unit, nil
}

// FormatPeriod writes a period as ParsePeriod reads it ("" for none).
func FormatPeriod(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d%(7*24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(7*24*time.Hour)), 10) + "w"
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
}

// periodStart is the start of the period of length p that holds t: periods
// are aligned on UTC (a day starts at midnight UTC, a week on Monday).
func periodStart(t time.Time, p time.Duration) time.Time { return t.UTC().Truncate(p) }
