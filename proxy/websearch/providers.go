package websearch

// Each provider's request and answer (fixtures/websearch has one answer of
// each).

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// searxngRequest is SearXNG's JSON API: GET {api_base}/search?q=…&format=json
// (the instance's settings.yml must list json under search.formats, or it
// answers 403). A key, when set, goes as a bearer token, for an instance
// behind an authenticating proxy.
func (c *Client) searxngRequest(ctx context.Context, q Query) (*http.Request, func([]byte) ([]Result, error), error) {
	v := url.Values{"q": {siteQuery(q)}, "format": {"json"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.s.APIBase+"/search?"+v.Encode(), nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.s.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.s.APIKey)
	}
	return req, decodeSearXNG, nil
}

func decodeSearXNG(b []byte) ([]Result, error) {
	var a struct {
		Results []struct {
			URL           string  `json:"url"`
			Title         string  `json:"title"`
			Content       string  `json:"content"`
			PublishedDate *string `json:"publishedDate"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(a.Results))
	for _, r := range a.Results {
		res := Result{URL: r.URL, Title: r.Title, Snippet: r.Content}
		if r.PublishedDate != nil {
			res.PageAge = *r.PublishedDate
		}
		out = append(out, res)
	}
	return out, nil
}

// braveRequest is Brave Search's web search: GET
// {api_base}/res/v1/web/search?q=…&count=N[&country=CC] with the key in
// X-Subscription-Token.
func (c *Client) braveRequest(ctx context.Context, q Query) (*http.Request, func([]byte) ([]Result, error), error) {
	count := c.s.MaxResults
	if count > 20 { // Brave's limit
		count = 20
	}
	v := url.Values{"q": {siteQuery(q)}, "count": {strconv.Itoa(count)}}
	if q.Country != "" {
		v.Set("country", strings.ToLower(q.Country))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.s.APIBase+"/res/v1/web/search?"+v.Encode(), nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", c.s.APIKey)
	return req, decodeBrave, nil
}

func decodeBrave(b []byte) ([]Result, error) {
	var a struct {
		Web struct {
			Results []struct {
				URL         string `json:"url"`
				Title       string `json:"title"`
				Description string `json:"description"`
				PageAge     string `json:"page_age"`
				Age         string `json:"age"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(a.Web.Results))
	for _, r := range a.Web.Results {
		age := r.PageAge
		if age == "" {
			age = r.Age
		}
		out = append(out, Result{URL: r.URL, Title: plain(r.Title), Snippet: plain(r.Description), PageAge: age})
	}
	return out, nil
}

// tavilyRequest is Tavily's search: POST {api_base}/search with a JSON body
// and the key as a bearer token; the domain lists and the country are
// members of the body.
func (c *Client) tavilyRequest(ctx context.Context, q Query) (*http.Request, func([]byte) ([]Result, error), error) {
	body := struct {
		Query          string   `json:"query"`
		MaxResults     int      `json:"max_results"`
		IncludeDomains []string `json:"include_domains,omitempty"`
		ExcludeDomains []string `json:"exclude_domains,omitempty"`
		Country        string   `json:"country,omitempty"`
	}{q.Text, c.s.MaxResults, q.AllowedDomains, q.BlockedDomains, tavilyCountry(q.Country)}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.s.APIBase+"/search", bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.s.APIKey)
	return req, decodeTavily, nil
}

// tavilyCountry: Tavily takes a country's English name in lower case; the
// Messages API's user_location gives an ISO code. The common ones are
// mapped; another code is left out rather than sent wrong.
func tavilyCountry(code string) string {
	return map[string]string{
		"US": "united states", "GB": "united kingdom", "CA": "canada", "AU": "australia",
		"DE": "germany", "FR": "france", "ES": "spain", "IT": "italy", "NL": "netherlands",
		"JP": "japan", "IN": "india", "BR": "brazil", "MX": "mexico", "CN": "china",
	}[strings.ToUpper(code)]
}

func decodeTavily(b []byte) ([]Result, error) {
	var a struct {
		Results []struct {
			URL           string `json:"url"`
			Title         string `json:"title"`
			Content       string `json:"content"`
			PublishedDate string `json:"published_date"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(a.Results))
	for _, r := range a.Results {
		out = append(out, Result{URL: r.URL, Title: r.Title, Snippet: r.Content, PageAge: r.PublishedDate})
	}
	return out, nil
}

// plain drops the markup Brave puts in titles and descriptions (<strong>
// around the query's words) and unescapes entities.
func plain(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return html.UnescapeString(b.String())
}
