package keys

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReservationsHoldUnderLoad: 100 requests at once on a key with a
// budget, and on one with a tpm, each reserving 42 tokens (its prompt and
// max_tokens) and using 30: never more spent than the limit, and at least
// one admitted (more than limit/42 when some requests ended, giving back
// what they reserved beyond their use, before the last were admitted). Once the requests
// have ended their reservations are their real usage: what is left is
// the limit less what was spent. On Postgres two gates (two replicas)
// share the key.
func TestReservationsHoldUnderLoad(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		_, g := open(t, url, c)
		gates := []*Gate{g}
		if strings.HasPrefix(url, "postgres") {
			_, g2 := open(t, url, c)
			gates = append(gates, g2)
		}
		budget, _, err := g.Create(ctx, Spec{Name: "budget", BudgetTokens: 400, BudgetPeriod: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		tpm, _, err := g.Create(ctx, Spec{Name: "tpm", TPM: 300})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []struct {
			key   *Key
			limit int64
		}{{budget, 400}, {tpm, 300}} {
			const reserve, use = 42, 30
			var admitted, spent atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range 100 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					gate := gates[i%len(gates)]
					<-start
					res, err := gate.Reserve(ctx, k.key, reserve, "m", "m")
					if err != nil {
						var r *Refusal
						if !errors.As(err, &r) || r.RetryAfter <= 0 {
							t.Errorf("%s: %v", k.key.Name, err)
						}
						return
					}
					admitted.Add(1)
					time.Sleep(50 * time.Millisecond) // the backend's answer
					spent.Add(use)
					gate.Record(k.key, Record{Alias: "m", Backend: "b", Kind: "messages", Input: 10, Output: use - 10, Status: 200, Reserved: res})
				}()
			}
			close(start)
			wg.Wait()
			n := admitted.Load()
			if n < 1 || spent.Load() > k.limit {
				t.Fatalf("%s: %d admitted, %d tokens spent of %d", k.key.Name, n, spent.Load(), k.limit)
			}
			for _, gate := range gates {
				if err := gate.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// What is left fits (limit - spent) / reserve more requests.
			left := (k.limit - spent.Load()) / reserve
			for i := range left {
				if _, err := gates[0].Reserve(ctx, k.key, reserve, "m", "m"); err != nil {
					t.Fatalf("%s: after the settlement, request %d of %d: %v", k.key.Name, i, left, err)
				}
			}
			if _, err := gates[0].Reserve(ctx, k.key, reserve, "m", "m"); err == nil {
				t.Fatalf("%s: more admitted than the limit holds", k.key.Name)
			}
			t.Logf("%s: %d of 100 admitted, %d tokens spent of %d, %d more fitted after", k.key.Name, n, spent.Load(), k.limit, left)
		}
	})
}

// TestReservationReleased: a request that fails (no usage) gives its
// reservation back; one larger than the whole limit is refused without a
// Retry-After, saying to send a smaller max_tokens.
func TestReservationReleased(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		ctx, c := context.Background(), newClock()
		_, g := open(t, url, c)
		k, _, err := g.Create(ctx, Spec{Name: "k", TPM: 100, BudgetTokens: 1000, BudgetPeriod: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		res, err := g.Reserve(ctx, k, 80, "m", "m")
		if err != nil {
			t.Fatal(err)
		}
		r := refusal(t, func() error { _, err := g.Reserve(ctx, k, 80, "m", "m"); return err }(), RateLimited)
		if !strings.Contains(r.Message, "80 of its 100 tokens per minute used or reserved, and this request reserves 80") || r.RetryAfter != 55*time.Second {
			t.Fatalf("refusal %+v", r)
		}
		g.Record(k, Record{Alias: "m", Backend: "b", Kind: "messages", Status: 502, Reserved: res})
		if err := g.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Reserve(ctx, k, 80, "m", "m"); err != nil {
			t.Fatalf("after the failed request gave its reservation back: %v", err)
		}
		r = refusal(t, func() error { _, err := g.Reserve(ctx, k, 101, "m", "m"); return err }(), RateLimited)
		if r.RetryAfter != 0 || !strings.Contains(r.Message, "send a smaller max_tokens") {
			t.Fatalf("too large: %+v", r)
		}
		r = refusal(t, func() error { _, err := g.Reserve(ctx, k, 1001, "m", "m"); return err }(), BudgetSpent)
		if r.RetryAfter != 0 || !strings.Contains(r.Message, "more than the key's 1000 tokens per 1d") {
			t.Fatalf("too large for the budget: %+v", r)
		}
	})
}
