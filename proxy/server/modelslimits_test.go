package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestModelsCarryKnownWindows: GET /v1/models with anthropic-version
// (Claude Code's gateway model discovery, and the Models API's shape)
// gives each alias the window and output limit the proxy knows —
// configured, or discovered from the backend — and null where it knows
// none; Codex's catalog has the same windows.
func TestModelsCarryKnownWindows(t *testing.T) {
	srv := httptest.NewServer(stub.New(stub.Options{ContextWindow: 8192, Model: "qwen3-coder"}))
	t.Cleanup(srv.Close)
	backend := srv.URL + "/v1"
	routes := "model_list:\n" +
		"  - model_name: claude-configured\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: " + backend + "\n      api_key: none\n      context_window: 32768\n      max_output_tokens: 8192\n" +
		"  - model_name: claude-discovered\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: " + backend + "\n      api_key: none\n" +
		"  - model_name: claude-unknown\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: http://127.0.0.1:1/v1\n      api_key: none\n"
	h := newHarness(t, harnessOptions{routesYAML: routes})
	h.server.Discover(context.Background())

	_, body := h.do(http.MethodGet, "/v1/models?limit=1000", "", []string{"anthropic-version", "2023-06-01"}, false)
	var list struct {
		Data []struct {
			Type           string `json:"type"`
			ID             string `json:"id"`
			MaxInputTokens *int   `json:"max_input_tokens"`
			MaxTokens      *int   `json:"max_tokens"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := map[string][2]int{"claude-configured": {32768, 8192}, "claude-discovered": {8192, 8192}, "claude-unknown": {0, 0}}
	if len(list.Data) != len(want) {
		t.Fatalf("%d models, want %d: %s", len(list.Data), len(want), body)
	}
	for _, m := range list.Data {
		w := want[m.ID]
		got := [2]int{deref(m.MaxInputTokens), deref(m.MaxTokens)}
		if m.Type != "model" || got != w {
			t.Errorf("%s: type %q, max_input_tokens/max_tokens %v, want %v (0: null)", m.ID, m.Type, got, w)
		}
	}

	_, body = h.do(http.MethodGet, "/v1/models", "", nil, false)
	var catalog struct {
		Models []struct {
			Slug          string `json:"slug"`
			ContextWindow *int   `json:"context_window"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &catalog); err != nil {
		t.Fatal(err)
	}
	for _, m := range catalog.Models {
		if got := deref(m.ContextWindow); got != want[m.Slug][0] {
			t.Errorf("Codex catalog: %s context_window %d, want %d", m.Slug, got, want[m.Slug][0])
		}
	}
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// TestClaudeCodeGatewayDiscoverySeesAliases does what Claude Code
// 2.1.330's gateway model discovery (CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1)
// does, as read in its shipped code: GET {ANTHROPIC_BASE_URL}/v1/models?limit=1000
// with x-api-key and anthropic-version 2023-06-01, a body that must parse
// as {data: [{id, display_name?, description?}]}, then only the ids that
// match /(claude|anthropic)/i. Its model picker lists what is left: the
// proxy's claude-* aliases.
func TestClaudeCodeGatewayDiscoverySeesAliases(t *testing.T) {
	routes := "model_list:\n"
	for _, alias := range []string{"claude-local-coder", "claude-local-small", "qwen-direct"} {
		routes += "  - model_name: " + alias + "\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: http://127.0.0.1:1/v1\n      api_key: none\n"
	}
	h := newHarness(t, harnessOptions{routesYAML: routes})
	req, _ := http.NewRequest(http.MethodGet, h.proxy.URL+"/v1/models?limit=1000", nil)
	req.Header.Set("x-api-key", clientKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("User-Agent", "claude-cli/2.1.330 (external, cli)")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: the client logs \"[gatewayDiscovery] non-OK status\" and lists nothing", resp.StatusCode)
	}
	var list struct {
		Data []struct {
			ID          string  `json:"id"`
			DisplayName *string `json:"display_name"`
			Description *string `json:"description"`
		} `json:"data"`
	}
	dec := json.NewDecoder(resp.Body)
	if err := dec.Decode(&list); err != nil || list.Data == nil {
		t.Fatalf("\"[gatewayDiscovery] response body failed validation\": %v", err)
	}
	var shown []string
	usable := regexp.MustCompile(`(?i)(claude|anthropic)`)
	for _, m := range list.Data {
		if m.ID == "" || (m.DisplayName != nil && *m.DisplayName == "") {
			t.Errorf("model %+v: id and display_name must be strings", m)
		}
		if usable.MatchString(m.ID) {
			shown = append(shown, m.ID)
		}
	}
	if strings.Join(shown, ",") != "claude-local-coder,claude-local-small" {
		t.Errorf("the picker would show %v", shown)
	}
}
