package metrics

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// exported gathers the names of every family the proxy (web search on) and
// the warmer export at start-up.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	// With web search on, as docs/metrics.md's web search rows assume: its
	// families have series from start-up only then.
	m := New(Setup{Version: "test", Routes: []Route{{Alias: "a", Backend: "b"}}, SearchProvider: "searxng"})
	w := NewWarmer([]string{"model"})
	for _, reg := range []prometheus.Gatherer{m.Registry(), w.Registry()} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
	}
	return names
}

var metricName = regexp.MustCompile(`\b(?:dragoman|go|process)_[a-z0-9_]*[a-z0-9]`)

// TestDashboardAndDocsMetricsExported: every metric the Grafana dashboard
// queries and the README and docs/ pages name is exported from start-up;
// the dashboard and docs/metrics.md, which list them all, name at least 10.
func TestDashboardAndDocsMetricsExported(t *testing.T) {
	names := exported(t)
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	listing := map[string]bool{"../../deploy/grafana/dragoman.json": true, "../../docs/metrics.md": true}
	for _, file := range append([]string{"../../deploy/grafana/dragoman.json", "../../README.md"}, pages...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, n := range metricName.FindAllString(string(b), -1) {
			if strings.HasPrefix(n, "go_") && !strings.Contains(string(b), n+"{") && !strings.Contains(string(b), n+"`") {
				continue // prose such as go_test, not a metric
			}
			found++
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if trimmed := strings.TrimSuffix(n, suffix); trimmed != n && names[trimmed] {
					base = trimmed
				}
			}
			if !names[base] {
				t.Errorf("%s names %s, which is not exported", file, n)
			}
		}
		if listing[file] && found < 10 {
			t.Errorf("%s: only %d metric names found: is the pattern right?", file, found)
		}
	}
}

// TestExpositionLint: the families pass promtool's lint (the one of
// promtool check metrics) after an observation of each kind.
func TestExpositionLint(t *testing.T) {
	m := New(Setup{Version: "test", Routes: []Route{{Alias: "a", Backend: "b"}}})
	m.Observe(&Request{Endpoint: EndpointMessages, Alias: "a", Backend: "b", Status: 200, ErrorType: ErrorNone,
		Duration: time.Second, FirstToken: 100 * time.Millisecond, Usage: Usage{Input: 10, Output: 20}, Pings: 1})
	m.Retried("b", "status_503")
	m.SessionMoved("a", "down")
	m.QueueWait("b", time.Millisecond)
	m.TextToolCall("a", textcall.Hermes)
	m.AuthThrottled()
	w := NewWarmer([]string{"model"})
	w.Observe("model", WarmOK, time.Second)
	var text bytes.Buffer
	for _, reg := range []prometheus.Gatherer{m.Registry(), w.Registry()} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(&text, mf); err != nil {
				t.Fatal(err)
			}
		}
		problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	// make lint hands this file to promtool check metrics.
	if out := os.Getenv("DRAGOMAN_EXPOSITION"); out != "" {
		if err := os.WriteFile(out, text.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
