package config

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

// SearchSettings is the top-level search_settings: the web search
// provider the proxy runs a client's web search server tool with (Messages
// web_search_*, Responses web_search). Without it (Config.Search nil) those
// tools are dropped, as before.
type SearchSettings struct {
	Provider   string // one of websearch.Providers
	APIBase    string // without a trailing slash; the provider's default for brave and tavily
	APIKey     string // resolved; required for brave and tavily
	MaxResults int
	Timeout    time.Duration // one search
	TimeBudget time.Duration // all the searches of one request
}

var searchKeys = []string{"provider", "api_base", "api_key", "max_results", "timeout", "time_budget"}

func (p *parser) search(n *yaml.Node, cfg *Config) error {
	fields, err := p.mapping(n, "search_settings", searchKeys)
	if err != nil {
		return err
	}
	s := &SearchSettings{MaxResults: websearch.DefaultMaxResults, Timeout: websearch.DefaultTimeout, TimeBudget: websearch.DefaultTimeBudget}
	providers := strings.Join(websearch.Providers, ", ")
	v, err := p.required(n, fields, "search_settings", "provider", "the web search provider: one of "+providers)
	if err != nil {
		return err
	}
	if err := p.decode(v, "search_settings.provider", "a string", &s.Provider); err != nil {
		return err
	}
	if _, ok := websearch.DefaultAPIBase[s.Provider]; !ok && s.Provider != websearch.SearXNG {
		return p.errorf(v, "search_settings.provider is %q: write one of %s (searxng: a self-hosted SearXNG instance with format json enabled)", s.Provider, providers)
	}
	s.APIBase = websearch.DefaultAPIBase[s.Provider]
	if v, ok := fields["api_base"]; ok {
		if err := p.decode(v, "search_settings.api_base", "a URL", &s.APIBase); err != nil {
			return err
		}
		if !strings.HasPrefix(s.APIBase, "http://") && !strings.HasPrefix(s.APIBase, "https://") {
			return p.errorf(v, "search_settings.api_base is %q: write the provider's URL, e.g. http://127.0.0.1:8888 for a SearXNG instance", s.APIBase)
		}
	}
	s.APIBase = strings.TrimSuffix(s.APIBase, "/")
	if s.APIBase == "" {
		return p.errorf(n, "search_settings.api_base is missing: write the URL of your SearXNG instance, e.g. http://127.0.0.1:8888 (its settings.yml must list json under search.formats)")
	}
	if v, ok := fields["api_key"]; ok {
		if s.APIKey, err = p.secret(v, "search_settings.api_key"); err != nil {
			return err
		}
	}
	if s.APIKey == "" && s.Provider != websearch.SearXNG {
		return p.errorf(n, "search_settings.api_key is missing: %s needs a key; write api_key: os.environ/NAME and export NAME", s.Provider)
	}
	if v, ok := fields["max_results"]; ok {
		if err := p.decode(v, "search_settings.max_results", "a whole number", &s.MaxResults); err != nil {
			return err
		}
		if s.MaxResults < 1 || s.MaxResults > 20 {
			return p.errorf(v, "search_settings.max_results is %d: write 1 to 20 (default %d)", s.MaxResults, websearch.DefaultMaxResults)
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
		def time.Duration
	}{{"timeout", &s.Timeout, websearch.DefaultTimeout}, {"time_budget", &s.TimeBudget, websearch.DefaultTimeBudget}} {
		v, ok := fields[d.key]
		if !ok {
			continue
		}
		var seconds float64
		if err := p.decode(v, "search_settings."+d.key, "a number of seconds", &seconds); err != nil {
			return err
		}
		if seconds <= 0 {
			return p.errorf(v, "search_settings.%s is %v: write a positive number of seconds (default %v)", d.key, v.Value, d.def.Seconds())
		}
		*d.dst = time.Duration(seconds * float64(time.Second))
	}
	if s.TimeBudget < s.Timeout {
		return p.errorf(n, "search_settings.time_budget (%v) is shorter than search_settings.timeout (%v): the budget covers every search of a request", s.TimeBudget, s.Timeout)
	}
	cfg.Search = s
	return nil
}

// SearchOffHint says how to turn web search on, for proxy check.
const SearchOffHint = "web search is off: the clients' web search tools (Claude Code's WebSearch, Codex's web_search) find nothing. To turn it on, add\n  search_settings:\n    provider: searxng        # or brave, tavily (with api_key: os.environ/NAME)\n    api_base: http://127.0.0.1:8888\nto the config"
