package stub

// The web search providers' APIs, as a search stub: SearXNG's GET /search
// (format=json), Brave's GET /res/v1/web/search and Tavily's POST /search,
// each answering in its provider's shape (fixtures/websearch) with results
// made from the query, so a test or a client can tell that its answer came
// from this search.
//
// A query holding one of these words acts a failure:
//
//	stub-down       503
//	stub-ratelimit  429
//	stub-slow       no answer before the client gives up (or Options.SearchDelay, when set)
//	stub-empty      no results

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// SearchResults is how many results a search of the stub finds.
const SearchResults = 2

// SearchResultURL is the URL of the stub's result n (1-based) for query.
func SearchResultURL(query string, n int) string {
	return fmt.Sprintf("https://search.stub.test/%d?q=%s", n, url.QueryEscape(query))
}

// SearchResultTitle is the title of the stub's result n for query.
func SearchResultTitle(query string, n int) string {
	return fmt.Sprintf("Stub result %d for %s", n, query)
}

func (s *Server) searchRoutes() {
	s.mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		s.record(r, nil)
		if r.URL.Query().Get("format") != "json" {
			http.Error(w, "403 Forbidden", http.StatusForbidden) // SearXNG without format=json enabled
			return
		}
		s.searchAnswer(w, r, "searxng", r.URL.Query().Get("q"), "url", "title", "content")
	})
	s.mux.HandleFunc("GET /res/v1/web/search", func(w http.ResponseWriter, r *http.Request) {
		s.record(r, nil)
		if r.Header.Get("X-Subscription-Token") == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid.","status":401}}`))
			return
		}
		s.searchAnswer(w, r, "brave", r.URL.Query().Get("q"), "url", "title", "description")
	})
	s.mux.HandleFunc("POST /search", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.record(r, body)
		var req struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(body, &req) != nil || req.Query == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"detail":{"error":"Query is missing."}}`))
			return
		}
		s.searchAnswer(w, r, "tavily", req.Query, "url", "title", "content")
	})
}

// searchAnswer answers query in provider's shape: the fixture's envelope,
// its first result copied for each of the stub's results with the url,
// title and text members (named by the provider) made from the query.
func (s *Server) searchAnswer(w http.ResponseWriter, r *http.Request, provider, query, urlKey, titleKey, textKey string) {
	switch {
	case strings.Contains(query, "stub-down"):
		http.Error(w, "search backend down", http.StatusServiceUnavailable)
		return
	case strings.Contains(query, "stub-ratelimit"):
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return
	case strings.Contains(query, "stub-slow"):
		d := s.opts.SearchDelay
		if d <= 0 {
			d = time.Minute
		}
		if !sleep(r, d) {
			return
		}
	}
	raw, err := fixtures.SearchAnswer(provider)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var env map[string]any
	json.Unmarshal(raw, &env)
	list := env
	if provider == "brave" {
		list = env["web"].(map[string]any)
	}
	template := list["results"].([]any)[0].(map[string]any)
	var results []any
	if !strings.Contains(query, "stub-empty") {
		for n := 1; n <= SearchResults; n++ {
			res := map[string]any{}
			for k, v := range template {
				res[k] = v
			}
			res[urlKey] = SearchResultURL(query, n)
			res[titleKey] = SearchResultTitle(query, n)
			res[textKey] = fmt.Sprintf("The search stub found this page (%d) for %q.", n, query)
			results = append(results, res)
		}
	}
	list["results"] = results
	if _, ok := env["query"].(string); ok {
		env["query"] = query
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(env)
}
