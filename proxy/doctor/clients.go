package doctor

// The checks of what the coding clients need beside the backends: the
// settings each client reads, web search (search_settings), and Claude
// Code's WebFetch preflight.

import (
	"context"
	"fmt"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

// Check names of the clients' section.
const (
	CheckClientSettings = "client_settings"
	CheckWebSearch      = "web_search"
	CheckWebFetch       = "web_fetch"
)

// clientSettings names what each real client reads to reach the proxy
// (the spec's VENDORA_*, VENDORB_* and CODING_CLIENT_* are its own words
// for these; no client reads them).
const clientSettings = `Claude Code: ANTHROPIC_BASE_URL=http://HOST:PORT, ANTHROPIC_AUTH_TOKEN=<PROXY_API_KEY>, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_PROMPT_CACHING=1 DISABLE_INTERLEAVED_THINKING=1; ` +
	`a Chat Completions client: OPENAI_BASE_URL=http://HOST:PORT/v1, OPENAI_API_KEY=<PROXY_API_KEY>; ` +
	`Codex: openai_base_url = "http://HOST:PORT/v1" in ~/.codex/config.toml with CODEX_API_KEY (or codex login --with-api-key), or a [model_providers] entry; ` +
	`each client's model a model_name of this config (docs/clients.md)`

// webFetchFix is what Claude Code 2.1.330 needs for WebFetch behind a
// gateway: before each fetch it asks
// https://api.anthropic.com/api/web/domain_info?domain=HOST whether the
// domain may be fetched, whatever ANTHROPIC_BASE_URL says, and without an
// answer the fetch fails ("Unable to verify if domain … is safe to
// fetch"). Its setting skipWebFetchPreflight skips that question.
const webFetchFix = `Claude Code's WebFetch asks api.anthropic.com/api/web/domain_info about each domain before it fetches, even with ANTHROPIC_BASE_URL set; where that host is not reachable, add "skipWebFetchPreflight": true to ~/.claude/settings.json (or the project's .claude/settings.json)`

// clientChecks says what each client reads, checks search_settings (a
// probe search at the provider) and says what WebFetch needs.
func clientChecks(ctx context.Context, cfg *config.Config, timeout time.Duration) []Result {
	out := []Result{
		{Check: CheckClientSettings, Status: Info, Detail: "set in each client, not in the proxy", Fix: clientSettings},
		webSearchCheck(ctx, cfg, timeout),
	}
	return append(out, Result{Check: CheckWebFetch, Status: Info,
		Detail: "runs in the client; it needs no proxy setting", Fix: webFetchFix})
}

func webSearchCheck(ctx context.Context, cfg *config.Config, timeout time.Duration) Result {
	s := cfg.Search
	if s == nil {
		return Result{Check: CheckWebSearch, Status: Info, Detail: "off: Claude Code's WebSearch and Codex's web_search find nothing",
			Fix: "add search_settings with provider searxng (a self-hosted SearXNG with format json enabled), brave or tavily, and its api_base (and api_key: os.environ/NAME for brave and tavily); see docs/web-search.md"}
	}
	client := websearch.New(websearch.Settings{Provider: s.Provider, APIBase: s.APIBase, APIKey: s.APIKey, MaxResults: s.MaxResults, Timeout: min(s.Timeout, timeout)})
	start := time.Now()
	results, err := client.Search(ctx, websearch.Query{Text: "dragoman proxy check"})
	if err != nil {
		fix := "check search_settings.api_base and api_key"
		if s.Provider == websearch.SearXNG {
			fix = "check search_settings.api_base; a SearXNG instance answers 403 to format=json unless its settings.yml lists json under search.formats"
		}
		return Result{Check: CheckWebSearch, Status: Fail, Detail: config.ScrubCredentials(fmt.Sprintf("on (%s at %s), but a probe search failed: %v", s.Provider, config.RedactedURL(s.APIBase), err), s.APIBase), Fix: fix}
	}
	return Result{Check: CheckWebSearch, Status: OK, Detail: fmt.Sprintf("on: %s at %s answered a probe search with %d result(s) in %v", s.Provider, config.RedactedURL(s.APIBase), len(results), time.Since(start).Round(time.Millisecond))}
}
