package keys

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// eachStore runs f on a new SQLite file and on a new database of a real
// Postgres.
func eachStore(t *testing.T, f func(t *testing.T, url string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "sqlite://"+filepath.Join(t.TempDir(), "dragoman.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.New(t)) })
}

// clock is a test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock {
	// Early in a minute and a day: the windows do not roll under the test.
	return &clock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
}

func open(t *testing.T, url string, c *clock) (*Store, *Gate) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGate(ctx, s, Options{Now: c.now, Reload: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close(context.Background())
		s.Close()
	})
	return s, g
}

func refusal(t *testing.T, err error, want Reason) *Refusal {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) || r.Reason != want {
		t.Fatalf("got %v, want a refusal of reason %d", err, want)
	}
	return r
}

func TestCreateUseRevoke(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		s, g := open(t, url, c)
		k, text, err := g.Create(ctx, Spec{Name: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text, Prefix) || len(text) < 40 {
			t.Fatalf("key %q", text)
		}
		got, err := g.Authenticate(text)
		if err != nil || got.Name != "alice" {
			t.Fatalf("Authenticate: %v, %v", got, err)
		}
		if err := g.Admit(ctx, got, "any", "any"); err != nil {
			t.Fatal(err)
		}
		// The store holds the hash, not the key.
		var hash string
		if err := s.db.QueryRow(s.q(`SELECT key_hash FROM api_keys WHERE name = ?`), "alice").Scan(&hash); err != nil {
			t.Fatal(err)
		}
		if hash != HashKey(text) || strings.Contains(hash, text[len(Prefix):len(Prefix)+8]) {
			t.Fatalf("stored %q", hash)
		}
		if _, _, err := g.Create(ctx, Spec{Name: "alice"}); !errors.Is(err, ErrExists) {
			t.Fatalf("second alice: %v", err)
		}
		if _, err := g.Authenticate(text + "x"); err == nil {
			t.Fatal("a wrong key authenticates")
		} else if strings.Contains(err.Error(), text) {
			t.Fatalf("the error holds the key: %v", err)
		}
		if err := g.Revoke(ctx, k.Name); err != nil {
			t.Fatal(err)
		}
		r := refusal(t, func() error { _, err := g.Authenticate(text); return err }(), Unauthenticated)
		if !strings.Contains(r.Message, "revoked") || strings.Contains(r.Message, text) {
			t.Fatalf("message %q", r.Message)
		}
		if err := g.Revoke(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("revoke nobody: %v", err)
		}
		// Revoked on the command line (another process, the same store):
		// the gate refuses it once it reads the keys again.
		_, text2, err := s.Create(ctx, Spec{Name: "bob"}, c.now())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Authenticate(text2); err != nil {
			t.Fatal(err)
		}
		if err := s.Revoke(ctx, "bob", c.now()); err != nil {
			t.Fatal(err)
		}
		if err := g.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		refusal(t, func() error { _, err := g.Authenticate(text2); return err }(), Unauthenticated)
	})
}

func TestExpiry(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		_, g := open(t, url, c)
		_, text, err := g.Create(ctx, Spec{Name: "temp", ExpiresIn: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Authenticate(text); err != nil {
			t.Fatal(err)
		}
		c.add(time.Hour)
		r := refusal(t, func() error { _, err := g.Authenticate(text); return err }(), Unauthenticated)
		if !strings.Contains(r.Message, "expired at 2026-12-01T11:00:05Z") {
			t.Fatalf("message %q", r.Message)
		}
	})
}

func TestModels(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		_, g := open(t, url, c)
		k, _, err := g.Create(ctx, Spec{Name: "one-model", Models: []string{"coder", "chat"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Admit(ctx, k, "coder", "coder"); err != nil {
			t.Fatal(err)
		}
		// A pattern's match: the model_name is allowed, the model is not named.
		if err := g.Admit(ctx, k, "chat", "chat-v2"); err != nil {
			t.Fatal(err)
		}
		r := refusal(t, g.Admit(ctx, k, "big", "big"), Forbidden)
		if !strings.Contains(r.Message, `may not use model "big"`) {
			t.Fatalf("message %q", r.Message)
		}
		list, err := g.Store().List(ctx)
		if err != nil || len(list) != 1 || strings.Join(list[0].Models, ",") != "coder,chat" {
			t.Fatalf("listed %+v, %v", list, err)
		}
	})
}

func TestRPM(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		_, g := open(t, url, c)
		k, _, err := g.Create(ctx, Spec{Name: "slow", RPM: 2})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := g.Admit(ctx, k, "m", "m"); err != nil {
				t.Fatal(err)
			}
		}
		r := refusal(t, g.Admit(ctx, k, "m", "m"), RateLimited)
		if r.RetryAfter != 55*time.Second || !strings.Contains(r.Message, "2 of its 2 requests per minute") {
			t.Fatalf("refusal %+v", r)
		}
		c.add(time.Minute)
		if err := g.Admit(ctx, k, "m", "m"); err != nil {
			t.Fatalf("the next minute: %v", err)
		}
	})
}

func TestTPM(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		_, g := open(t, url, c)
		k, _, err := g.Create(ctx, Spec{Name: "wordy", TPM: 100})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := g.Admit(ctx, k, "m", "m"); err != nil {
				t.Fatal(err)
			}
			g.Record(k, Record{Alias: "m", Backend: "b", Kind: "chat_completions", Input: 40, Output: 20, Status: 200})
			if err := g.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		r := refusal(t, g.Admit(ctx, k, "m", "m"), RateLimited)
		if !strings.Contains(r.Message, "120 of its 100 tokens per minute") || r.RetryAfter != 55*time.Second {
			t.Fatalf("refusal %+v", r)
		}
		c.add(time.Minute)
		if err := g.Admit(ctx, k, "m", "m"); err != nil {
			t.Fatalf("the next minute: %v", err)
		}
	})
}

func TestBudget(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		s, g := open(t, url, c)
		k, _, err := g.Create(ctx, Spec{Name: "thrifty", BudgetTokens: 1000, BudgetPeriod: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Admit(ctx, k, "m", "m"); err != nil {
			t.Fatal(err)
		}
		g.Record(k, Record{Alias: "m", Backend: "b", Kind: "messages", Input: 900, Output: 150, Status: 200})
		if err := g.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		r := refusal(t, g.Admit(ctx, k, "m", "m"), BudgetSpent)
		if !strings.Contains(r.Message, "1050 of its 1000 tokens per 1d used; it renews at 2026-12-02T00:00:00Z") || r.RetryAfter != 14*time.Hour-5*time.Second {
			t.Fatalf("refusal %+v", r)
		}
		// A restarted proxy knows what the period used.
		g2, err := NewGate(ctx, s, Options{Now: c.now, Reload: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer g2.Close(ctx)
		refusal(t, g2.Admit(ctx, k, "m", "m"), BudgetSpent)
		c.add(14 * time.Hour)
		if err := g2.Admit(ctx, k, "m", "m"); err != nil {
			t.Fatalf("the next day: %v", err)
		}
	})
}

func TestUsageRowsEqualTraffic(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		s, g := open(t, url, c)
		a, _, _ := g.Create(ctx, Spec{Name: "a"})
		b, _, _ := g.Create(ctx, Spec{Name: "b", TPM: 1 << 40})
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := a
				if i%4 == 0 {
					k = b
				}
				g.Record(k, Record{Alias: "m", Backend: "be", Kind: "responses", Input: int64(i), Output: 2, Cached: 1, Duration: time.Duration(i) * time.Millisecond, Status: 200, Estimated: i%10 == 0})
			}()
		}
		wg.Wait()
		if err := g.Close(ctx); err != nil {
			t.Fatal(err)
		}
		rows, err := s.Rows(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 200 {
			t.Fatalf("%d rows, want 200", len(rows))
		}
		var in, est int64
		for _, r := range rows {
			in += r.Input
			if r.Estimated {
				est++
			}
			if r.Output != 2 || r.Cached != 1 || r.Backend != "be" || r.Kind != "responses" || r.Status != 200 {
				t.Fatalf("row %+v", r)
			}
		}
		if in != 199*200/2 || est != 20 {
			t.Fatalf("input %d, estimated %d", in, est)
		}
		u, err := s.UsageSince(ctx, c.now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if u["a"].Requests != 150 || u["b"].Requests != 50 || u["a"].OutputTokens != 300 {
			t.Fatalf("usage %+v", u)
		}
		series, err := s.TokensPerHour(ctx, c.now().Add(-23*time.Hour), c.now(), "key")
		if err != nil || len(series) != 2 || len(series[0].Tokens) != 24 || series[0].Label != "a" {
			t.Fatalf("series %+v, %v", series, err)
		}
		if last := series[0].Tokens[23] + series[1].Tokens[23]; last != 199*200/2+400 {
			t.Fatalf("the last hour's tokens %d", last)
		}
	})
}

func TestRetention(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		s, g := open(t, url, c)
		k, _, _ := g.Create(ctx, Spec{Name: "old"})
		g.Record(k, Record{At: c.now().Add(-10 * 24 * time.Hour), Alias: "m", Backend: "b", Kind: "messages", Status: 200})
		g.Record(k, Record{Alias: "m", Backend: "b", Kind: "messages", Status: 200})
		if err := g.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := s.Purge(ctx, c.now(), 7*24*time.Hour)
		if err != nil || n != 1 {
			t.Fatalf("purged %d, %v", n, err)
		}
		rows, _ := s.Rows(ctx, time.Time{})
		if len(rows) != 1 {
			t.Fatalf("%d rows left", len(rows))
		}
	})
}

func TestMigrations(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		// From an empty database.
		if SchemaVersion() < 2 {
			t.Fatalf("schema version %d", SchemaVersion())
		}
		// From the previous version, with a key made there.
		s, err := openOnly(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrate(ctx, s.db, s.dialect, SchemaVersion()-1); err != nil {
			t.Fatal(err)
		}
		if v, _ := s.schemaVersion(ctx); v != SchemaVersion()-1 {
			t.Fatalf("at version %d", v)
		}
		_, text, err := s.Create(ctx, Spec{Name: "before", RPM: 7}, c.now())
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		s, g := open(t, url, c)
		if v, _ := s.schemaVersion(ctx); v != SchemaVersion() {
			t.Fatalf("at version %d after Open", v)
		}
		k, err := g.Authenticate(text)
		if err != nil || k.RPM != 7 {
			t.Fatalf("the key made before: %+v, %v", k, err)
		}
		g.Record(k, Record{Alias: "m", Backend: "b", Kind: "messages", Status: 200, Input: 3})
		if err := g.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// Opened again: nothing to apply, nothing lost.
		s2, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := s2.Rows(ctx, time.Time{})
		if len(rows) != 1 {
			t.Fatalf("%d rows", len(rows))
		}
		// A schema newer than this build knows is refused, with what to do.
		if _, err := s2.db.Exec(s2.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', 0)`), SchemaVersion()+1); err != nil {
			t.Fatal(err)
		}
		s2.Close()
		if _, err := Open(ctx, url); err == nil || !strings.Contains(err.Error(), "newer than this proxy knows") {
			t.Fatalf("newer schema: %v", err)
		}
	})
}

func TestFromEmptyDatabase(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if v, err := s.schemaVersion(ctx); err != nil || v != SchemaVersion() {
			t.Fatalf("version %d, %v", v, err)
		}
		list, err := s.List(ctx)
		if err != nil || len(list) != 0 {
			t.Fatalf("%v %v", list, err)
		}
	})
}

func TestBadURLs(t *testing.T) {
	for url, want := range map[string]string{
		"dragoman.db":                        "must start with sqlite:// or postgres://",
		"mysql://x/y":                        `scheme "mysql" is not known`,
		"sqlite://":                          "names no file",
		"postgres://u:s3cr3t@127.0.0.1:1/db": "cannot reach the postgres database",
	} {
		_, err := Open(context.Background(), url)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v (want %q)", url, err, want)
		}
	}
}

func TestSpecs(t *testing.T) {
	for _, sp := range []Spec{{Name: ""}, {Name: "master"}, {Name: "a b"}, {Name: "x", RPM: -1}, {Name: "x", BudgetTokens: 5}, {Name: "x", Models: []string{""}}} {
		if err := sp.validate(); err == nil {
			t.Errorf("%+v accepted", sp)
		}
	}
	for in, want := range map[string]time.Duration{"30m": 30 * time.Minute, "12h": 12 * time.Hour, "1d": 24 * time.Hour, "2w": 14 * 24 * time.Hour} {
		got, err := ParsePeriod(in)
		if err != nil || got != want || FormatPeriod(got) != in {
			t.Errorf("%s: %v %v %q", in, got, err, FormatPeriod(got))
		}
	}
	for _, bad := range []string{"", "d", "0d", "-1d", "1y", "1.5d"} {
		if _, err := ParsePeriod(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
