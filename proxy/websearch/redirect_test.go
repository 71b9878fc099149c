package websearch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestNoRedirectToAnotherHost: a provider that redirects to another host
// is not followed (the other host gets no request, so neither the key
// nor the query); a redirect to the provider's own host is followed
// without a Referer (it would hold the query).
func TestNoRedirectToAnotherHost(t *testing.T) {
	var mu sync.Mutex
	var elsewhere []*http.Request
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r)
		mu.Unlock()
		w.Write([]byte(`{"web":{"results":[]}}`))
	}))
	defer other.Close()
	var referers []string
	var provider *httptest.Server
	provider = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		referers = append(referers, r.Header.Get("Referer"))
		mu.Unlock()
		switch r.URL.Path {
		case "/res/v1/web/search":
			if r.URL.Query().Get("same") == "" && strings.Contains(r.URL.Query().Get("q"), "away") {
				http.Redirect(w, r, other.URL+"/steal?"+r.URL.RawQuery, http.StatusFound)
				return
			}
			http.Redirect(w, r, provider.URL+"/moved?"+r.URL.RawQuery, http.StatusFound)
		case "/moved":
			w.Write([]byte(`{"web":{"results":[{"url":"https://example.org/a","title":"A","description":"a"}]}}`))
		}
	}))
	defer provider.Close()
	c := New(Settings{Provider: Brave, APIBase: provider.URL, APIKey: "brave-secret-token"})
	_, err := c.Search(context.Background(), Query{Text: "send me away"})
	if err == nil || CodeOf(err) != Unavailable || !strings.Contains(err.Error(), "another host") || strings.Contains(err.Error(), "send me away") || strings.Contains(err.Error(), "send+me+away") {
		t.Errorf("a redirect to another host: %v", err)
	}
	mu.Lock()
	if len(elsewhere) != 0 {
		t.Errorf("the other host got %d requests (token %q)", len(elsewhere), elsewhere[0].Header.Get("X-Subscription-Token"))
	}
	referers = nil
	mu.Unlock()
	results, err := c.Search(context.Background(), Query{Text: "stay here"})
	if err != nil || len(results) != 1 {
		t.Fatalf("a redirect to the same host: %v %v", results, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range referers {
		if r != "" {
			t.Errorf("a Referer sent: %q", r)
		}
	}
}

// TestNoQueryInErrors: what a failed search says for the log holds the
// provider and the kind of failure, never the query (an unreachable
// provider's URL holds it; an error page may repeat it).
func TestNoQueryInErrors(t *testing.T) {
	const query = "private-words-of-a-user"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("upstream failed for q=" + r.URL.Query().Get("q") + " raw " + r.URL.RawQuery))
	}))
	defer echo.Close()
	for _, base := range []string{"http://127.0.0.1:1", echo.URL} {
		for _, p := range []string{SearXNG, Brave} {
			c := New(Settings{Provider: p, APIBase: base, APIKey: "k-secret"})
			_, err := c.Search(context.Background(), Query{Text: query})
			if err == nil || strings.Contains(err.Error(), "private-words") || strings.Contains(err.Error(), "k-secret") {
				t.Errorf("%s at %s: %v", p, base, err)
			}
		}
	}
}
