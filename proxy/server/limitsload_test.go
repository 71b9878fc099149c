package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/pgtest"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestLimitsHoldUnderLoad: 100 requests at once (the backend's first
// token 300 ms away) on a key with a budget of 400 tokens a day, then on
// one with a tpm of 300: the tokens the store records never pass the
// limit, at least one request is answered, and every other one is
// refused 429 rate_limit_error with Retry-After. On SQLite with one
// proxy; on Postgres with two proxies sharing the database.
func TestLimitsHoldUnderLoad(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
		g := newGate(t, "sqlite://"+t.TempDir()+"/dragoman.db", c)
		h := newHarness(t, harnessOptions{gate: g, stub: stub.Options{FirstTokenDelay: 300 * time.Millisecond}})
		limitsUnderLoad(t, []*keys.Gate{g}, []*harness{h})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.New(t)
		c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
		g1, g2 := newGate(t, url, c), newGate(t, url, c)
		h1 := newHarness(t, harnessOptions{gate: g1, stub: stub.Options{FirstTokenDelay: 300 * time.Millisecond}})
		h2 := newHarness(t, harnessOptions{gate: g2, stub: stub.Options{FirstTokenDelay: 300 * time.Millisecond}})
		limitsUnderLoad(t, []*keys.Gate{g1, g2}, []*harness{h1, h2})
	})
}

func limitsUnderLoad(t *testing.T, gates []*keys.Gate, proxies []*harness) {
	ctx := context.Background()
	for _, l := range []struct {
		spec  keys.Spec
		limit int64
	}{
		{keys.Spec{Name: "budget", BudgetTokens: 400, BudgetPeriod: 24 * time.Hour}, 400},
		{keys.Spec{Name: "tpm", TPM: 300}, 300},
	} {
		text := createKey(t, gates[0], l.spec)
		for _, g := range gates[1:] {
			if err := g.Reload(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := proxies[i%len(proxies)]
				body := fmt.Sprintf(`{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"request %d of many at once"}]}`, i)
				req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/messages", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+text)
				<-start
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 && (resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"rate_limit_error"`)) {
					t.Errorf("%d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		// Each request's record is handed to the gate after its answer.
		var spent, answered, recorded int64
		waitFor(t, func() bool {
			for _, g := range gates {
				if err := g.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := gates[0].Store().Rows(ctx, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			spent, answered, recorded = 0, 0, 0
			for _, r := range rows {
				if r.Key == l.spec.Name {
					recorded++
					spent += r.Input + r.Output
					if r.Status == 200 {
						answered++
					}
				}
			}
			return recorded == 100
		})
		t.Logf("%s: statuses %v, %d tokens spent of %d", l.spec.Name, statuses, spent, l.limit)
		if statuses[200] < 1 || spent > l.limit || answered != int64(statuses[200]) || statuses[200]+statuses[429] != 100 {
			t.Errorf("%s: statuses %v, %d rows answered, %d tokens spent of %d", l.spec.Name, statuses, answered, spent, l.limit)
		}
	}
}
