package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// sample is one request as the client saw it.
type sample struct {
	start  time.Time // the request leaves the client
	first  time.Time // the first byte of the response body arrives
	end    time.Time // the body's end
	events int       // blank-line-ended events in the body (streams)
	ok     bool
}

func (s *sample) total() time.Duration { return s.end.Sub(s.start) }
func (s *sample) ttfb() time.Duration  { return s.first.Sub(s.start) }

// meter is the load generator's transport: vegeta sends each request
// through it, and it notes when the request left, when the first body
// byte came and when the body ended, in the slot of the current batch
// named by vegeta's X-Vegeta-Seq header.
type meter struct {
	rt    http.RoundTripper
	batch atomic.Pointer[[]sample]
}

func newMeter() *meter {
	return &meter{rt: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

func (m *meter) RoundTrip(req *http.Request) (*http.Response, error) {
	var s *sample
	if b := m.batch.Load(); b != nil {
		slot := req.Header.Get("X-Bench-Slot")
		if slot == "" {
			slot = req.Header.Get("X-Vegeta-Seq")
		}
		if i, err := strconv.Atoi(slot); err == nil && i < len(*b) {
			s = &(*b)[i]
		}
	}
	req.Header.Del("X-Bench-Slot")
	req.Header.Del("X-Vegeta-Seq")
	req.Header.Del("X-Vegeta-Attack")
	start := time.Now()
	resp, err := m.rt.RoundTrip(req)
	if err != nil || s == nil {
		return resp, err
	}
	s.start = start
	resp.Body = &timedBody{rc: resp.Body, s: s, ok: resp.StatusCode == http.StatusOK}
	return resp, nil
}

type timedBody struct {
	rc   io.ReadCloser
	s    *sample
	ok   bool
	prev byte
	seen bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		if !b.seen {
			b.s.first, b.seen = time.Now(), true
		}
		for _, c := range p[:n] {
			if c == '\n' && b.prev == '\n' {
				b.s.events++
			}
			b.prev = c
		}
	}
	if err == io.EOF {
		b.s.end = time.Now()
		if !b.seen {
			b.s.first = b.s.end
		}
		b.s.ok = b.ok
	}
	return n, err
}

func (b *timedBody) Close() error { return b.rc.Close() }

// target is one place a case's request goes: the stub, the floor or
// Dragoman, with the body that place takes.
type target struct {
	name   string
	url    string
	body   []byte
	header http.Header
}

func (t target) targeter() vegeta.Targeter {
	tg := vegeta.Target{Method: http.MethodPost, URL: t.url, Body: t.body, Header: t.header}
	return func(dst *vegeta.Target) error {
		*dst = tg
		return nil
	}
}

// mixed sends rounds of one request to each target at one connection,
// the order rotating each round, so that every target sees the same
// machine from one request to the next. It returns each target's samples
// and failures.
func (g *loadGen) mixed(ts []target, rounds int) ([][]sample, []int) {
	batch, which, errs := g.mixedSlots(ts, rounds, nil)
	out := make([][]sample, len(ts))
	for slot, s := range batch {
		if s.ok {
			out[which(slot)] = append(out[which(slot)], s)
		}
	}
	return out, errs
}

// mixedSlots is mixed's run: every request in the order sent (a failed
// one not ok), which target each slot went to (each round of len(ts)
// slots holds one request to each), and each target's failures. With
// shuffle, each round's order is a random permutation instead of the
// rotation, so that no target always follows the same one (a request
// leaves the machine's caches and the next process's wake-up in a state
// that depends on where it went).
func (g *loadGen) mixedSlots(ts []target, rounds int, shuffle *rand.Rand) ([]sample, func(slot int) int, []int) {
	k := len(ts)
	n := rounds * k
	which := func(slot int) int { return (slot/k + slot%k) % k }
	if shuffle != nil {
		order := make([]int, n)
		for r := range rounds {
			copy(order[r*k:], shuffle.Perm(k))
		}
		which = func(slot int) int { return order[slot] }
	}
	batch := make([]sample, n)
	g.m.batch.Store(&batch)
	defer g.m.batch.Store(nil)
	var next atomic.Int64
	tgts := make([]vegeta.Target, k)
	for i, t := range ts {
		tgts[i] = vegeta.Target{Method: http.MethodPost, URL: t.url, Body: t.body, Header: t.header}
	}
	targeter := func(dst *vegeta.Target) error {
		slot := int(next.Add(1) - 1)
		*dst = tgts[which(slot)]
		dst.Header = dst.Header.Clone()
		if dst.Header == nil {
			dst.Header = http.Header{}
		}
		dst.Header.Set("X-Bench-Slot", strconv.Itoa(slot))
		return nil
	}
	a := vegeta.NewAttacker(vegeta.Client(g.client), vegeta.Workers(1), vegeta.MaxWorkers(1), vegeta.MaxBody(0))
	errs := make([]int, k)
	for res := range a.Attack(targeter, countPacer{uint64(n)}, 0, "mixed") {
		if res.Error != "" || res.Code != http.StatusOK {
			errs[which(int(res.Seq))]++
		}
	}
	for i, e := range errs {
		if e > 0 {
			warnf("%s: %d failed requests", ts[i].name, e)
		}
	}
	return batch, which, errs
}

// countPacer sends as fast as the workers allow, n requests in all.
type countPacer struct{ n uint64 }

func (p countPacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	return 0, hits >= p.n
}

func (p countPacer) Rate(time.Duration) float64 { return 0 }

type loadGen struct {
	m      *meter
	client *http.Client
}

func newLoadGen() *loadGen {
	m := newMeter()
	return &loadGen{m: m, client: &http.Client{Transport: m, Timeout: 60 * time.Second}}
}

// run sends n requests to t with conc requests in flight at a time (a
// closed loop: each worker sends its next request when its last one has
// ended), or as many as fit in dur when dur > 0. It returns the samples of
// the requests that completed.
func (g *loadGen) run(t target, conc int, n int, dur time.Duration) ([]sample, int, time.Duration) {
	max := n
	if dur > 0 {
		// Enough slots for any rate this machine reaches.
		max = int(dur.Seconds()*200000) + conc
	}
	batch := make([]sample, max)
	g.m.batch.Store(&batch)
	defer g.m.batch.Store(nil)
	a := vegeta.NewAttacker(vegeta.Client(g.client), vegeta.Workers(uint64(conc)), vegeta.MaxWorkers(uint64(conc)), vegeta.MaxBody(0))
	var pacer vegeta.Pacer = countPacer{uint64(n)}
	if dur > 0 {
		pacer = countPacer{uint64(max)}
	}
	began := time.Now()
	var mu sync.Mutex
	errs := 0
	var lastErr string
	for res := range a.Attack(t.targeter(), pacer, dur, t.name) {
		if res.Error != "" || res.Code != http.StatusOK {
			mu.Lock()
			errs++
			lastErr = fmt.Sprintf("%d %s", res.Code, res.Error)
			mu.Unlock()
		}
	}
	elapsed := time.Since(began)
	out := batch[:0]
	for _, s := range batch {
		if s.ok {
			out = append(out, s)
		}
	}
	if errs > 0 {
		warnf("%s: %d failed requests (last: %s)", t.name, errs, lastErr)
	}
	return out, errs, elapsed
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func sortedOf(samples []sample, f func(*sample) time.Duration) []time.Duration {
	d := make([]time.Duration, len(samples))
	for i := range samples {
		d[i] = f(&samples[i])
	}
	slices.Sort(d)
	return d
}
