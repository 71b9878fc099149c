package config

import (
	"strings"
	"testing"
	"time"
)

const searchBase = "model_list:\n  - model_name: a\n    proxy_params:\n      model: vendorb/m\n      api_base: http://h/v1\n      api_key: k\n"

// TestSearchSettings: defaults, the hosted providers' default api_base,
// a key from the environment; without search_settings, web search is off.
func TestSearchSettings(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(searchBase), allSet)
	if err != nil || cfg.Search != nil {
		t.Fatalf("without search_settings: %+v, %v", cfg.Search, err)
	}
	cfg, err = Parse("c.yaml", []byte(searchBase+"search_settings:\n  provider: searxng\n  api_base: http://127.0.0.1:8888/\n"), allSet)
	if err != nil {
		t.Fatal(err)
	}
	want := SearchSettings{Provider: "searxng", APIBase: "http://127.0.0.1:8888", MaxResults: 5, Timeout: 10 * time.Second, TimeBudget: 60 * time.Second}
	if *cfg.Search != want {
		t.Errorf("searxng = %+v", *cfg.Search)
	}
	cfg, err = Parse("c.yaml", []byte(searchBase+"search_settings:\n  provider: brave\n  api_key: os.environ/BACKEND_KEY\n  max_results: 3\n  timeout: 2.5\n  time_budget: 20\n"), allSet)
	if err != nil {
		t.Fatal(err)
	}
	want = SearchSettings{Provider: "brave", APIBase: "https://api.search.brave.com", APIKey: "sk-backend", MaxResults: 3, Timeout: 2500 * time.Millisecond, TimeBudget: 20 * time.Second}
	if *cfg.Search != want {
		t.Errorf("brave = %+v", *cfg.Search)
	}
}

// TestSearchSettingsErrors: each mistake names its key and line and says
// how to mend it.
func TestSearchSettingsErrors(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want []string
	}{
		{"  provider: google\n", []string{"c.yaml:8:", `search_settings.provider is "google"`, "searxng, brave, tavily"}},
		{"  api_base: http://x\n", []string{"provider", "missing"}},
		{"  provider: searxng\n", []string{"search_settings.api_base is missing", "SearXNG", "json"}},
		{"  provider: tavily\n", []string{"search_settings.api_key is missing", "os.environ/NAME"}},
		{"  provider: tavily\n  api_key: os.environ/NOPE\n", []string{"NOPE", "not set"}},
		{"  provider: searxng\n  api_base: 127.0.0.1:8888\n", []string{"search_settings.api_base", "http://127.0.0.1:8888"}},
		{"  provider: searxng\n  api_base: http://x\n  max_results: 50\n", []string{"max_results is 50", "1 to 20"}},
		{"  provider: searxng\n  api_base: http://x\n  timeout: 0\n", []string{"search_settings.timeout", "positive"}},
		{"  provider: searxng\n  api_base: http://x\n  timeout: 30\n  time_budget: 10\n", []string{"time_budget", "shorter than search_settings.timeout"}},
		{"  provider: searxng\n  api_base: http://x\n  max_uses: 3\n", []string{`unknown key "max_uses"`}},
	} {
		_, err := Parse("c.yaml", []byte(searchBase+"search_settings:\n"+c.yaml), allSet)
		if err == nil {
			t.Errorf("%q: no error", c.yaml)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.yaml, err, w)
			}
		}
	}
}
