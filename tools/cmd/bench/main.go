// Command bench measures what Dragoman adds to a request, side by side
// with the stub backend answered directly and with a no-op reverse proxy
// (the floor: what any Go proxy pays for one extra hop), in one run.
//
//	bench [--proxy bin/proxy] [--stub bin/stub-backend] [--out docs/performance.md] [--quick]
//	bench --keys-only [--quick]            per-user keys on vs off at 54 KB (issue 33)
//	bench floor --port N --backend URL     the no-op reverse proxy, run as its own process
//
// `make bench` builds the binaries and runs it. The stub, the floor and
// Dragoman each run as a separate process; this process is the load
// generator (vegeta), on loopback. Targets are interleaved in small
// batches so that a drift of the machine falls evenly on all three. See
// docs/performance.md for what each column means.
package main

import (
	"debug/buildinfo"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "floor":
			os.Exit(floor(os.Args[2:]))
		case "serve":
			os.Exit(serve(os.Args[2:]))
		}
	}
	os.Exit(run(os.Args[1:]))
}

func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// settings are the run's sizes; --quick shrinks them for a smoke test.
type settings struct {
	rounds    int           // 1-connection phase: rounds of batches
	batch     int           // requests per target per round
	warm      int           // warm-up requests per target, not counted
	rpsSlice  time.Duration // each target's share of a concurrency round
	rpsRounds int
	streamFor time.Duration // the 256-concurrent-streams phase
	logRounds int           // logging cost: rounds of batches
	// metricsRounds: rounds of batches of the metrics on/off phase
	metricsRounds int
	// the pool comparison (issue 11): warm-up triples, requests per alias
	// of the allocation count, and how long its triples run
	poolWarm, poolAllocs int
	poolFor              time.Duration
}

func run(args []string) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	proxyBin := fs.String("proxy", "bin/proxy", "Dragoman binary (make build)")
	stubBin := fs.String("stub", "bin/stub-backend", "stub backend binary (make build)")
	out := fs.String("out", "docs/performance.md", "write the results into this Markdown file (between its bench markers); empty: print only")
	quick := fs.Bool("quick", false, "a short run, to check that the harness works (numbers are noisy)")
	keep := fs.Bool("keep-logs", false, "keep the processes' logs and config in their temporary folder")
	profile := fs.String("profile", "", "profile Dragoman: run it in-process (bench serve) and write CPU and allocation profiles to this folder")
	only := fs.String("cases", "", "run only the cases whose name holds this text")
	curveList := fs.String("curves", "size,tools,streams,conns", "the curves to run after the table (issue 18): any of size, tools, streams, conns, comma-separated; none for none")
	streamsAt := fs.String("streams-at", "", "the concurrent slow streams curve's points, comma-separated (default 256,1000,4000; 64,256 with --quick)")
	curvesOnly := fs.Bool("curves-only", false, "run only the curves (the table between the bench markers is kept)")
	poolRun := fs.Bool("pool", true, "after the table, compare a pool of 3 backends with a single one (issue 11)")
	poolOnly := fs.Bool("pool-only", false, "run only the pool comparison (printed, not written)")
	poolFor := fs.Duration("pool-for", 0, "how long the pool comparison's triples run (default 120s, 3s with --quick)")
	ab := fs.String("ab", "", "A/B: only the 1-connection phase of the cases (--cases), with a second Dragoman from this binary interleaved with the first; prints, writes nothing")
	abRounds := fs.Int("ab-rounds", 50, "with --ab: rounds of 40 requests per target and case")
	metricsOnly := fs.Bool("metrics-only", false, "run only the metrics on/off phase (issue 15) of the small Messages cases (--cases narrows them); prints, writes nothing")
	dmEnv := fs.String("dragoman-env", "", "extra environment for the Dragoman processes only (not the stub, the floor or this process), comma-separated NAME=VALUE pairs, e.g. GOGC=off,GODEBUG=gctrace=1 (the gctrace lines go to the processes' logs: add --keep-logs); a value holding a comma cannot be given")
	abConfig := fs.String("ab-config", "", "with --ab: a YAML file appended to the B Dragoman's config (top-level keys such as router_settings); with --ab bin/proxy it compares one binary under two configs, e.g. router_settings.routes against none (tools/cmd/bench/ab-routes.yaml)")
	abParams := fs.String("ab-params", "", "with --ab: proxy_params lines (comma-separated) added to every route of the B Dragoman, e.g. \"tool_calls_in_text: off\" (tools/cmd/bench/textcalls.go)")
	abEnv := fs.String("ab-env", "", "with --ab: extra environment for the B Dragoman only, after --dragoman-env (same form); with --ab bin/proxy it compares one binary under two settings, e.g. --ab-env GOGC=400")
	keysOnly := fs.Bool("keys-only", false, "run only the per-user keys on/off phase (issue 33): the 54 KB non-stream cases through Dragoman without a database and with one and a per-user key; prints, writes nothing")
	wsOnly := fs.Bool("websocket-only", false, "run only the Responses WebSocket phase (issue 39): 200 concurrent sessions of 5 requests, memory per idle connection, p50 over WebSocket beside SSE; prints, writes nothing")
	procsOnly := fs.String("procs-only", "", "run only the --procs comparison (issue 40): Dragoman's throughput at each --procs of this list, e.g. 1,2,0 (0: Go's default), 256 concurrent 54 KB and 32 concurrent 1 MB Messages translations; prints, writes nothing")
	procsFor := fs.Duration("procs-for", 10*time.Second, "with --procs-only: how long each closed loop runs")
	sessionsRun := fs.Bool("sessions", true, "after the table, the sessions scenario (issue 42): coding sessions through a pool of 4 GPU stubs behind 1 and 3 replicas, for each routing_strategy")
	sessionsOnly := fs.Bool("sessions-only", false, "run only the sessions scenario (printed, not written)")
	sessionsFilter := fs.String("sessions-runs", "", "with --sessions-only: only the runs whose \"workload routing replicas\" holds this text, e.g. \"48×10 session-affinity\"")
	memOnly := fs.Bool("mem-only", false, "run only the memory phase (idle, then 256 concurrent 54 KB streams through fresh processes); prints, writes nothing")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	st := settings{rounds: 50, batch: 40, warm: 40, rpsSlice: 400 * time.Millisecond, rpsRounds: 2, streamFor: 3 * time.Second, logRounds: 15, metricsRounds: 100,
		poolWarm: 300, poolAllocs: 500, poolFor: 120 * time.Second}
	if *quick {
		st = settings{rounds: 3, batch: 10, warm: 5, rpsSlice: 100 * time.Millisecond, rpsRounds: 1, streamFor: 1500 * time.Millisecond, logRounds: 2, metricsRounds: 4,
			poolWarm: 20, poolAllocs: 20, poolFor: 3 * time.Second}
	}
	if *poolFor > 0 {
		st.poolFor = *poolFor
	}
	self, err := os.Executable()
	if err != nil {
		warnf("%v", err)
		return 1
	}
	for _, p := range []*string{proxyBin, stubBin} {
		if *p, err = filepath.Abs(*p); err != nil {
			warnf("%v", err)
			return 1
		}
		if _, err := os.Stat(*p); err != nil {
			warnf("%v (run make build first)", err)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "dragoman-bench-")
	if err != nil {
		warnf("%v", err)
		return 1
	}
	if *keep {
		warnf("logs and config in %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	floorBin, err := privateCopy(self, dir, "floor")
	if err != nil {
		warnf("copying the bench for the floor: %v (is %s writable?)", err, dir)
		return 1
	}
	r := &runner{st: st, dir: dir, self: self, floorBin: floorBin, proxyBin: *proxyBin, stubBin: *stubBin, gen: newLoadGen(), only: *only}
	for _, e := range []struct {
		flag, val string
		to        *[]string
	}{{"--dragoman-env", *dmEnv, &r.dmEnv}, {"--ab-env", *abEnv, &r.abEnv}} {
		if *e.to, err = envList(e.val); err != nil {
			warnf("%s: %v", e.flag, err)
			return 2
		}
	}
	r.abParams = *abParams
	if *abConfig != "" {
		b, err := os.ReadFile(*abConfig)
		if err != nil {
			warnf("--ab-config: %v", err)
			return 2
		}
		r.abConfig = string(b)
	}
	if *profile != "" {
		if r.profile, err = filepath.Abs(*profile); err == nil {
			err = os.MkdirAll(r.profile, 0o755)
		}
		if err != nil {
			warnf("%v", err)
			return 1
		}
	}
	defer r.stopAll()
	which := map[string]bool{}
	for _, c := range strings.Split(*curveList, ",") {
		switch c = strings.TrimSpace(c); c {
		case "size", "tools", "streams", "conns":
			which[c] = true
		case "none", "":
		default:
			warnf("--curves: unknown curve %q (size, tools, streams, conns or none)", c)
			return 2
		}
	}
	if *ab != "" {
		r.st.rounds = max(*abRounds, 1)
		if err := r.abCompare(*ab); err != nil {
			warnf("ab: %v", err)
			return 1
		}
		return 0
	}
	if *wsOnly {
		if err := r.websocketBench(*quick); err != nil {
			warnf("websocket: %v", err)
			return 1
		}
		return 0
	}
	if *procsOnly != "" {
		if err := r.procsCompare(*procsOnly, *procsFor); err != nil {
			warnf("procs: %v", err)
			return 1
		}
		return 0
	}
	if *memOnly {
		res := &results{}
		if err := r.memory(res); err != nil {
			warnf("memory: %v", err)
			return 1
		}
		fmt.Print(res.memTable())
		return 0
	}
	if *keysOnly {
		if err := r.keysCost(); err != nil {
			warnf("keys: %v", err)
			return 1
		}
		return 0
	}
	if *metricsOnly {
		if err := r.metricsOnly(); err != nil {
			warnf("metrics: %v", err)
			return 1
		}
		return 0
	}
	if *sessionsOnly {
		return r.printSessions(*quick, *sessionsFilter)
	}
	if *poolOnly {
		p, err := r.poolCompare()
		if err != nil {
			warnf("pool: %v", err)
			return 1
		}
		fmt.Print(p.text() + "\n" + goalTable("target (issue 11)", []goal{p.goal()}))
		return 0
	}
	if !*curvesOnly {
		if code := r.table(*quick, *out, *poolRun); code != 0 {
			return code
		}
		if *sessionsRun {
			if code := r.printSessions(*quick, ""); code != 0 {
				return code
			}
		}
	}
	if len(which) == 0 {
		return 0
	}
	cs := curvesFull()
	if *quick {
		cs = curvesQuick()
	}
	if *streamsAt != "" {
		cs.streams = nil
		for _, f := range strings.Split(*streamsAt, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				warnf("--streams-at %q: want counts of streams such as 256,1000", *streamsAt)
				return 2
			}
			cs.streams = append(cs.streams, n)
		}
	}
	cr, err := r.curves(which, cs)
	if err != nil {
		warnf("curves: %v", err)
		return 1
	}
	cr.quick = *quick
	cpu, cores := machine()
	desc := fmt.Sprintf("%s, %d cores, %s", cpu, cores, proxyGoVersion(*proxyBin))
	if *out == "" {
		fmt.Print(cr.render(time.Now(), desc, nil))
		return 0
	}
	text, err := writeCurves(*out, cr, time.Now(), desc)
	if err != nil {
		warnf("writing %s: %v", *out, err)
		return 1
	}
	fmt.Print(text)
	fmt.Printf("\ncurves written to %s (plots next to it)\n", *out)
	return 0
}

// printSessions runs the sessions scenario and prints its table and goals.
func (r *runner) printSessions(quick bool, filter string) int {
	res, err := r.sessions(quick, filter)
	if err != nil {
		warnf("sessions: %v", err)
		return 1
	}
	fmt.Print("\n" + res.text() + "\n" + goalTable("target (issue 42)", res.goals()))
	return 0
}

func proxyGoVersion(bin string) string {
	if bi, err := buildinfo.ReadFile(bin); err == nil {
		return bi.GoVersion
	}
	return runtime.Version()
}

// table runs the cases of the main table, and the pool comparison when
// pool is set, and writes them.
func (r *runner) table(quick bool, out string, pool bool) int {
	res, err := r.all()
	if err != nil {
		warnf("%v", err)
		return 1
	}
	r.stopAll()
	if pool {
		progress("pool of 3 vs single backend: triples for %s", r.st.poolFor)
		if res.pool, err = r.poolCompare(); err != nil {
			warnf("pool: %v", err)
			return 1
		}
	}
	res.quick = quick
	res.goVersion = proxyGoVersion(r.proxyBin)
	res.cpu, res.cores = machine()
	res.date = time.Now()
	text := res.render()
	fmt.Print(text)
	if out != "" {
		if err := writeDoc(out, res, text); err != nil {
			warnf("writing %s: %v", out, err)
			return 1
		}
		fmt.Printf("\nwritten to %s\n", out)
	}
	r.stopAll()
	return 0
}

// dragomanConfig is the config Dragoman runs with in the bench: one alias
// on the stub, and nativeAlias on the same stub as a backend that speaks
// the Messages format (the stub runs with --protocol messages); defaults
// otherwise, and extra (top-level YAML, e.g. router_settings) after them.
func dragomanConfig(dir, name, stubURL, extra string) (string, error) {
	cfg := "model_list:\n" +
		"  - model_name: " + alias + "\n" +
		"    proxy_params:\n" +
		"      model: vendorb/" + backendModel + "\n" +
		"      api_base: " + stubURL + "/v1\n" +
		"      api_key: none\n" +
		"  - model_name: " + nativeAlias + "\n" +
		"    proxy_params:\n" +
		"      model: vendora/" + backendModel + "\n" +
		"      api_base: " + stubURL + "/v1\n" +
		"      api_key: none\n" +
		"general_settings:\n" +
		"  enable_vendora_pass_through: true\n" + extra
	path := filepath.Join(dir, name+".yaml")
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

// envList splits a comma-separated list of NAME=VALUE pairs (empty: none).
func envList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var env []string
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if i := strings.IndexByte(kv, '='); i <= 0 {
			return nil, fmt.Errorf("%q is not NAME=VALUE", kv)
		}
		env = append(env, kv)
	}
	return env, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func mib(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MB" }

func us(d time.Duration) string {
	v := float64(d) / float64(time.Microsecond)
	switch {
	case v >= 100 || v <= -100:
		return strconv.FormatFloat(v, 'f', 0, 64) + " µs"
	default:
		return strconv.FormatFloat(v, 'f', 1, 64) + " µs"
	}
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64) + "×"
}

func pad(s string, n int) string {
	if w := len([]rune(s)); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

// privateCopy copies the executable at src into dir as name and returns
// its path. The floor runs from such a copy, not from the bench's own
// file: processes that run one file share its code's physical pages, so
// the load generator (this process, whose net/http client code the floor's
// reverse proxy runs too) kept the floor's code warm in the CPU caches,
// which no other proxy under test gets. That was worth about 0.1× of the
// floor's added p50 at one connection (docs/performance.md, "The floor
// shared its code with the load generator").
func privateCopy(src, dir, name string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst := filepath.Join(dir, name)
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}
