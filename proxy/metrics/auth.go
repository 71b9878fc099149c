package metrics

import "github.com/prometheus/client_golang/prometheus"

// newAuthThrottled is the family of the attempts refused because their
// client address failed the master key too often (package authlimit).
func newAuthThrottled() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dragoman_auth_throttled_total",
		Help: "Requests refused with 429 because their client address failed to authenticate 10 times within a minute (the admin login, the admin API, the API).",
	})
}

// AuthThrottled counts a request refused because its client address failed
// to authenticate too often.
func (m *Metrics) AuthThrottled() {
	if m == nil {
		return
	}
	m.authThrottled.Inc()
}
