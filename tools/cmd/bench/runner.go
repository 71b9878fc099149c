package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/tools/internal/procs"
)

type runner struct {
	st       settings
	dir      string
	self     string
	floorBin string // a copy of self that the floor runs from (privateCopy)
	proxyBin string
	stubBin  string
	gen      *loadGen
	procs    []*proc
	profile  string // with --profile: Dragoman runs in-process (bench serve) and writes its profiles here
	only     string // with --cases: run only the cases whose name holds this
	stubURL  string // the stub whose request record is cleared between batches
	// dmEnv: extra environment for every Dragoman process (--dragoman-env),
	// e.g. GOGC=off; abEnv: more for the --ab binary's only (--ab-env)
	dmEnv, abEnv []string
	// dmConfig: YAML appended to the Dragoman processes' config; abConfig:
	// the --ab binary's instead (--ab-config), e.g. router_settings.
	dmConfig, abConfig string
	// dmParams: proxy_params lines added to every route of the Dragoman
	// processes'; abParams: --ab-params, the B Dragoman's (textcalls.go).
	dmParams, abParams string
}

func (r *runner) stopAll() {
	for i := len(r.procs) - 1; i >= 0; i-- {
		r.procs[i].stop()
	}
	r.procs = nil
}

func (r *runner) launch(name string, env []string, path string, args ...string) (*proc, error) {
	pr, url, err := procs.StartOnFreePort(r.dir, name, "/healthz", env, path, args...)
	if err != nil {
		return nil, err
	}
	p := &proc{Process: pr, url: url}
	r.procs = append(r.procs, p)
	return p, nil
}

func (r *runner) stub(name string, args ...string) (*proc, error) {
	return r.launch(name, nil, r.stubBin, append([]string{"--host", "127.0.0.1", "--port", "PORT"}, args...)...)
}

// chain starts the three processes of a measurement: a stub (with
// stubArgs) and, in front of it, the floor and Dragoman at log level warn.
// Their logs are stub, floor and dragoman, each followed by suffix.
func (r *runner) chain(suffix string, stubArgs ...string) (stub, fl, dm *proc, err error) {
	if stub, err = r.stub("stub"+suffix, stubArgs...); err != nil {
		return nil, nil, nil, err
	}
	if fl, err = r.floor("floor"+suffix, stub); err != nil {
		return nil, nil, nil, err
	}
	if dm, err = r.dragoman("dragoman"+suffix, stub, "warn"); err != nil {
		return nil, nil, nil, err
	}
	return stub, fl, dm, nil
}

func (r *runner) floor(name string, backend *proc) (*proc, error) {
	return r.launch(name, nil, r.floorBin, "floor", "--port", "PORT", "--backend", backend.url)
}

func (r *runner) dragoman(name string, backend *proc, level string, extra ...string) (*proc, error) {
	cfg, err := dragomanConfig(r.dir, name, backend.url, r.dmConfig)
	if err == nil && r.dmParams != "" {
		err = addRouteParams(cfg, r.dmParams) // textcalls.go
	}
	if err != nil {
		return nil, err
	}
	return r.dragomanOn(name, cfg, level, extra...)
}

// dragomanOn starts Dragoman on the config file cfg.
func (r *runner) dragomanOn(name, cfg, level string, extra ...string) (*proc, error) {
	env := append([]string{"PROXY_API_KEY=" + clientKey}, r.dmEnv...)
	if r.profile != "" {
		return r.launch(name, env, r.self, append([]string{"serve", "--config", cfg, "--port", "PORT", "--log-level", level,
			"--cpuprofile", filepath.Join(r.profile, name+".cpu.pprof"), "--memprofile", filepath.Join(r.profile, name+".allocs.pprof")}, extra...)...)
	}
	return r.launch(name, env, r.proxyBin,
		append([]string{"--config", cfg, "--host", "127.0.0.1", "--port", "PORT", "--log-level", level}, extra...)...)
}

// latency is one target's numbers for one case at one connection.
type latency struct {
	n         int
	p50, p99  time.Duration // request to end of body
	ttfb50    time.Duration // request to first body byte
	body50    time.Duration // first body byte to end of body
	events    int           // events in one answer (streams)
	cpu       time.Duration // process CPU per request (not for direct: the stub's)
	cpuLoaded time.Duration // process CPU per request at 32 connections
	rps       [2]float64    // at 32 and 256 connections
}

type caseResult struct {
	k   *kase
	via [3]latency // direct, floor, dragoman
	// bufFloor: the floor reading each body whole before forwarding it
	// (54 KB non-stream cases only), what any proxy that parses the body
	// before choosing a backend pays at least.
	bufFloor *latency
	// textAuto, textOff: two more Dragomans, tool_calls_in_text auto (the
	// default) and off on every route, each started for this case alone
	// from a copy of its own (messages 54 KB stream only, issue 38): the
	// two differ in the setting only (textCallsPair).
	textAuto, textOff *latency
}

type memResult struct {
	idle, peakRun, peakStreams int64 // VmHWM
	streams                    int   // streams completed in the phase
}

type logResult struct {
	name     string
	p50      [2]time.Duration // warn, info
	cpu      [2]time.Duration
	requests int
}

type results struct {
	cases        []caseResult
	mem          [2]memResult // floor, dragoman
	logging      []logResult
	metrics      []metricsResult
	tracingOff   inProcess
	searchScan   inProcess // issue 31: the web search scan of a request without the tool
	streamEvents int
	pool         *poolResult // the pool comparison (issue 11), when it ran

	quick          bool
	goVersion, cpu string
	cores          int
	date           time.Time
}

var concurrencies = [2]int{32, 256}

// chosenCases returns the cases whose name holds --cases (r.only) and,
// when keep is not nil, that keep accepts; none is an error naming what.
func (r *runner) chosenCases(what string, keep func(*kase) bool) ([]*kase, error) {
	all, err := buildCases()
	if err != nil {
		return nil, err
	}
	var cases []*kase
	for _, k := range all {
		if strings.Contains(k.name, r.only) && (keep == nil || keep(k)) {
			cases = append(cases, k)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no %s matches %q", what, r.only)
	}
	return cases, nil
}

func (r *runner) all() (*results, error) {
	cases, err := r.chosenCases("case", nil)
	if err != nil {
		return nil, err
	}
	stub, fl, dm, err := r.chain("", "--events", "64", "--protocol", "messages")
	if err != nil {
		return nil, err
	}
	r.stubURL = stub.url
	dmInfo, err := r.dragoman("dragoman-info", stub, "info")
	if err != nil {
		return nil, err
	}
	flBuf, err := r.launch("floor-buffered", nil, r.floorBin, "floor", "--buffer", "--port", "PORT", "--backend", stub.url)
	if err != nil {
		return nil, err
	}
	dmAuto, dmOff, err := r.textCallsPair(stub)
	if err != nil {
		return nil, err
	}
	pids := [3]int{stub.pid(), fl.pid(), dm.pid()}
	res := &results{}

	// Every case once through each target: the answer is right, and the
	// code paths are warm.
	for _, k := range cases {
		for _, t := range k.targets(stub.url, fl.url, dm.url) {
			if err := check(r.gen, t, k.stream); err != nil {
				return nil, fmt.Errorf("%s via %s: %w", k.name, t.name, err)
			}
		}
	}
	progress("1 connection: %d cases × 3 targets × %d requests, one to each target in turn", len(cases), r.st.rounds*r.st.batch)
	for _, k := range cases {
		cr := caseResult{k: k}
		ts := k.targets(stub.url, fl.url, dm.url)
		all, allPids := ts[:], pids[:]
		if k.large && !k.stream {
			all = append(all, target{name: "floor-buffered", url: flBuf.url + k.backendPath(), body: k.chatBody, header: k.header})
			allPids = append(allPids, flBuf.pid())
		}
		if k.textCallsCase() {
			for _, p := range []struct {
				name string
				*proc
			}{{"dragoman-textcalls-auto", dmAuto}, {"dragoman-textcalls-off", dmOff}} {
				t := ts[2]
				t.name, t.url = p.name, p.url+t.url[len(dm.url):]
				if err := check(r.gen, t, k.stream); err != nil {
					return nil, fmt.Errorf("%s via %s: %w", k.name, t.name, err)
				}
				all = append(all, t)
				allPids = append(allPids, p.pid())
			}
		}
		samples, cpu := r.interleaved(all, allPids)
		for i := range ts {
			cr.via[i] = summarize(samples[i])
			cr.via[i].cpu = cpu[i]
		}
		extra := func() *latency {
			l := summarize(samples[len(ts)])
			l.cpu = cpu[len(ts)]
			samples, cpu = samples[1:], cpu[1:]
			return &l
		}
		if k.large && !k.stream {
			cr.bufFloor = extra()
		}
		if k.textCallsCase() {
			cr.textAuto, cr.textOff = extra(), extra()
		}
		res.cases = append(res.cases, cr)
		progress("  %-28s added p50: floor %s, dragoman %s", k.name,
			us(cr.via[1].p50-cr.via[0].p50), us(cr.via[2].p50-cr.via[0].p50))
	}
	progress("throughput: %d cases × 3 targets at %d and %d connections", len(cases), concurrencies[0], concurrencies[1])
	for ci, c := range concurrencies {
		for i := range res.cases {
			cr := &res.cases[i]
			ts := cr.k.targets(stub.url, fl.url, dm.url)
			rps, cpu := r.throughput(ts[:], pids[:], c)
			for j := range ts {
				cr.via[j].rps[ci] = rps[j]
				if ci == 0 {
					cr.via[j].cpuLoaded = cpu[j]
				}
			}
			progress("  %-28s c=%-3d rps: direct %.0f, floor %.0f, dragoman %.0f", cr.k.name, c, rps[0], rps[1], rps[2])
		}
	}
	for i, p := range []*proc{fl, dm} {
		res.mem[i].peakRun, _, _ = memory(p.pid())
	}

	progress("logging: Dragoman at --log-level info (one line per request) beside warn")
	for _, k := range cases {
		if k.stream || k.api == "responses" || k.api == "native" || (k.api == "chat") != !k.large {
			continue // chat small and messages 54 KB, non-stream
		}
		ts := k.targets(stub.url, fl.url, dm.url)
		info := ts[2]
		info.name, info.url = "dragoman-info", dmInfo.url+info.url[len(dm.url):]
		pair := []target{ts[2], info}
		rounds := r.st.rounds
		r.st.rounds = r.st.logRounds
		samples, cpu := r.interleaved(pair, []int{dm.pid(), dmInfo.pid()})
		r.st.rounds = rounds
		lr := logResult{name: k.name}
		for i := range pair {
			l := summarize(samples[i])
			lr.p50[i], lr.cpu[i], lr.requests = l.p50, cpu[i], l.n
		}
		res.logging = append(res.logging, lr)
	}
	progress("metrics: four Dragoman servers in one fresh process (bench serve --twins), two with metrics on (the default), two off, and the stub direct, one request to each in turn")
	if res.metrics, err = r.metricsCost(cases, stub); err != nil {
		return nil, err
	}
	res.tracingOff = measureTracingOff()
	progress("tracing off: its hooks cost %d ns and %d allocations per request (measured in this process)", res.tracingOff.perRequest.Nanoseconds(), res.tracingOff.allocs)
	if res.searchScan, err = measureSearchScan(cases); err != nil {
		progress("web search on: not measured: %v", err)
	} else {
		progress("web search on: a 54 KB request without its tool costs %d ns and %d allocations more (measured in this process)", res.searchScan.perRequest.Nanoseconds(), res.searchScan.allocs)
	}
	obs := measureObserve()
	progress("metrics in this process: Observe costs %d ns and %d allocations per request", obs.perRequest.Nanoseconds(), obs.allocs)
	for _, g := range res.metricsGoals() {
		progress("  target: %s: %s, limit %s", g.what, g.got, g.limit)
	}
	r.stopAll()
	if r.only != "" {
		return res, nil // a chosen few cases: no memory phase (--mem-only runs it alone)
	}
	return res, r.memory(res)
}

// memory is the memory phase: fresh processes (stub, floor, Dragoman) in
// front of a paced stub, idle after one small request, then with 256
// streams of the 54 KB Messages request open at once. It fills res.mem's
// idle and peakStreams and res.streamEvents.
func (r *runner) memory(res *results) error {
	all, err := buildCases()
	if err != nil {
		return err
	}
	r.stubURL = ""
	progress("memory: 256 concurrent streams (stub paced at 64 events, 20 ms apart)")
	paced, flS, dmS, err := r.chain("-streams", "--events", "64", "--event-delay", "20ms")
	if err != nil {
		return err
	}
	var streamCase, small *kase
	for _, k := range all {
		if k.api == "messages" && k.large && k.stream {
			streamCase = k
		}
		if k.api == "messages" && !k.large && !k.stream {
			small = k
		}
	}
	for i, p := range []*proc{flS, dmS} {
		t := small.targets(paced.url, flS.url, dmS.url)[i+1]
		if err := check(r.gen, t, false); err != nil {
			return fmt.Errorf("memory phase, %s: %w", t.name, err)
		}
		res.mem[i].idle, _, _ = memory(p.pid())
	}
	ts := streamCase.targets(paced.url, flS.url, dmS.url)
	for i, p := range []*proc{flS, dmS} {
		samples, _, _ := r.gen.run(ts[i+1], 256, 0, r.st.streamFor)
		res.mem[i].peakStreams, _, _ = memory(p.pid())
		res.mem[i].streams = len(samples)
		if len(samples) > 0 {
			res.streamEvents = samples[0].events
		}
	}
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// check sends one request and looks at the answer.
func check(g *loadGen, t target, stream bool) error {
	s, errs, _ := g.run(t, 1, 1, 0)
	for try := 1; (errs > 0 || len(s) != 1) && try < 3; try++ {
		// The floor's ReverseProxy drops about one stream in a thousand
		// here (see docs/performance.md): one failure is not a broken setup.
		s, errs, _ = g.run(t, 1, 1, 0)
	}
	if errs > 0 || len(s) != 1 {
		return fmt.Errorf("the request failed three times")
	}
	if stream && s[0].events < 10 {
		return fmt.Errorf("a stream of %d events: is the stub at --events 64?", s[0].events)
	}
	return nil
}

// interleaved runs the 1-connection phase of a case: after a warm-up,
// one request to each target in turn, the order rotating each round
// (loadGen.mixed), in batches between which the stub forgets what it
// recorded. It returns each target's samples and its process's CPU time
// per request.
func (r *runner) interleaved(ts []target, pids []int) ([][]sample, []time.Duration) {
	out := make([][]sample, len(ts))
	sent := make([]int, len(ts))
	before := make([]time.Duration, len(ts))
	for i := range ts {
		before[i], _ = procs.CPUTime(pids[i])
	}
	r.gen.mixed(ts, r.st.warm)
	for i := range ts {
		sent[i] += r.st.warm
	}
	r.clearStub()
	for round := 0; round < r.st.rounds; round++ {
		s, errs := r.gen.mixed(ts, r.st.batch)
		for i := range ts {
			out[i] = append(out[i], s[i]...)
			sent[i] += len(s[i]) + errs[i]
		}
		r.clearStub()
	}
	cpu := make([]time.Duration, len(ts))
	for i := range ts {
		after, _ := procs.CPUTime(pids[i])
		if sent[i] > 0 {
			cpu[i] = (after - before[i]) / time.Duration(sent[i])
		}
	}
	return out, cpu
}

// throughput runs each target with conc connections in a closed loop,
// interleaved in slices, and returns requests per second and process CPU
// per request.
func (r *runner) throughput(ts []target, pids []int, conc int) ([]float64, []time.Duration) {
	done := make([]int, len(ts))
	spent := make([]time.Duration, len(ts))
	cpu := make([]time.Duration, len(ts))
	for _, t := range ts {
		r.gen.run(t, conc, 0, r.st.rpsSlice/4) // open the connections
	}
	for round := 0; round < r.st.rpsRounds; round++ {
		for j := range ts {
			i := (round + j) % len(ts)
			c0, _ := procs.CPUTime(pids[i])
			s, _, elapsed := r.gen.run(ts[i], conc, 0, r.st.rpsSlice)
			c1, _ := procs.CPUTime(pids[i])
			done[i] += len(s)
			spent[i] += elapsed
			cpu[i] += c1 - c0
			r.clearStub()
		}
	}
	rps := make([]float64, len(ts))
	for i := range ts {
		if spent[i] > 0 {
			rps[i] = float64(done[i]) / spent[i].Seconds()
		}
		if done[i] > 0 {
			cpu[i] /= time.Duration(done[i])
		}
	}
	return rps, cpu
}

// clearStub makes the stub forget the requests it recorded: it keeps
// every body it receives, and a heap that grows through the run would
// slow it down as it goes.
func (r *runner) clearStub() {
	if r.stubURL != "" {
		procs.ClearStub(r.stubURL)
	}
}

func summarize(s []sample) latency {
	l := latency{n: len(s)}
	if len(s) == 0 {
		return l
	}
	tot := sortedOf(s, (*sample).total)
	l.p50, l.p99 = percentile(tot, 50), percentile(tot, 99)
	l.ttfb50 = percentile(sortedOf(s, (*sample).ttfb), 50)
	l.body50 = percentile(sortedOf(s, func(x *sample) time.Duration { return x.end.Sub(x.first) }), 50)
	l.events = s[len(s)/2].events
	return l
}
