package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// credentialRoutes: two backends whose api_base differ only by the
// credentials they hold, and one with credentials that is unreachable.
const credentialRoutes = `model_list:
  - model_name: claude-opus-5-5
    proxy_params:
      model: vendorb/qwen3-coder
      api_base: http://alice:pw-alice-secret@{host}/v1
      api_key: os.environ/TEST_BACKEND_KEY
  - model_name: local-model
    proxy_params:
      model: vendorb/qwen3-coder
      api_base: http://bob:pw-bob-secret@{host}/v1
      api_key: os.environ/TEST_BACKEND_KEY
  - model_name: gone-model
    proxy_params:
      model: vendorb/qwen3-coder
      api_base: http://carol:pw-carol-secret@127.0.0.1:1/v1
      api_key: os.environ/TEST_BACKEND_KEY
      num_retries: 0
`

// TestCredentialsNeverShown: the credentials an api_base holds are in no
// answer (an unreachable backend's error), no line of /backends (its
// api_base, its last error), no series of /metrics, no log line; and two
// backends that differ only by them have names of their own, so that
// /metrics answers 200 (it answered 500, "collected before with the same
// name and label values").
func TestCredentialsNeverShown(t *testing.T) {
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: credentialRoutes})
	secrets := []string{"pw-alice-secret", "pw-bob-secret", "pw-carol-secret", "alice:", "bob:", "carol:", "alice@", "carol@"}
	var seen []string
	for _, model := range []string{"claude-opus-5-5", "local-model", "gone-model"} {
		for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
			_, b := h.do(http.MethodPost, path, strings.Replace(goodMessages, "local-model", model, 1), nil, false)
			seen = append(seen, path+" "+model+": "+string(b))
		}
	}
	resp, b := h.do(http.MethodGet, "/backends", "", nil, false)
	seen = append(seen, "/backends: "+string(b))
	var list struct {
		Backends []struct {
			Name    string `json:"name"`
			APIBase string `json:"api_base"`
		} `json:"backends"`
	}
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != 200 || len(list.Backends) != 3 {
		t.Fatalf("/backends: %d %v %s", resp.StatusCode, err, b)
	}
	names := map[string]bool{}
	for _, be := range list.Backends {
		if names[be.Name] {
			t.Errorf("two backends named %q", be.Name)
		}
		names[be.Name] = true
		if !strings.Contains(be.APIBase, "127.0.0.1") {
			t.Errorf("api_base %q", be.APIBase)
		}
	}
	metrics, err := http.Get(h.proxy.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics.Body.Close()
	if metrics.StatusCode != 200 {
		t.Errorf("/metrics: %d", metrics.StatusCode)
	}
	seen = append(seen, "/metrics: "+h.scrape(), "the log: "+h.logs.String())
	for _, text := range seen {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%q shown in %s", s, text)
			}
		}
	}
	if !strings.Contains(seen[5], "is unreachable") {
		t.Errorf("the unreachable backend's answer: %s", seen[5])
	}
}
