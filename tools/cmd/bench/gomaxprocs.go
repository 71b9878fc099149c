package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dragoman-dev/dragoman/tools/internal/procs"
)

// procsCompare is --procs-only LIST (issue 40): Dragoman's throughput at
// each --procs of LIST (1, every core, 0 = Go's default), to choose the
// flag's default from numbers. For each value a fresh Dragoman, in front
// of one stub, takes two closed loops of Messages translations, non-stream:
// 256 concurrent 54 KB requests, then 32 concurrent 1 MB ones (each loop
// for dur, after a warm-up), with the floor beside it for scale. It
// prints requests per second, p50, p99 and Dragoman's CPU per request;
// it writes nothing.
func (r *runner) procsCompare(list string, dur time.Duration) error {
	var values []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return fmt.Errorf("--procs-only %q: want values of --procs such as 1,2,0", list)
		}
		values = append(values, n)
	}
	fb, err := loadFixtureBody()
	if err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	_, header, err := clientRequest("03-tool-result-turn.json")
	if err != nil {
		return err
	}
	header.Set("Authorization", "Bearer "+clientKey)
	loads := []struct {
		label string
		bytes int
		conc  int
	}{{"54 KB", 0, 256}, {"1 MB", 1_000_000, 32}}
	ks := make([]*kase, len(loads))
	for i, l := range loads {
		if ks[i], err = fb.curveCase("messages "+l.label, "messages", l.bytes, false, 0, false, header); err != nil {
			return err
		}
	}
	stub, err := r.stub("procs-stub", "--events", "64")
	if err != nil {
		return err
	}
	defer stub.stop()
	r.stubURL = stub.url
	fl, err := r.floor("procs-floor", stub)
	if err != nil {
		return err
	}
	defer fl.stop()
	cpu, cores := machine()
	progress("--procs compared on %s, %d cores (GOMAXPROCS of Go's default here: %d); each loop %s", cpu, cores, cores, dur)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "load\tvia\t--procs\trps\tp50\tp99\tCPU/req\tload avg\t\n")
	floorDone := map[string]bool{}
	for _, n := range values {
		dm, err := r.dragoman("procs-dragoman-"+itoa(n), stub, "warn", "--procs", itoa(n))
		if err != nil {
			return err
		}
		for i, l := range loads {
			ts := ks[i].targets(stub.url, fl.url, dm.url)
			for _, t := range []target{ts[1], ts[2]} {
				if err := check(r.gen, t, false); err != nil {
					dm.stop()
					return fmt.Errorf("%s via %s: %w", ks[i].name, t.name, err)
				}
			}
			row := func(t target, pid int, procsLabel string) {
				r.gen.run(t, l.conc, 0, dur/4) // warm-up: the connections opened
				r.clearStub()
				c0, _ := procs.CPUTime(pid)
				s, _, elapsed := r.gen.run(t, l.conc, 0, dur)
				c1, _ := procs.CPUTime(pid)
				r.clearStub()
				lat := summarize(s)
				perReq := time.Duration(0)
				if len(s) > 0 {
					perReq = (c1 - c0) / time.Duration(len(s))
				}
				fmt.Fprintf(w, "%s × %d\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t\n", l.label, l.conc, t.name, procsLabel,
					float64(len(s))/elapsed.Seconds(), us(lat.p50), us(lat.p99), us(perReq), loadAverage())
			}
			if !floorDone[l.label] {
				row(ts[1], fl.pid(), "—")
				floorDone[l.label] = true
			}
			row(ts[2], dm.pid(), itoa(n))
		}
		dm.stop()
	}
	return w.Flush()
}
