package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// abCompare runs the 1-connection phase of the matched cases with a
// fourth target: a second Dragoman started from another binary (--ab),
// interleaved request by request with the stub, the floor and the first
// Dragoman, so that a change can be compared with what it replaces under
// the same load. It prints a table and writes nothing.
func (r *runner) abCompare(other string) error {
	other, err := filepath.Abs(other)
	if err == nil {
		_, err = os.Stat(other)
	}
	if err != nil {
		return fmt.Errorf("--ab: %w (build the other Dragoman first, e.g. go build -o /tmp/main-proxy ./cmd/proxy in main's checkout)", err)
	}
	// B runs from a copy of its own: B's requests follow A's in every
	// round, and when both ran one file (one binary under two --ab-env
	// settings) A's requests left B's code warm in the CPU caches, as the
	// load generator once did for the floor (privateCopy): A/A of one file
	// measured B 29 and 4 µs ahead, against 6 and 11 µs behind from a copy.
	shown := other
	if other, err = privateCopy(other, r.dir, "dragoman-b"); err != nil {
		return fmt.Errorf("--ab: copying %s: %w (is %s writable?)", shown, err, r.dir)
	}
	cases, err := r.chosenCases("case", nil)
	if err != nil {
		return err
	}
	stub, fl, dm, err := r.chain("", "--events", "64", "--protocol", "messages")
	if err != nil {
		return err
	}
	r.stubURL = stub.url
	mine, env, config, params := r.proxyBin, r.dmEnv, r.dmConfig, r.dmParams
	r.proxyBin, r.dmEnv = other, append(env[:len(env):len(env)], r.abEnv...)
	if r.abConfig != "" {
		r.dmConfig = r.abConfig
	}
	if r.abParams != "" {
		r.dmParams = r.abParams
	}
	dmB, err := r.dragoman("dragoman-b", stub, "warn")
	r.proxyBin, r.dmEnv, r.dmConfig, r.dmParams = mine, env, config, params
	if err != nil {
		return err
	}
	pids := []int{stub.pid(), fl.pid(), dm.pid(), dmB.pid()}
	progress("A/B, 1 connection, %d requests per target and case, interleaved: A = %s, B = %s (run from a copy)", r.st.rounds*r.st.batch, mine, shown)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "case\tload\tadded p50 floor\tadded p50 A\tadded p50 B\tA÷floor\tB÷floor\tA−B p50\tCPU/req floor\tCPU/req A\tCPU/req B\t\n")
	for _, k := range cases {
		t3 := k.targets(stub.url, fl.url, dm.url)
		b := t3[2]
		b.name, b.url = "dragoman-b", dmB.url+b.url[len(dm.url):]
		ts := append(t3[:], b)
		for _, t := range ts {
			if err := check(r.gen, t, k.stream); err != nil {
				return fmt.Errorf("%s via %s: %w", k.name, t.name, err)
			}
		}
		samples, cpu := r.interleaved(ts, pids)
		var p50 [4]time.Duration
		for i := range ts {
			p50[i] = summarize(samples[i]).p50
		}
		fl, a, bb := p50[1]-p50[0], p50[2]-p50[0], p50[3]-p50[0]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k.name, loadAverage(),
			us(fl), us(a), us(bb), ratio(a, fl), ratio(bb, fl), us(a-bb), us(cpu[1]), us(cpu[2]), us(cpu[3]))
	}
	return w.Flush()
}

// loadAverage is the machine's 1-minute load average, as /proc/loadavg says.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
