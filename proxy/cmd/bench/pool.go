package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/procs"
)

// poolAlias is the alias of the pool of three stubs in the pool
// comparison; alias is the single backend's.
const poolAlias = "pool-of-3"

// poolCompare measures what a pool costs (issue 11): the same small
// Messages request, with a coding-client session id, to one Dragoman
// process that serves two aliases: one whose pool is a single stub, and
// one whose pool is three stubs (session affinity, the default). One
// process, so that both sides share its heap, its garbage collector, its
// connections and its place on the machine: two processes of one binary
// differ from each other by more than the 5 µs this measures. Batches of
// requests go to one alias then the other at one connection, the order
// swapped each round. CPU is the process's on-CPU time to the nanosecond
// (schedstat; /proc/PID/stat counts 10 ms ticks, 5 µs per request over
// 2,000 requests), read around each batch. It prints p50 latency and CPU
// per request of both, and their difference.
func (r *runner) poolCompare() error {
	var stubs []*proc
	for i := range 3 {
		s, err := r.stub(fmt.Sprint("pool-stub-", i), "--events", "8")
		if err != nil {
			return err
		}
		stubs = append(stubs, s)
	}
	pprofPort, err := procs.FreePort()
	if err != nil {
		return err
	}
	pprofURL := "http://127.0.0.1:" + itoa(pprofPort)
	d, err := r.dragomanPools("dragoman-pools", map[string][]*proc{alias: stubs[:1], poolAlias: stubs}, "--pprof", "127.0.0.1:"+itoa(pprofPort))
	if err != nil {
		return err
	}
	h := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + clientKey},
		"Anthropic-Version": {"2023-06-01"}, "X-Claude-Code-Session-Id": {"179b29e7-4a3f-4eb6-a37f-0c8eb28d1106"}}
	body := func(model string) []byte {
		return []byte(`{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	}
	ts := []target{
		{name: "single backend", url: d.url + "/v1/messages", body: body(alias), header: h},
		{name: "pool of 3", url: d.url + "/v1/messages", body: body(poolAlias), header: h},
	}
	clear := func() {
		for _, s := range stubs {
			req, _ := http.NewRequest(http.MethodDelete, s.url+"/_stub/requests", nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	r.gen.mixed(ts, r.st.warm)
	clear()
	// Per target, and per half of the rounds (even, odd): the two halves
	// of one target tell how far apart the method puts equal work.
	var samples [2][2][]sample
	var cpu [2][2]time.Duration
	var sent [2][2]int
	var allocs [2]int64
	for round := range 2 * r.st.rounds { // cheap: twice the table's requests, for a steadier p50
		for j := range 2 {
			i, half := (round+j)%2, round%2
			// Two reads in a row: what one read allocates itself (the heap
			// profile's text grows through the run), to take off.
			m0, err := mallocs(pprofURL)
			if err != nil {
				return err
			}
			m0b, err := mallocs(pprofURL)
			if err != nil {
				return err
			}
			before, err := procs.OnCPU(d.pid())
			if err != nil {
				return fmt.Errorf("reading Dragoman's CPU time: %v", err)
			}
			s, _ := r.gen.mixed(ts[i:i+1], r.st.batch)
			after, err := procs.OnCPU(d.pid())
			if err != nil {
				return fmt.Errorf("reading Dragoman's CPU time: %v", err)
			}
			m1, err := mallocs(pprofURL)
			if err != nil {
				return err
			}
			allocs[i] += (m1 - m0b) - (m0b - m0)
			cpu[i][half] += after - before
			sent[i][half] += r.st.batch
			samples[i][half] = append(samples[i][half], s[0]...)
		}
		clear()
	}
	perRequest := func(c time.Duration, n int) time.Duration { return c / time.Duration(max(n, 1)) }
	var lat [2]latency
	var cpuPer [2]time.Duration
	for i := range ts {
		lat[i] = summarize(append(slices.Clone(samples[i][0]), samples[i][1]...))
		cpuPer[i] = perRequest(cpu[i][0]+cpu[i][1], sent[i][0]+sent[i][1])
	}
	allocsPer := func(i int) float64 { return float64(allocs[i]) / float64(max(sent[i][0]+sent[i][1], 1)) }
	var b strings.Builder
	fmt.Fprintf(&b, "\npool of 3 vs single backend (small Messages request, non-stream, one session, %d requests each;\n", lat[0].n)
	fmt.Fprintf(&b, "  one Dragoman process serving both aliases, batches of %d alternating, CPU: its on-CPU time):\n", r.st.batch)
	for i, t := range ts {
		fmt.Fprintf(&b, "  %-16s p50 %8s  p99 %8s  CPU/request %8s  allocations/request %5.1f\n", t.name, us(lat[i].p50), us(lat[i].p99), us(cpuPer[i]), allocsPer(i))
	}
	fmt.Fprintf(&b, "  the pool adds %s p50 and %s CPU per request (target: at most 5 µs), and %+.1f allocations\n", us(lat[1].p50-lat[0].p50), us(cpuPer[1]-cpuPer[0]), allocsPer(1)-allocsPer(0))
	fmt.Fprintf(&b, "  the method's noise: the single backend's odd rounds vs its even ones differ by %s p50 and %s CPU per request\n",
		us(summarize(samples[0][1]).p50-summarize(samples[0][0]).p50), us(perRequest(cpu[0][1], sent[0][1])-perRequest(cpu[0][0], sent[0][0])))
	fmt.Print(b.String())
	r.stopAll()
	return nil
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

// dragomanPools starts Dragoman with an alias per pool, each pool the
// given stubs, and extra arguments.
func (r *runner) dragomanPools(name string, pools map[string][]*proc, extra ...string) (*proc, error) {
	var cfg strings.Builder
	cfg.WriteString("model_list:\n")
	for a, backends := range pools {
		for _, b := range backends {
			cfg.WriteString("  - model_name: " + a + "\n    proxy_params:\n      model: vendorb/" + backendModel + "\n      api_base: " + b.url + "/v1\n      api_key: none\n")
		}
	}
	cfg.WriteString("general_settings:\n  enable_vendora_pass_through: true\n")
	path := filepath.Join(r.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	return r.launch(name, []string{"PROXY_API_KEY=" + clientKey}, r.proxyBin,
		append([]string{"--config", path, "--host", "127.0.0.1", "--port", "PORT", "--log-level", "warn"}, extra...)...)
}
