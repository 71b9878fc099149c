package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/admin"
	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/internal/logbuf"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

const masterKey = "sk-admin-master-key-0c1d"

// fixture is an admin in front of an SQLite store holding three keys and
// a day of usage.
type fixture struct {
	srv     *httptest.Server
	gate    *keys.Gate
	secrets []string // the keys' texts: never on a page
	logs    *logbuf.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := keys.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "dragoman.db"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	gate, err := keys.NewGate(ctx, store, keys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gate.Close(ctx); store.Close() })
	f := &fixture{gate: gate, logs: &logbuf.Buffer{}}
	for _, sp := range []keys.Spec{
		{Name: "alice", Models: []string{"coder"}, RPM: 60, TPM: 200000},
		{Name: "bob", BudgetTokens: 5000000, BudgetPeriod: 7 * 24 * time.Hour, ExpiresIn: 30 * 24 * time.Hour},
		{Name: "ci-bot", RPM: 10},
	} {
		k, text, err := gate.Create(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		f.secrets = append(f.secrets, text)
		// A day of traffic: each key in its own hours, on two backends.
		for h := 0; h < 24; h++ {
			if (h+len(k.Name))%3 == 0 {
				continue
			}
			backend := "gpu-0"
			if h%2 == 0 {
				backend = "gpu-1"
			}
			gate.Record(k, keys.Record{At: now.Add(-time.Duration(h) * time.Hour), Alias: "coder", Backend: backend, Kind: "messages",
				Input: int64(1000 * (len(k.Name) + h%5)), Output: int64(300 * (h%4 + 1)), Status: 200, Duration: time.Second})
		}
	}
	if err := gate.Revoke(ctx, "ci-bot"); err != nil {
		t.Fatal(err)
	}
	if err := gate.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	backends := func() []balance.Status {
		return []balance.Status{
			{Name: "gpu-0", Aliases: []string{"coder"}, APIBase: "http://10.0.0.5:8000/v1", State: "healthy", InFlight: 2, Requests: 120},
			{Name: "gpu-1", Aliases: []string{"coder"}, APIBase: "http://10.0.0.6:8000/v1", State: "cooling", Queued: 1, Requests: 80, Failures: 3, LastError: "status 503"},
		}
	}
	a := admin.New(admin.Options{Gate: gate, MasterKeys: []string{masterKey}, Backends: backends,
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	f.srv = httptest.NewServer(a)
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() {
		for _, s := range append(f.secrets, masterKey) {
			if strings.Contains(f.logs.String(), s) {
				t.Errorf("a key in the admin's log:\n%s", f.logs.String())
			}
		}
	})
	return f
}

func (f *fixture) api(t *testing.T, method, path, body, bearer string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestAdminAPI(t *testing.T) {
	f := newFixture(t)
	for _, bearer := range []string{"", "wrong", f.secrets[0]} {
		if status, b := f.api(t, "GET", "/admin/api/keys", "", bearer); status != 401 || !strings.Contains(string(b), "master key") {
			t.Errorf("bearer %q: %d %s", bearer, status, b)
		}
	}
	status, b := f.api(t, "POST", "/admin/api/keys", `{"name":"carol","models":["coder","chat"],"rpm":5,"tpm":1000,"budget_tokens":100000,"budget_period":"1d","expires":"30d"}`, masterKey)
	if status != 201 {
		t.Fatalf("create: %d %s", status, b)
	}
	var created map[string]any
	json.Unmarshal(b, &created)
	text, _ := created["key"].(string)
	if !strings.HasPrefix(text, keys.Prefix) || created["name"] != "carol" || created["budget_period"] != "1d" {
		t.Fatalf("created %s", b)
	}
	if k, err := f.gate.Authenticate(text); err != nil || k.Name != "carol" {
		t.Fatalf("the new key: %v %v", k, err)
	}
	for body, want := range map[string]string{
		`{"name":"carol"}`:                  "exists",
		`{"name":"x","rpm":-1}`:             "rpm",
		`{"name":"x","budget_period":"1y"}`: "budget_period",
		`{"name":"x","colour":"red"}`:       "unknown",
		`not json`:                          "JSON object",
		`{"name":"x","budget_tokens":5}`:    "budget_period",
		`{"name":"master"}`:                 "choose another",
	} {
		status, b := f.api(t, "POST", "/admin/api/keys", body, masterKey)
		if status/100 != 4 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s", body, status, b)
		}
	}
	status, b = f.api(t, "GET", "/admin/api/keys", "", masterKey)
	if status != 200 {
		t.Fatalf("list: %d %s", status, b)
	}
	var list struct {
		Keys []map[string]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list.Keys) != 4 {
		t.Fatalf("list %s: %v", b, err)
	}
	want := []string{"budget_period", "budget_tokens", "expires_at", "models", "name", "revoked", "rpm", "tpm", "usage"}
	for _, k := range list.Keys {
		var got []string
		for name := range k {
			got = append(got, name)
		}
		if strings.Join(sorted(got), ",") != strings.Join(want, ",") {
			t.Fatalf("fields %v, want %v", sorted(got), want)
		}
		var u map[string]int64
		if err := json.Unmarshal(k["usage"], &u); err != nil || len(u) != 3 {
			t.Fatalf("usage %s", k["usage"])
		}
	}
	if string(list.Keys[0]["name"]) != `"alice"` || string(list.Keys[0]["models"]) != `["coder"]` || string(list.Keys[0]["expires_at"]) != "null" {
		t.Errorf("alice %v", list.Keys[0])
	}
	if string(list.Keys[3]["name"]) != `"ci-bot"` || string(list.Keys[3]["revoked"]) != "true" || string(list.Keys[1]["models"]) != "[]" {
		t.Errorf("bob/ci-bot %s", b)
	}
	if strings.Contains(string(b), text) {
		t.Fatal("the list holds a key")
	}
	if status, b := f.api(t, "DELETE", "/admin/api/keys/carol", "", masterKey); status != 200 {
		t.Fatalf("revoke: %d %s", status, b)
	}
	if _, err := f.gate.Authenticate(text); err == nil {
		t.Fatal("revoked through the API, still accepted")
	}
	if status, _ := f.api(t, "DELETE", "/admin/api/keys/nobody", "", masterKey); status != 404 {
		t.Fatalf("revoke nobody: %d", status)
	}
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// browser is a client with a cookie jar that sends what a browser sends
// with a form: its Origin.
type browser struct {
	t      *testing.T
	c      *http.Client
	base   string
	origin string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, base: base, origin: base}
}

func (b *browser) get(path string) (int, string) {
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) *http.Response {
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestAdminPageLoginAndForms(t *testing.T) {
	f := newFixture(t)
	b := newBrowser(t, f.srv.URL)
	status, page := b.get("/admin")
	if status != 200 || !strings.Contains(page, `action="/admin/login"`) || strings.Contains(page, `id="keys"`) {
		t.Fatalf("before login: %d %s", status, page)
	}
	if resp := b.post("/admin/login", url.Values{"key": {"wrong"}}); resp.StatusCode != 401 {
		t.Fatalf("wrong key: %d", resp.StatusCode)
	}
	// A login posted from another site.
	b.origin = "http://evil.example"
	if resp := b.post("/admin/login", url.Values{"key": {masterKey}}); resp.StatusCode != 403 {
		t.Fatalf("cross-site login: %d", resp.StatusCode)
	}
	b.origin = f.srv.URL
	resp := b.post("/admin/login", url.Values{"key": {masterKey}})
	if resp.StatusCode != 303 {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	cookie := resp.Header.Get("Set-Cookie")
	for _, want := range []string{admin.SessionCookie + "=", "HttpOnly", "SameSite=Strict", "Path=/admin"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("cookie %q lacks %s", cookie, want)
		}
	}
	status, page = b.get("/admin")
	if status != 200 {
		t.Fatalf("page: %d", status)
	}
	for _, want := range []string{`id="keys"`, ">alice<", ">bob<", ">ci-bot<", ">revoked<", "coder", "<svg", "<rect", "Tokens per hour by key", "Tokens per hour by backend", "gpu-0", "gpu-1", "cooling", "status 503"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, s := range append(f.secrets, masterKey) {
		if strings.Contains(page, s) {
			t.Fatal("a key on the page")
		}
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "http://cdn") || strings.Contains(page, "https://") {
		t.Error("the page loads a script or something from elsewhere")
	}
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in the forms")
	}
	// Revoke without the token, with another's, from another site: refused.
	if resp := b.post("/admin/revoke/alice", url.Values{}); resp.StatusCode != 403 {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	if resp := b.post("/admin/revoke/alice", url.Values{"csrf": {"forged"}}); resp.StatusCode != 403 {
		t.Fatalf("forged token: %d", resp.StatusCode)
	}
	b.origin = "http://evil.example"
	if resp := b.post("/admin/revoke/alice", url.Values{"csrf": {m[1]}}); resp.StatusCode != 403 {
		t.Fatalf("cross-site: %d", resp.StatusCode)
	}
	if _, err := f.gate.Authenticate(f.secrets[0]); err != nil {
		t.Fatal("alice revoked by a refused form")
	}
	b.origin = f.srv.URL
	if resp := b.post("/admin/revoke/alice", url.Values{"csrf": {m[1]}}); resp.StatusCode != 303 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if _, err := f.gate.Authenticate(f.secrets[0]); err == nil {
		t.Fatal("alice still accepted")
	}
	if resp := b.post("/admin/logout", url.Values{"csrf": {m[1]}}); resp.StatusCode != 303 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if _, page := b.get("/admin"); strings.Contains(page, `id="keys"`) {
		t.Fatal("logged out, the keys still show")
	}
}
