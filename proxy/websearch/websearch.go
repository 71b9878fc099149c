// Package websearch runs web searches at the provider that
// search_settings names: a self-hosted SearXNG instance's JSON API, Brave
// Search or Tavily. It knows each provider's request and answer, and
// nothing of the formats clients speak: a search is a Query in and
// Results or an *Error (with the error code a client is told) out.
package websearch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Providers are the values search_settings.provider takes.
const (
	SearXNG = "searxng"
	Brave   = "brave"
	Tavily  = "tavily"
)

// Providers lists the providers in the order the docs name them.
var Providers = []string{SearXNG, Brave, Tavily}

// DefaultAPIBase is the API base of a hosted provider; a SearXNG instance
// has none (it is the user's own).
var DefaultAPIBase = map[string]string{
	Brave:  "https://api.search.brave.com",
	Tavily: "https://api.tavily.com",
}

// Defaults of search_settings.
const (
	DefaultMaxResults = 5
	DefaultTimeout    = 10 * time.Second
	DefaultTimeBudget = 60 * time.Second
	// MaxQueryLength is the longest query searched, in characters; a
	// longer one is a query_too_long error.
	MaxQueryLength = 400
)

// Settings say which provider to ask and how.
type Settings struct {
	Provider   string
	APIBase    string // without a trailing slash
	APIKey     string // brave and tavily; a SearXNG instance may need none
	MaxResults int
	Timeout    time.Duration // one search
	// TimeBudget bounds the searches of one request, all together.
	TimeBudget time.Duration
}

// Query is one search.
type Query struct {
	Text           string
	AllowedDomains []string // only results from these domains (and their subdomains)
	BlockedDomains []string // never results from these
	Country        string   // ISO 3166-1 alpha-2, from the user's location; may be empty
}

// Result is one search result.
type Result struct {
	URL     string
	Title   string
	Snippet string // the provider's text about the page, plain text
	PageAge string // when the page was published or changed, as the provider says it; may be empty
}

// Code is what went wrong with a search, in the terms the Messages API
// uses for its web_search_tool_result_error.
type Code string

// Error codes.
const (
	Unavailable     Code = "unavailable"
	MaxUsesExceeded Code = "max_uses_exceeded"
	QueryTooLong    Code = "query_too_long"
	TooManyRequests Code = "too_many_requests"
	InvalidInput    Code = "invalid_input"
)

// Error is a search that failed.
type Error struct {
	Code   Code
	Detail string // for the log; never holds the key
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Detail }

// CodeOf is err's code: Unavailable when err is not an *Error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Unavailable
}

// Client searches at one provider. It is safe for concurrent use.
type Client struct {
	s    Settings
	http *http.Client
}

// New returns a client for s, with the defaults filled in.
func New(s Settings) *Client {
	if s.MaxResults <= 0 {
		s.MaxResults = DefaultMaxResults
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.TimeBudget <= 0 {
		s.TimeBudget = DefaultTimeBudget
	}
	if s.APIBase == "" {
		s.APIBase = DefaultAPIBase[s.Provider]
	}
	s.APIBase = strings.TrimSuffix(s.APIBase, "/")
	return &Client{s: s, http: &http.Client{Transport: http.DefaultTransport, CheckRedirect: sameHost}}
}

// errOtherHost is the error of a provider's redirect to another host: it
// is not followed, so that the key (Brave's X-Subscription-Token, a
// bearer token) never goes there.
var errOtherHost = errors.New("the provider redirected to another host, which is not followed (the key would go there)")

// sameHost is the search client's redirect policy: a redirect to the
// provider's own scheme and host is followed (at most 5), with no Referer
// (it would hold the query); one to another host is not.
func sameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("more than 5 redirects")
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) {
		return errOtherHost
	}
	req.Header.Del("Referer")
	return nil
}

// Provider is the provider's name (a metrics label).
func (c *Client) Provider() string { return c.s.Provider }

// TimeBudget is how long the searches of one request may take in all.
func (c *Client) TimeBudget() time.Duration { return c.s.TimeBudget }

// Search runs q. Its error is an *Error.
func (c *Client) Search(ctx context.Context, q Query) ([]Result, error) {
	q.Text = strings.TrimSpace(q.Text)
	if q.Text == "" {
		return nil, &Error{Code: InvalidInput, Detail: "the query is empty"}
	}
	if n := utf8.RuneCountInString(q.Text); n > MaxQueryLength {
		return nil, &Error{Code: QueryTooLong, Detail: fmt.Sprintf("the query has %d characters, more than %d", n, MaxQueryLength)}
	}
	ctx, cancel := context.WithTimeout(ctx, c.s.Timeout)
	defer cancel()
	req, decode, err := c.request(ctx, q)
	if err != nil {
		return nil, &Error{Code: Unavailable, Detail: err.Error()}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &Error{Code: Unavailable, Detail: c.scrub(transportError(ctx, err))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, &Error{Code: Unavailable, Detail: c.scrub(transportError(ctx, err))}
	}
	if resp.StatusCode != http.StatusOK {
		code := Unavailable
		if resp.StatusCode == http.StatusTooManyRequests {
			code = TooManyRequests
		}
		return nil, &Error{Code: code, Detail: fmt.Sprintf("%s answered %d: %s", c.s.Provider, resp.StatusCode, c.scrub(withoutQuery(clip(string(body), 200), q)))}
	}
	results, err := decode(body)
	if err != nil {
		return nil, &Error{Code: Unavailable, Detail: fmt.Sprintf("%s's answer is not what it sends: %v", c.s.Provider, err)}
	}
	return filter(results, q, c.s.MaxResults), nil
}

// request builds the provider's request for q and the decoder of its
// answer.
func (c *Client) request(ctx context.Context, q Query) (*http.Request, func([]byte) ([]Result, error), error) {
	switch c.s.Provider {
	case SearXNG:
		return c.searxngRequest(ctx, q)
	case Brave:
		return c.braveRequest(ctx, q)
	case Tavily:
		return c.tavilyRequest(ctx, q)
	}
	return nil, nil, fmt.Errorf("unknown provider %q", c.s.Provider)
}

// siteQuery adds the domain filters to a query as the site: operators
// that SearXNG's engines and Brave understand.
func siteQuery(q Query) string {
	var b strings.Builder
	b.WriteString(q.Text)
	if len(q.AllowedDomains) > 0 {
		b.WriteString(" (")
		for i, d := range q.AllowedDomains {
			if i > 0 {
				b.WriteString(" OR ")
			}
			b.WriteString("site:" + d)
		}
		b.WriteString(")")
	}
	for _, d := range q.BlockedDomains {
		b.WriteString(" -site:" + d)
	}
	return b.String()
}

// filter keeps the results the domain lists allow, at most max, and drops
// those without a URL; a provider that ignored the site: operators is
// held to them here.
func filter(results []Result, q Query, max int) []Result {
	out := results[:0]
	for _, r := range results {
		if r.URL == "" || len(out) == max {
			continue
		}
		host := hostOf(r.URL)
		if len(q.AllowedDomains) > 0 && !anyDomain(host, q.AllowedDomains) {
			continue
		}
		if anyDomain(host, q.BlockedDomains) {
			continue
		}
		if r.Title == "" {
			r.Title = r.URL
		}
		out = append(out, r)
	}
	return out
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// anyDomain reports whether host is one of domains or under one.
func anyDomain(host string, domains []string) bool {
	for _, d := range domains {
		d = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "www."))
		if i := strings.Index(d, "/"); i >= 0 { // "example.com/path": the host part
			d = d[:i]
		}
		h := strings.TrimPrefix(host, "www.")
		if d != "" && (h == d || strings.HasSuffix(h, "."+d)) {
			return true
		}
	}
	return false
}

func transportError(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "no answer within the search timeout (search_settings.timeout)"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "no answer within the search timeout (search_settings.timeout)"
	}
	// A *url.Error's text holds the URL, and so the query: its cause
	// alone goes to the log.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return "unreachable: " + err.Error()
}

// withoutQuery takes a query's text out of a provider's answer meant for a
// log (an error page may repeat it): no log line holds what was searched.
func withoutQuery(s string, q Query) string {
	for _, form := range []string{siteQuery(q), url.QueryEscape(siteQuery(q)), q.Text, url.QueryEscape(q.Text), url.PathEscape(q.Text)} {
		if form != "" {
			s = strings.ReplaceAll(s, form, "[query]")
		}
	}
	return s
}

// scrub removes the key from text meant for a log.
func (c *Client) scrub(s string) string {
	if c.s.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.s.APIKey, "[key]")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
