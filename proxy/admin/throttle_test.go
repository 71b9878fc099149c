package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/admin"
	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// TestMasterKeyGuessingSlowed: after 10 wrong master keys in a minute from
// one address, at the login and the API alike, the login and the API
// answer 429 with Retry-After, the right key too; each refusal is counted
// (the metric's hook); once the minute has passed (the limiter's clock,
// moved by hand) the right key works again.
func TestMasterKeyGuessingSlowed(t *testing.T) {
	ctx := context.Background()
	store, err := keys.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "dragoman.db"))
	if err != nil {
		t.Fatal(err)
	}
	gate, err := keys.NewGate(ctx, store, keys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gate.Close(ctx); store.Close() })
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	lim := authlimit.New(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	throttled := 0
	lim.Throttled = func() { mu.Lock(); throttled++; mu.Unlock() }
	srv := newServer(t, admin.New(admin.Options{Gate: gate, MasterKeys: []string{masterKey}, Limiter: lim}))
	login := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv+"/admin/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	api := func(key string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv+"/admin/api/keys", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := range 10 {
		var resp *http.Response
		if i%2 == 0 {
			resp = login("guess-" + strconv.Itoa(i))
		} else {
			resp = api("guess-" + strconv.Itoa(i))
		}
		if resp.StatusCode != 401 {
			t.Fatalf("wrong key %d: %d", i, resp.StatusCode)
		}
	}
	for name, resp := range map[string]*http.Response{"login": login(masterKey), "api": api(masterKey), "api wrong": api("guess-x")} {
		if n, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != 429 || n < 1 || n > 60 {
			t.Errorf("%s after 10 wrong keys: %d, Retry-After %q", name, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	mu.Lock()
	if throttled != 3 {
		t.Errorf("%d refusals counted, want 3", throttled)
	}
	now = now.Add(time.Minute)
	mu.Unlock()
	if resp := api(masterKey); resp.StatusCode != 200 {
		t.Errorf("the API with the right key, a minute later: %d", resp.StatusCode)
	}
	if resp := login(masterKey); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the login with the right key, a minute later: %d", resp.StatusCode)
	}
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func newServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
