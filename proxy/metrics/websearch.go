package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SearchResults are the result label values of dragoman_web_searches_total:
// ok, or the error code the client was told.
var SearchResults = []string{"ok", "unavailable", "too_many_requests", "query_too_long", "invalid_input", "max_uses_exceeded"}

// searchFamilies are the web search families: every search a client's
// web search tool asked the proxy for, by provider and result, and how
// long those that reached the provider took.
type searchFamilies struct {
	searches *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newSearchFamilies(provider string) searchFamilies {
	f := searchFamilies{
		searches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_web_searches_total",
			Help: "Web searches the clients' web search tools asked for, by provider (search_settings.provider) and result: ok, or the error code the client was told.",
		}, []string{"provider", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dragoman_web_search_duration_seconds",
			Help:    "Time a web search took at the provider.",
			Buckets: DurationBuckets,
		}, []string{"provider"}),
	}
	if provider != "" {
		for _, r := range SearchResults {
			f.searches.WithLabelValues(provider, r)
		}
		f.duration.WithLabelValues(provider)
	}
	return f
}

// WebSearch counts one search with its result; took is its time at the
// provider (0: it did not reach the provider).
func (m *Metrics) WebSearch(provider, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.search.searches.WithLabelValues(provider, result).Inc()
	if took > 0 {
		m.search.duration.WithLabelValues(provider).Observe(took.Seconds())
	}
}
