package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Warm request results (the result label of dragoman_warmer_requests_total).
const (
	WarmOK      = "ok"      // the backend answered 2xx, read to the end
	WarmError   = "error"   // a non-2xx answer or no connection
	WarmTimeout = "timeout" // no full answer within WARMER_TIMEOUT
)

// WarmResults lists the result label values.
var WarmResults = []string{WarmOK, WarmError, WarmTimeout}

// Warmer holds the warmer's families, in their own registry. A nil
// *Warmer is off.
type Warmer struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewWarmer registers the warmer's families, with a series at 0 for each
// model it warms and each result.
func NewWarmer(models []string) *Warmer {
	w := &Warmer{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dragoman_warmer_requests_total",
			Help: "Warm requests sent, by backend model and result (ok, error, timeout).",
		}, []string{"model", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dragoman_warmer_latency_seconds",
			Help:    "Time a warm request took, until its answer was read to the end or it failed: high when the model was cold.",
			Buckets: DurationBuckets,
		}, []string{"model"}),
	}
	w.reg = newRegistry(w.requests, w.latency)
	for _, m := range models {
		for _, r := range WarmResults {
			w.requests.WithLabelValues(m, r)
		}
		w.latency.WithLabelValues(m)
	}
	return w
}

// Observe reports one warm request.
func (w *Warmer) Observe(model, result string, latency time.Duration) {
	if w == nil {
		return
	}
	w.requests.WithLabelValues(model, result).Inc()
	w.latency.WithLabelValues(model).Observe(latency.Seconds())
}

// Registry is where the families are registered.
func (w *Warmer) Registry() *prometheus.Registry { return w.reg }

// Handler serves the families in the Prometheus text format.
func (w *Warmer) Handler() http.Handler { return serveRegistry(w.reg) }
