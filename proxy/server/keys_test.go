package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/pgtest"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// eachStore runs f on a new SQLite file and on a new database of a real
// Postgres.
func eachStore(t *testing.T, f func(t *testing.T, url string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "sqlite://"+filepath.Join(t.TempDir(), "dragoman.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.New(t)) })
}

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newGate(t *testing.T, url string, c *testClock) *keys.Gate {
	t.Helper()
	ctx := context.Background()
	store, err := keys.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	g, err := keys.NewGate(ctx, store, keys.Options{Now: c.now, Reload: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(ctx); store.Close() })
	return g
}

func createKey(t *testing.T, g *keys.Gate, sp keys.Spec) string {
	t.Helper()
	_, text, err := g.Create(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// wire is one endpoint, its request and where its error's type is.
type wire struct {
	path, body string
	errType    func(map[string]any) string
}

func errorObject(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["type"].(string)
	return s
}

var wires = []wire{
	{"/v1/messages", `{"model":"%s","max_tokens":32,"messages":[{"role":"user","content":"hello"}]}`, errorObject},
	{"/v1/chat/completions", `{"model":"%s","max_tokens":32,"messages":[{"role":"user","content":"hello"}]}`, errorObject},
	{"/v1/responses", `{"model":"%s","max_output_tokens":32,"input":"hello"}`, errorObject},
}

// call sends w's request for model with key, and returns the status, the
// Retry-After header, the error type (or "") and the body.
func call(t *testing.T, h *harness, w wire, key, model string) (int, string, string, string) {
	t.Helper()
	resp, b := h.do(http.MethodPost, w.path, fmt.Sprintf(w.body, model), []string{"Authorization", "Bearer " + key}, false)
	var m map[string]any
	json.Unmarshal(b, &m)
	if resp.StatusCode >= 400 && m == nil {
		t.Fatalf("%s: %d, not JSON: %s", w.path, resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), w.errType(m), string(b)
}

// TestKeysInEachWireFormat: unknown, revoked and expired keys 401; a model
// the key may not use 403 permission_error; rpm over 429 rate_limit_error
// with Retry-After; a spent budget 429 saying until when. Each in the
// caller's own error shape, none holding the key.
func TestKeysInEachWireFormat(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
		g := newGate(t, url, c)
		h := newHarness(t, harnessOptions{gate: g, metrics: true})
		ctx := context.Background()
		alice := createKey(t, g, keys.Spec{Name: "alice", Models: []string{"local-model"}, RPM: 3})
		revoked := createKey(t, g, keys.Spec{Name: "gone"})
		if err := g.Revoke(ctx, "gone"); err != nil {
			t.Fatal(err)
		}
		shortLived := createKey(t, g, keys.Spec{Name: "brief", ExpiresIn: time.Hour})
		// A budget a request fits in (each reserves its prompt and its
		// max_tokens of 32), and the next ones soon do not.
		thrifty := createKey(t, g, keys.Spec{Name: "thrifty", BudgetTokens: 60, BudgetPeriod: 24 * time.Hour})
		secrets := []string{alice, revoked, shortLived, thrifty}
		c.add(2 * time.Hour) // brief has expired
		for _, w := range wires {
			for _, bad := range []struct{ key, want string }{
				{keys.Prefix + "not-a-key", "invalid key"}, {revoked, `key \"gone\" was revoked`}, {shortLived, `key \"brief\" expired at`},
			} {
				status, _, typ, body := call(t, h, w, bad.key, "local-model")
				if status != 401 || typ != "authentication_error" || !strings.Contains(body, bad.want) {
					t.Errorf("%s %s: %d %s %s", w.path, bad.want, status, typ, body)
				}
			}
			status, _, typ, body := call(t, h, w, alice, "claude-opus-5-5")
			if status != 403 || typ != "permission_error" || !strings.Contains(body, `key \"alice\" may not use model \"claude-opus-5-5\"`) {
				t.Errorf("%s not allowed: %d %s %s", w.path, status, typ, body)
			}
			// Each format's turn starts in a new minute.
			c.add(time.Minute)
			for i := range 3 {
				if status, _, _, body := call(t, h, w, alice, "local-model"); status != 200 {
					t.Fatalf("%s request %d: %d %s", w.path, i, status, body)
				}
			}
			status, retry, typ, body := call(t, h, w, alice, "local-model")
			if n, _ := strconv.Atoi(retry); status != 429 || typ != "rate_limit_error" || n < 1 || n > 60 || !strings.Contains(body, "3 of its 3 requests per minute") {
				t.Errorf("%s over rpm: %d retry-after %q %s %s", w.path, status, retry, typ, body)
			}
			// thrifty's budget: a request or two spend it, the next is
			// refused until midnight UTC.
			if status, _, _, body := call(t, h, w, thrifty, "local-model"); status != 200 && !strings.Contains(body, "budget") {
				t.Fatalf("%s thrifty: %d %s", w.path, status, body)
			}
			waitFor(t, func() bool {
				status, _, _, _ := call(t, h, w, thrifty, "local-model")
				return status == 429
			})
			status, retry, typ, body = call(t, h, w, thrifty, "local-model")
			renews := c.now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Format(time.RFC3339)
			if status != 429 || typ != "rate_limit_error" || retry == "" || !strings.Contains(body, "it renews at "+renews) {
				t.Errorf("%s budget spent: %d %q %s %s", w.path, status, retry, typ, body)
			}
			for _, s := range secrets {
				if strings.Contains(body, s) {
					t.Errorf("a key in an answer: %s", body)
				}
			}
		}
		scrape := h.scrape()
		for _, s := range secrets {
			if strings.Contains(scrape, s) || strings.Contains(h.logs.String(), s) {
				t.Fatalf("a key in the metrics or the logs")
			}
		}
		if !strings.Contains(scrape, `key="alice"`) {
			t.Errorf("no key=\"alice\" series:\n%s", scrape)
		}
	})
}

// waitFor polls cond (the usage of a request is written, and its tokens
// counted, off the request's path).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeyUsageRowsEqualTraffic: every request made with a key is one usage
// row, with the backend's usage; the metrics count them under the key's
// name; the master key's requests are not rows.
func TestKeyUsageRowsEqualTraffic(t *testing.T) {
	eachStore(t, func(t *testing.T, url string) {
		c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
		g := newGate(t, url, c)
		h := newHarness(t, harnessOptions{gate: g, metrics: true})
		bob := createKey(t, g, keys.Spec{Name: "bob", TPM: 1 << 30})
		var in, out int64
		const n = 12
		for i := range n {
			w := wires[i%len(wires)]
			resp, b := h.do(http.MethodPost, w.path, fmt.Sprintf(w.body, "local-model"), []string{"Authorization", "Bearer " + bob}, false)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", w.path, resp.StatusCode, b)
			}
			i, o := usageOf(t, b)
			in, out = in+i, out+o
		}
		// The master key's request: served, not a row.
		if resp, b := h.do(http.MethodPost, wires[0].path, fmt.Sprintf(wires[0].body, "local-model"), nil, false); resp.StatusCode != 200 {
			t.Fatalf("master key: %d %s", resp.StatusCode, b)
		}
		ctx := context.Background()
		var rows []keys.Record
		waitFor(t, func() bool {
			if err := g.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			var err error
			rows, err = g.Store().Rows(ctx, time.Time{})
			return err == nil && len(rows) >= n
		})
		var rin, rout int64
		kinds := map[string]int{}
		for _, r := range rows {
			if r.Key != "bob" || r.Alias != "local-model" || r.Status != 200 || r.Estimated || r.Backend == "" {
				t.Errorf("row %+v", r)
			}
			rin, rout = rin+r.Input, rout+r.Output
			kinds[r.Kind]++
		}
		if len(rows) != n || rin != in || rout != out || in == 0 {
			t.Fatalf("%d rows, tokens %d/%d; the traffic: %d requests, %d/%d", len(rows), rin, rout, n, in, out)
		}
		if kinds["messages"] != 4 || kinds["chat_completions"] != 4 || kinds["responses"] != 4 {
			t.Errorf("kinds %v", kinds)
		}
		scrape := h.scrape()
		want := fmt.Sprintf(`dragoman_tokens_total{alias="local-model",backend="%s",key="bob",kind="input"} %d`, rows[0].Backend, in)
		if !strings.Contains(scrape, want) {
			t.Errorf("no %s in\n%s", want, scrape)
		}
	})
}

// usageOf reads the input and output tokens of an answer in any format.
func usageOf(t *testing.T, body []byte) (int64, int64) {
	var m struct {
		Usage map[string]any `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Usage == nil {
		t.Fatalf("no usage in %s", body)
	}
	num := func(names ...string) int64 {
		for _, n := range names {
			if v, ok := m.Usage[n].(float64); ok {
				return int64(v)
			}
		}
		return 0
	}
	return num("input_tokens", "prompt_tokens"), num("output_tokens", "completion_tokens")
}

// scrape reads the proxy's /metrics.
func (h *harness) scrape() string {
	h.t.Helper()
	resp, err := http.Get(h.proxy.URL + "/metrics")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
