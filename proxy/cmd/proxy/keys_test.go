package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/pgtest"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// keysConfig is a config with one alias in front of a stub and the
// database at databaseURL.
func keysConfig(t *testing.T, databaseURL string) string {
	return "model_list:\n  - model_name: claude-opus-5-5\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: " +
		serveBackend(t, stub.New(stub.Options{})) + "\n      api_key: os.environ/DRAIN_BACKEND_KEY\n" +
		"general_settings:\n  database_url: " + databaseURL + "\n"
}

// keysCLI runs `proxy keys args...` and returns its exit code and output.
func keysCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := func(name string) (string, bool) {
		if name == "DRAIN_BACKEND_KEY" {
			return backendKey, true
		}
		return os.LookupEnv(name)
	}
	code := keysCmd(args, &out, &errOut, env)
	return code, out.String(), errOut.String()
}

// chatWith sends a small Chat request with key through the proxy at url;
// it returns the status and the answer's total tokens (0 on an error).
func chatWith(t *testing.T, url, key string) (int, int64, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(`{"model":"claude-opus-5-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m struct {
		Usage struct {
			Total int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	json.Unmarshal(b, &m)
	return resp.StatusCode, m.Usage.Total, resp.Header.Get("Retry-After") + " " + string(b)
}

// TestKeysCommandAndProxy: proxy keys create prints the key once, alone on
// its last line; the proxy accepts it; keys list and show tell its usage;
// keys revoke, from another process, makes the running proxy refuse it.
func TestKeysCommandAndProxy(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "data", "dragoman.db")
	cfgPath := writeFile(t, "config.yaml", keysConfig(t, db))
	code, out, errOut := keysCLI(t, "create", "--name", "alice", "--models", "claude-opus-5-5", "--rpm", "100", "--tpm", "100000", "--budget-tokens", "1000000", "--budget-period", "7d", "--expires", "30d", "--config", cfgPath)
	if code != 0 {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	key := lines[len(lines)-1]
	if !strings.HasPrefix(key, keys.Prefix) || strings.Contains(key, " ") || strings.Count(out, key) != 1 {
		t.Fatalf("the last line %q of:\n%s", key, out)
	}
	if code, _, errOut := keysCLI(t, "create", "--name", "alice", "--config", cfgPath); code != 1 || !strings.Contains(errOut, "exists") {
		t.Fatalf("alice twice: %d %s", code, errOut)
	}
	if code, _, errOut := keysCLI(t, "create", "--name", "bob", "--budget-period", "1y", "--config", cfgPath); code != 2 || !strings.Contains(errOut, "--budget-period") {
		t.Fatalf("bad period: %d %s", code, errOut)
	}
	p := startProxyConfig(t, readFile(t, cfgPath))
	for range 3 {
		if status, _, body := chatWith(t, p.url, key); status != 200 {
			t.Fatalf("with alice's key: %d %s", status, body)
		}
	}
	// The master key is still the master key.
	if status, _, body := chatWith(t, p.url, clientKey); status != 200 {
		t.Fatalf("with the master key: %d %s", status, body)
	}
	var listed string
	waitUntil(t, 10*time.Second, "alice's 3 requests in keys list", func() bool {
		_, listed, _ = keysCLI(t, "list", "--config", cfgPath)
		return strings.Contains(listed, "alice") && strings.Contains(listed, "active") && strings.Contains(listed, " 3 ")
	})
	if strings.Contains(listed, key) {
		t.Fatal("keys list shows the key")
	}
	code, shown, _ := keysCLI(t, "show", "alice", "--config", cfgPath)
	if code != 0 || !strings.Contains(shown, "3 requests") || !strings.Contains(shown, "budget 1000000/1w") || strings.Contains(shown, key) {
		t.Fatalf("show: %d\n%s", code, shown)
	}
	if code, _, errOut := keysCLI(t, "show", "nobody", "--config", cfgPath); code != 1 || !strings.Contains(errOut, "no key of that name") {
		t.Fatalf("show nobody: %d %s", code, errOut)
	}
	// The admin API through the proxy, with the master key.
	req, _ := http.NewRequest("GET", p.url+"/admin/api/keys", nil)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"alice"`) || !strings.Contains(string(b), `"requests":3`) {
		t.Fatalf("admin API: %d %s", resp.StatusCode, b)
	}
	if code, out, errOut := keysCLI(t, "revoke", "alice", "--config", cfgPath); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %d %s %s", code, out, errOut)
	}
	waitUntil(t, 5*time.Second, "the running proxy refuses the revoked key", func() bool {
		status, _, _ := chatWith(t, p.url, key)
		return status == 401
	})
	if strings.Contains(p.stderr.String(), key) {
		t.Fatal("the key in the proxy's log")
	}
	if code, _, errOut := keysCLI(t, "list", "--config", writeFile(t, "nodb.yaml", "model_list:\n  - model_name: a\n    proxy_params: {model: vendorb/m, api_base: 'http://127.0.0.1:1/v1', api_key: k}\n")); code != 1 || !strings.Contains(errOut, "no general_settings.database_url") {
		t.Fatalf("without a database: %d %s", code, errOut)
	}
}

// TestTwoProxiesOnePostgresShareTPM: two proxy processes on one Postgres;
// one key's tpm limit holds across both: its tokens, spent through either,
// count against the one limit, and once it is reached both refuse the key.
func TestTwoProxiesOnePostgresShareTPM(t *testing.T) {
	db := pgtest.New(t)
	cfg := keysConfig(t, db)
	cfgPath := writeFile(t, "config.yaml", cfg)
	a, b := startProxyConfig(t, cfg), startProxyConfig(t, cfg)
	// The tokens of one request, with a key without limits.
	_, out, _ := keysCLI(t, "create", "--name", "probe", "--config", cfgPath)
	probe := lastLine(out)
	store, err := keys.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitUntil(t, 5*time.Second, "proxy a knows the new key", func() bool { s, _, _ := chatWith(t, a.url, probe); return s == 200 })
	_, per, _ := chatWith(t, a.url, probe)
	if per == 0 {
		t.Fatal("the stub's answer has no usage")
	}
	// What a request reserves (its prompt and its max_tokens): a key whose
	// tpm no request fits says.
	_, out, _ = keysCLI(t, "create", "--name", "tiny", "--tpm", "1", "--config", cfgPath)
	tiny := lastLine(out)
	var reserve int64
	waitUntil(t, 5*time.Second, "proxy a knows the tiny key", func() bool {
		s, _, body := chatWith(t, a.url, tiny)
		_, after, ok := strings.Cut(body, "it reserves ")
		fmt.Sscan(after, &reserve)
		return s == 429 && ok && reserve > per
	})
	// A limit of 3 requests' tokens and one reservation: the 4th request is
	// admitted (3 spent and its reservation fit), the 5th is not (4 spent
	// and its reservation do not), whichever proxy serves it.
	tpm := 3*per + reserve
	_, out, _ = keysCLI(t, "create", "--name", "shared", "--tpm", fmt.Sprint(tpm), "--config", cfgPath)
	key := lastLine(out)
	if s := time.Now().Second(); s > 40 {
		time.Sleep(time.Duration(61-s) * time.Second) // the whole test in one minute window
	}
	waitUntil(t, 5*time.Second, "both proxies know the new key", func() bool {
		s1, _, _ := statusOnly(t, a.url, "/v1/models", key)
		s2, _, _ := statusOnly(t, b.url, "/v1/models", key)
		return s1 == 200 && s2 == 200
	})
	for i, p := range []*proxyProc{a, b, a, b} {
		if status, _, body := chatWith(t, p.url, key); status != 200 {
			t.Fatalf("request %d: %d %s", i+1, status, body)
		}
		// Each request's tokens are written (with its usage row, in one
		// transaction) off the request's path: wait for them.
		waitUntil(t, 5*time.Second, "the usage row", func() bool {
			u, err := store.KeyUsageSince(context.Background(), "shared", time.Now().Add(-time.Hour))
			return err == nil && u.Requests == int64(i+1)
		})
	}
	for _, p := range []*proxyProc{a, b} {
		status, _, body := chatWith(t, p.url, key)
		if status != 429 || !strings.Contains(body, "rate_limit_error") || !strings.Contains(body, fmt.Sprintf("%d of its %d tokens per minute", 4*per, tpm)) {
			t.Fatalf("over the shared tpm: %d %s", status, body)
		}
	}
	// The other key is not held back by this one's limit.
	if status, _, body := chatWith(t, b.url, probe); status != 200 {
		t.Fatalf("another key: %d %s", status, body)
	}
}

func statusOnly(t *testing.T, url, path, key string) (int, string, error) {
	req, _ := http.NewRequest("GET", url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
