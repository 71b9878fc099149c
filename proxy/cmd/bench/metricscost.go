package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/tracing"
)

// metricsGoal is issue 15's limit: metrics on and off differ by at most
// this share of the added p50.
const metricsGoal = 0.03

// metricsSlices: the run of each case is cut into this many consecutive
// slices (each holding every target's requests of the same stretch of
// time, interleaved), and the share is taken in each: their median is the
// figure, their quartiles how far the machine's drift moved it.
const metricsSlices = 10

// metricsResult is one case through the stub direct, Dragoman with its
// metrics on (the default) and Dragoman with --metrics=false, interleaved
// in one run: what the metrics add to a request.
type metricsResult struct {
	name     string
	p50      [3]time.Duration // direct, metrics on, metrics off: the whole run
	cpu      [3]time.Duration // process CPU per request (the stub's for direct)
	requests int              // per target
	shares   []float64        // per slice: (on − off) / added p50 off, sorted
}

// share is the median over the slices of the difference of the added p50
// (on − off) as a share of the added p50 with metrics off.
func (m metricsResult) share() float64 { return quantile(m.shares, 0.5) }

// whole is the share from the whole run's p50s.
func (m metricsResult) whole() float64 { return addedShare(m.p50[0], m.p50[1], m.p50[2]) }

func (m metricsResult) met() bool { return len(m.shares) > 0 && math.Abs(m.share()) <= metricsGoal }

// spread is the middle half of the slices' shares (25th to 75th percentile).
func (m metricsResult) spread() string {
	return fmt.Sprintf("%+.1f … %+.1f %%", 100*quantile(m.shares, 0.25), 100*quantile(m.shares, 0.75))
}

// quantile of sorted values (the nearest rank below).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(q*float64(len(sorted)-1))]
}

// addedShare is (on − off) / (off − direct) of three p50s; 0 when nothing
// is added.
func addedShare(direct, on, off time.Duration) float64 {
	if off-direct <= 0 {
		return 0
	}
	return float64(on-off) / float64(off-direct)
}

// metricsCost runs each small Messages case (stream and not) through the
// three targets, metricsRounds rounds of interleaved batches.
func (r *runner) metricsCost(cases []*kase, stub, dm, dmOff *proc) []metricsResult {
	var out []metricsResult
	rounds := r.st.rounds
	r.st.rounds = r.st.metricsRounds
	defer func() { r.st.rounds = rounds }()
	for _, k := range cases {
		if k.api != "messages" || k.large {
			continue
		}
		ts := k.targets(stub.url, "", dm.url)
		off := ts[2]
		off.name, off.url = "dragoman-nometrics", dmOff.url+off.url[len(dm.url):]
		trio := []target{ts[0], ts[2], off}
		samples, cpu := r.interleaved(trio, []int{stub.pid(), dm.pid(), dmOff.pid()})
		m := metricsResult{name: k.name}
		for i := range trio {
			l := summarize(samples[i])
			m.p50[i], m.cpu[i] = l.p50, cpu[i]
			if i == 0 || l.n < m.requests {
				m.requests = l.n
			}
		}
		parts := metricsSlices
		if m.requests < 100*parts {
			parts = max(1, m.requests/100)
		}
		for s := range parts {
			var p [3]time.Duration
			for i := range trio {
				n := len(samples[i])
				p[i] = summarize(samples[i][s*n/parts : (s+1)*n/parts]).p50
			}
			m.shares = append(m.shares, addedShare(p[0], p[1], p[2]))
		}
		slices.Sort(m.shares)
		progress("  %-28s added p50: metrics on %s, off %s; Δ %+.1f %% (median of %d slices, middle half %s; whole run %+.1f %%); CPU/req on %s, off %s",
			k.name, us(m.p50[1]-m.p50[0]), us(m.p50[2]-m.p50[0]), 100*m.share(), len(m.shares), m.spread(), 100*m.whole(), us(m.cpu[1]), us(m.cpu[2]))
		out = append(out, m)
	}
	return out
}

// tracingOff is what tracing costs a request when it is off (no OTLP
// endpoint): the server's calls on its nil Tracer, measured in this
// process.
type tracingOff struct {
	perRequest time.Duration
	allocs     int64
}

func measureTracingOff() tracingOff {
	ctx, h := context.Background(), http.Header{}
	b := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tracing.RequestCalls(nil, ctx, h)
		}
	})
	return tracingOff{perRequest: time.Duration(b.NsPerOp()), allocs: b.AllocsPerOp()}
}

func (res *results) metricsTable() string {
	head := row{"case (1 connection)", "added p50, metrics on", "added p50, --metrics=false", "Δ / added p50, median of slices (goal ≤ 3 %)", "middle half of slices", "CPU/req on", "CPU/req off", "requests/target"}
	var rows []row
	for _, m := range res.metrics {
		rows = append(rows, row{m.name, us(m.p50[1] - m.p50[0]), us(m.p50[2] - m.p50[0]), fmt.Sprintf("%+.1f %%", 100*m.share()), m.spread(), us(m.cpu[1]), us(m.cpu[2]), fmt.Sprint(m.requests)})
	}
	return table(head, rows)
}

// metricsGoals are issue 15's target lines: for each case, metrics on vs
// off; and tracing off, per request, beside the smallest added p50.
func (res *results) metricsGoals() []goal {
	var g []goal
	var smallest time.Duration
	for _, m := range res.metrics {
		g = append(g, goal{"metrics on vs off, Δ added p50 (issue 15, " + m.name + ")", "≤ 3 % of the added p50",
			fmt.Sprintf("%+.1f %% (%s vs %s; middle half %s; whole run %+.1f %%)", 100*m.share(), us(m.p50[1]-m.p50[0]), us(m.p50[2]-m.p50[0]), m.spread(), 100*m.whole()), m.met()})
		if added := m.p50[2] - m.p50[0]; added > 0 && (smallest == 0 || added < smallest) {
			smallest = added
		}
	}
	t := res.tracingOff
	got := fmt.Sprintf("%d ns, %d allocs per request", t.perRequest.Nanoseconds(), t.allocs)
	if smallest > 0 {
		got += fmt.Sprintf(" (%.3f %% of the added p50 %s)", 100*float64(t.perRequest)/float64(smallest), us(smallest))
	}
	g = append(g, goal{"tracing off, what its hooks cost a request (issue 15)", "0 allocs, ≤ 0.1 % of the added p50", got,
		t.allocs == 0 && (smallest == 0 || float64(t.perRequest) <= 0.001*float64(smallest))})
	return g
}
