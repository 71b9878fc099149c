package websearch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// TestDecodeRecordedAnswers: each provider's recorded answer reads as its
// results: URL, title, snippet (Brave's markup dropped), date where the
// provider gives one.
func TestDecodeRecordedAnswers(t *testing.T) {
	for _, c := range []struct {
		provider string
		decode   func([]byte) ([]Result, error)
		age      string
	}{
		{SearXNG, decodeSearXNG, "2026-11-20T00:00:00"},
		{Brave, decodeBrave, "2026-11-20T00:00:00"},
		{Tavily, decodeTavily, "Fri, 20 Nov 2026 00:00:00 GMT"},
	} {
		raw, err := fixtures.SearchAnswer(c.provider)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.decode(raw)
		if err != nil {
			t.Fatalf("%s: %v", c.provider, err)
		}
		want0 := Result{URL: "https://example.org/dragoman", Title: "Dragoman: a proxy for coding agents",
			Snippet: "Dragoman translates between the Messages, Responses and Chat Completions formats for local model servers.", PageAge: c.age}
		if len(got) != 2 || got[0] != want0 || got[1].URL != "https://docs.example.net/guide" || got[1].PageAge != "" {
			t.Errorf("%s: %+v", c.provider, got)
		}
	}
}

// TestDomainsAndLimits: the domain lists hold whatever the provider
// answered (subdomains included), max_results cuts, and a query the
// provider would refuse never leaves.
func TestDomainsAndLimits(t *testing.T) {
	results := []Result{{URL: "https://a.example.org/x"}, {URL: "https://www.blocked.com/y"}, {URL: "https://other.net/"}, {URL: ""}}
	got := filter(append([]Result(nil), results...), Query{AllowedDomains: []string{"example.org", "blocked.com"}, BlockedDomains: []string{"blocked.com"}}, 5)
	if len(got) != 1 || got[0].URL != "https://a.example.org/x" || got[0].Title != got[0].URL {
		t.Errorf("filtered = %+v", got)
	}
	if got := filter(append([]Result(nil), results...), Query{}, 2); len(got) != 2 {
		t.Errorf("max 2 = %+v", got)
	}
	if q := siteQuery(Query{Text: "go", AllowedDomains: []string{"a.org", "b.org"}, BlockedDomains: []string{"c.org"}}); q != "go (site:a.org OR site:b.org) -site:c.org" {
		t.Errorf("site query = %q", q)
	}
	c := New(Settings{Provider: SearXNG, APIBase: "http://127.0.0.1:1"})
	for q, code := range map[string]Code{"": InvalidInput, strings.Repeat("é", MaxQueryLength+1): QueryTooLong} {
		if _, err := c.Search(context.Background(), Query{Text: q}); CodeOf(err) != code {
			t.Errorf("query of %d runes: %v, want %s", len([]rune(q)), err, code)
		}
	}
}

// TestProviderFailures: a 429 is too_many_requests, any other failure
// unavailable, a slow provider is cut at the timeout; the key never
// reaches the error.
func TestProviderFailures(t *testing.T) {
	status := http.StatusTooManyRequests
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status == 0 {
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		http.Error(w, "token sk-search-secret refused", status)
	}))
	defer srv.Close()
	c := New(Settings{Provider: Brave, APIBase: srv.URL, APIKey: "sk-search-secret", Timeout: 200 * time.Millisecond})
	for _, s := range []struct {
		status int
		code   Code
	}{{http.StatusTooManyRequests, TooManyRequests}, {http.StatusUnauthorized, Unavailable}, {0, Unavailable}} {
		status = s.status
		start := time.Now()
		_, err := c.Search(context.Background(), Query{Text: "q"})
		if CodeOf(err) != s.code || strings.Contains(err.Error(), "sk-search-secret") {
			t.Errorf("status %d: %v", s.status, err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("status %d: not cut at the timeout", s.status)
		}
	}
}
