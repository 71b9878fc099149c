package main

import (
	"runtime"

	"github.com/dragoman-dev/dragoman/proxy/config"
)

// defaultProcs is the proxy's GOMAXPROCS unless told otherwise: one.
//
// A request costs the proxy about a millisecond of CPU, so one thread
// serves about a thousand a second, more than any pool of GPUs behind it
// answers. With a thread per CPU, the Go scheduler wakes a second thread
// for each goroutine that becomes ready while the first is busy, and that
// thread mostly finds nothing to do and sleeps again (golang/go#13527):
// on a 2-CPU virtual machine, where each such wake-up and sleep is a
// context switch, that cost more than the proxy's own work. Measured with
// bench --ab --ab-env GOMAXPROCS=1 (docs/performance.md): responses 43 KB
// non-stream, added p50 1044 → 820 µs and CPU per request 1304 → 936 µs;
// the price is throughput under heavy load and memory under a thousand
// cold streams (README, "Running the proxy").
const defaultProcs = 1

// setProcs sets GOMAXPROCS to n (0: Go's default, one per CPU the
// process may use, its cgroup's limit included) unless the GOMAXPROCS
// environment variable chose it already.
func setProcs(n int, getenv config.Getenv) {
	if v, ok := getenv("GOMAXPROCS"); ok && v != "" {
		return
	}
	if n <= 0 {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(n)
}
