package server_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// twoBackends routes each alias to a backend of its own.
const twoBackends = `model_list:
  - model_name: claude-opus-5-5
    proxy_params:
      model: vendorb/big-secret-model
      api_base: {base}
      api_key: os.environ/TEST_BACKEND_KEY
  - model_name: local-model
    proxy_params:
      model: vendorb/small-model
      api_base: {base}
      api_key: os.environ/TEST_BACKEND_KEY
`

// TestKeyRulesOnEveryEndpoint: a key limited to one model may not count
// tokens on another (403 permission_error, no backend asked), and sees
// only its model in /v1/models and only its backends in /backends; the
// master key sees all. A request whose key is refused is counted as
// key="unknown", not as the master key's.
func TestKeyRulesOnEveryEndpoint(t *testing.T) {
	c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
	g := newGate(t, "sqlite://"+filepath.Join(t.TempDir(), "dragoman.db"), c)
	h := newHarness(t, harnessOptions{gate: g, metrics: true, routesYAML: twoBackends, stub: stub.Options{Tokenize: true}})
	alice := createKey(t, g, keys.Spec{Name: "alice", Models: []string{"local-model"}})
	auth := []string{"Authorization", "Bearer " + alice}

	h.backend.Reset()
	resp, b := h.do(http.MethodPost, "/v1/messages/count_tokens", `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"count me"}]}`, auth, false)
	if resp.StatusCode != 403 || !strings.Contains(string(b), `"permission_error"`) || !strings.Contains(string(b), `may not use model \"claude-opus-5-5\"`) {
		t.Errorf("count_tokens on a model the key may not use: %d %s", resp.StatusCode, b)
	}
	if reqs := h.backend.Requests(); len(reqs) != 0 {
		t.Errorf("the backend was asked: %s %s", reqs[0].Method, reqs[0].Path)
	}
	resp, b = h.do(http.MethodPost, "/v1/messages/count_tokens", `{"model":"local-model","messages":[{"role":"user","content":"count me"}]}`, auth, false)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "input_tokens") {
		t.Errorf("count_tokens on its model: %d %s", resp.StatusCode, b)
	}

	for _, header := range [][]string{auth, append(auth, "Anthropic-Version", "2023-06-01")} {
		resp, b = h.do(http.MethodGet, "/v1/models", "", header, false)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"local-model"`) || strings.Contains(string(b), "claude-opus-5-5") {
			t.Errorf("/v1/models for alice: %d %s", resp.StatusCode, b)
		}
	}
	resp, b = h.do(http.MethodGet, "/v1/models", "", nil, false)
	if !strings.Contains(string(b), `"local-model"`) || !strings.Contains(string(b), "claude-opus-5-5") {
		t.Errorf("/v1/models for the master key: %d %s", resp.StatusCode, b)
	}
	resp, b = h.do(http.MethodGet, "/backends", "", auth, false)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "small-model") || strings.Contains(string(b), "big-secret-model") || strings.Contains(string(b), "claude-opus-5-5") {
		t.Errorf("/backends for alice: %d %s", resp.StatusCode, b)
	}
	resp, b = h.do(http.MethodGet, "/backends", "", nil, false)
	if !strings.Contains(string(b), "small-model") || !strings.Contains(string(b), "big-secret-model") {
		t.Errorf("/backends for the master key: %d %s", resp.StatusCode, b)
	}

	resp, _ = h.do(http.MethodPost, "/v1/chat/completions", goodChat, []string{"Authorization", "Bearer sk-dm-wrong"}, false)
	if resp.StatusCode != 401 {
		t.Fatalf("a wrong key: %d", resp.StatusCode)
	}
	scrape := h.scrape()
	var unknown, master string
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, "dragoman_requests_total{") && strings.Contains(line, `status="401"`) {
			if strings.Contains(line, `key="unknown"`) {
				unknown = line
			}
			if strings.Contains(line, `key="master"`) {
				master = line
			}
		}
	}
	if unknown == "" || master != "" {
		t.Errorf("the refused request: counted as %q, want key=\"unknown\" (not %q)", unknown, master)
	}
}
