package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/tools/internal/procs"
)

// The aliases of the pool comparison, as long as alias so that the three
// requests are the same size: alias is the single backend (stub A),
// twinAlias the same stub again (the A/A control), poolAlias the pool of
// stubs A, B and C.
const (
	twinAlias = "claude-twin-5-5"
	poolAlias = "claude-pool-of3"
)

// poolLimit is issue 11's target: what a pool of 3 may add to a request.
const poolLimit = 5 * time.Microsecond

// interval is a median with its 95 % confidence interval.
type interval struct{ med, lo, hi time.Duration }

func (v interval) String() string {
	return fmt.Sprintf("%s [%s, %s]", signed(v.med), signed(v.lo), signed(v.hi))
}

func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + us(d)
	}
	return us(d)
}

// medianCI is the median of xs and its distribution-free 95 % confidence
// interval: the order statistics at ranks n/2 ∓ 1.96·√n/2 (the binomial
// count of values below the median, in its normal approximation). It
// assumes only that the xs are independent draws of one distribution.
func medianCI(xs []time.Duration) interval {
	n := len(xs)
	if n == 0 {
		return interval{}
	}
	s := slices.Sorted(slices.Values(xs))
	h := 1.96 * math.Sqrt(float64(n)) / 2
	at := func(r float64) time.Duration { return s[max(0, min(n-1, int(math.Round(r))))] }
	return interval{med: at(float64(n-1) / 2), lo: at(float64(n-1)/2 - h), hi: at(float64(n-1)/2 + h)}
}

// poolResult is what the pool comparison measured.
type poolResult struct {
	triples, failed int
	elapsed         time.Duration
	load            [2]string // load average at the start and the end
	p50, cpu        [3]time.Duration
	allocs          [3]float64
	// per-triple differences: [0] pool − single (the figure), [1] twin −
	// single (the A/A control), [2] pool − twin
	lat, cpuDiff [3]interval
	readCost     time.Duration // one CPU read by this process, median
}

var poolNames = [3]string{"single backend", "twin (A/A)", "pool of 3"}

// diffPairs are the per-triple differences the comparison reports, as
// indexes of poolNames: pool − single (the figure), twin − single (the
// A/A control: what the method finds between two equal aliases) and
// pool − twin.
var diffPairs = [3][2]int{{2, 0}, {1, 0}, {2, 1}}

// met is the rule of the goal: the upper bounds of the pool's intervals,
// latency and CPU, within the limit. A run too noisy to tell has a wide
// interval and does not meet it, whatever its median. The A/A control is
// printed beside it, not part of the rule.
func (p *poolResult) met() bool {
	return p.lat[0].hi <= poolLimit && p.cpuDiff[0].hi <= poolLimit
}

func (p *poolResult) goal() goal {
	return goal{what: "a pool of 3 over a single backend, per request (issue 11)",
		limit: "≤ 5 µs (upper bound of the 95 % interval)",
		got:   fmt.Sprintf("latency %s, CPU %s; A/A %s, %s", p.lat[0], p.cpuDiff[0], p.lat[1], p.cpuDiff[1]),
		met:   p.met()}
}

func (p *poolResult) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pool of 3 vs single backend (issue 11): %d triples in %.0f s, one request to each alias in random order, at one connection; load average %s → %s\n",
		p.triples, p.elapsed.Seconds(), p.load[0], p.load[1])
	if p.failed > 0 {
		fmt.Fprintf(&b, "  %d triples left out: a request failed\n", p.failed)
	}
	var rows []row
	for i, n := range poolNames {
		rows = append(rows, row{n, us(p.p50[i]), us(p.cpu[i]), strconv.FormatFloat(p.allocs[i], 'f', 1, 64)})
	}
	b.WriteString(table(row{"alias", "p50", "CPU/request, median", "allocations/request"}, rows))
	rows = nil
	for i, n := range []string{"pool of 3 − single", "twin − single (A/A)", "pool of 3 − twin"} {
		a, b := diffPairs[i][0], diffPairs[i][1]
		rows = append(rows, row{n, p.lat[i].String(), p.cpuDiff[i].String(), fmt.Sprintf("%+.1f", p.allocs[a]-p.allocs[b])})
	}
	b.WriteString(table(row{"per triple, median [95 % interval]", "latency", "Dragoman CPU", "allocations"}, rows))
	fmt.Fprintf(&b, "(a CPU read costs this process %s; it happens between requests)\n", us(p.readCost))
	return b.String()
}

// poolCompare measures what a pool costs (issue 11). One Dragoman process
// serves three aliases: the single backend (stub A), a twin of it (stub A
// again) and a pool of 3 (stubs A, B, C, session affinity). The small
// Messages request goes out with a session id chosen so that the pool
// sends it to stub A too: every request reaches the same stub process,
// and what differs is only the choice among three backends. Triples of
// requests, one to each alias in a random order, at one connection; the
// figure is the median of the per-triple difference (pool − single) with
// its 95 % interval, of latency and of Dragoman's CPU time to the
// nanosecond (schedstat, read between requests). The twin − single
// difference is an A/A control: what the method finds between two equal
// aliases. Heap allocations per request come from --pprof, in batches of
// one alias (a count that load does not move).
func (r *runner) poolCompare() (*poolResult, error) {
	var stubs []*proc
	for i := range 3 {
		s, err := r.stub(fmt.Sprint("pool-stub-", i), "--events", "8")
		if err != nil {
			return nil, err
		}
		stubs = append(stubs, s)
	}
	pprofPort, err := procs.FreePort()
	if err != nil {
		return nil, err
	}
	pprofURL := "http://127.0.0.1:" + itoa(pprofPort)
	d, err := r.dragomanPools("dragoman-pools", []poolEntry{{alias, stubs[0]}, {twinAlias, stubs[0]}, {poolAlias, stubs[0]}, {poolAlias, stubs[1]}, {poolAlias, stubs[2]}},
		"--pprof", "127.0.0.1:"+itoa(pprofPort))
	if err != nil {
		return nil, err
	}
	defer r.stopAll()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	var bodies [3][]byte
	for i, a := range []string{alias, twinAlias, poolAlias} {
		bodies[i] = []byte(`{"model":"` + a + `","max_tokens":64,"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	}
	session := ""
	send := func(i int) error {
		req, err := http.NewRequest(http.MethodPost, d.url+"/v1/messages", bytes.NewReader(bodies[i]))
		if err != nil {
			return err
		}
		req.Header = http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + clientKey},
			"Anthropic-Version": {"2023-06-01"}, "X-Claude-Code-Session-Id": {session}}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: status %d", poolNames[i], resp.StatusCode)
		}
		return err
	}
	clear := func() {
		for _, s := range stubs {
			req, _ := http.NewRequest(http.MethodDelete, s.url+"/_stub/requests", nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	if session, err = sessionOnFirst(stubs, func(s string) error { session = s; return send(2) }, clear); err != nil {
		return nil, err
	}
	res := &poolResult{}
	res.load[0] = loadAverage()
	rnd := rand.New(rand.NewPCG(1, 2))
	for range r.st.poolWarm {
		for _, i := range rnd.Perm(3) {
			if err := send(i); err != nil {
				return nil, fmt.Errorf("warm-up: %v", err)
			}
		}
	}
	clear()
	for i := range 3 {
		if res.allocs[i], err = allocsPerRequest(pprofURL, r.st.poolAllocs, func() error { return send(i) }); err != nil {
			return nil, err
		}
	}
	clear()

	meter, err := procs.NewCPUMeter(d.pid())
	if err != nil {
		return nil, fmt.Errorf("reading Dragoman's CPU time: %v", err)
	}
	defer meter.Close()
	// One triple: each alias's latency, and Dragoman's CPU time read just
	// before each request and once after the last. A request's CPU runs
	// from its read to the next one, so what Dragoman does after a
	// request's last byte falls on whichever request comes next: in a
	// random order, on each alias alike.
	var lat, cpu [3][]time.Duration
	var reads []time.Duration
	began := time.Now()
	for len(lat[0]) == 0 || time.Since(began) < r.st.poolFor {
		order := rnd.Perm(3)
		var at [4]time.Duration
		var took [3]time.Duration
		var failed error
		for j, i := range order {
			r0 := time.Now()
			c, err := meter.Read()
			if err != nil {
				return nil, fmt.Errorf("reading Dragoman's CPU time: %v", err)
			}
			t0 := time.Now()
			reads = append(reads, t0.Sub(r0))
			if err := send(i); err != nil {
				failed = err
			}
			at[j], took[i] = c, time.Since(t0)
		}
		if at[3], err = meter.Read(); err != nil {
			return nil, fmt.Errorf("reading Dragoman's CPU time: %v", err)
		}
		if failed != nil {
			res.failed++
			if res.failed > 10 && res.failed*100 > len(lat[0]) {
				return nil, fmt.Errorf("%d failed triples (last: %v)", res.failed, failed)
			}
			continue
		}
		for j, i := range order {
			lat[i] = append(lat[i], took[i])
			cpu[i] = append(cpu[i], at[j+1]-at[j])
		}
		if len(lat[0])%100 == 0 {
			clear() // the stub keeps every body: a growing heap would slow it down
		}
	}
	res.elapsed = time.Since(began)
	res.load[1] = loadAverage()
	res.triples = len(lat[0])
	res.readCost = medianCI(reads).med
	// Per triple, the differences of diffPairs. Not the pool less the
	// mean of the two singles: the mean of two skewed times has a higher
	// median than one of them, which would bias the median difference.
	paired := func(x [3][]time.Duration, i int) interval {
		a, b := diffPairs[i][0], diffPairs[i][1]
		d := make([]time.Duration, len(x[0]))
		for k := range d {
			d[k] = x[a][k] - x[b][k]
		}
		return medianCI(d)
	}
	for i := range 3 {
		res.p50[i], res.cpu[i] = medianCI(lat[i]).med, medianCI(cpu[i]).med
	}
	for i := range diffPairs {
		res.lat[i], res.cpuDiff[i] = paired(lat, i), paired(cpu, i)
	}
	return res, nil
}

// sessionOnFirst finds a session id that the pool sends to its first
// stub (the single backend's): toPool sends one request with a candidate,
// and the stubs' records say where it went.
func sessionOnFirst(stubs []*proc, toPool func(session string) error, clear func()) (string, error) {
	for n := range 64 {
		s := fmt.Sprint("bench-session-", n)
		clear()
		if err := toPool(s); err != nil {
			return "", fmt.Errorf("a request to the pool: %v", err)
		}
		var got [3]int
		for i, st := range stubs {
			c, err := stubRequests(st.url)
			if err != nil {
				return "", err
			}
			got[i] = c
		}
		if got == [3]int{1, 0, 0} {
			return s, nil
		}
	}
	return "", errors.New("no session id of 64 tried lands on the first stub of the pool")
}

// allocsPerRequest sends n requests and counts Dragoman's heap
// allocations (runtime.MemStats.Mallocs through its --pprof at url) per
// request, less what reading the count allocates itself.
func allocsPerRequest(url string, n int, send func() error) (float64, error) {
	m0, err := mallocs(url)
	if err != nil {
		return 0, err
	}
	m0b, err := mallocs(url)
	if err != nil {
		return 0, err
	}
	for range n {
		if err := send(); err != nil {
			return 0, err
		}
	}
	m1, err := mallocs(url)
	if err != nil {
		return 0, err
	}
	return float64((m1-m0b)-(m0b-m0)) / float64(n), nil
}

// mallocs is the count of heap allocations of the Dragoman whose
// --pprof listens at url (runtime.MemStats.Mallocs, as the heap profile's
// text form gives it): a figure that the machine's load does not move.
func mallocs(url string) (int64, error) {
	resp, err := http.Get(url + "/debug/pprof/heap?debug=1")
	if err != nil {
		return 0, fmt.Errorf("reading Dragoman's allocation count: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("reading Dragoman's allocation count: %v", err)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, "# Mallocs = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("reading Dragoman's allocation count: no '# Mallocs' in its heap profile")
}

// poolEntry is one model_list entry of the pool comparison's config.
type poolEntry struct {
	alias   string
	backend *proc
}

// dragomanPools starts Dragoman with a model_list entry per poolEntry, in
// order (entries of one alias form its pool), and extra arguments.
func (r *runner) dragomanPools(name string, entries []poolEntry, extra ...string) (*proc, error) {
	var cfg strings.Builder
	cfg.WriteString("model_list:\n")
	for _, e := range entries {
		cfg.WriteString("  - model_name: " + e.alias + "\n    proxy_params:\n      model: vendorb/" + backendModel + "\n      api_base: " + e.backend.url + "/v1\n      api_key: none\n")
	}
	cfg.WriteString("general_settings:\n  enable_vendora_pass_through: true\n")
	path := filepath.Join(r.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	return r.launch(name, []string{"PROXY_API_KEY=" + clientKey}, r.proxyBin,
		append([]string{"--config", path, "--host", "127.0.0.1", "--port", "PORT", "--log-level", "warn"}, extra...)...)
}

// stubRequests is how many requests the stub at url has recorded.
func stubRequests(url string) (int, error) {
	resp, err := http.Get(url + "/_stub/requests")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list []json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, fmt.Errorf("the stub's request record: %v", err)
	}
	return len(list), nil
}
