package main

import (
	"runtime"

	"github.com/dragoman-dev/dragoman/proxy/config"
)

// defaultProcs is the proxy's GOMAXPROCS unless told otherwise: 0, Go's
// own default, one thread per CPU the process may use, its container's
// CPU limit included (Go 1.25 and later follow the cgroup's quota, and
// follow it again when it changes).
//
// Until issue 40 the default was 1, chosen on a 2-CPU virtual machine
// where a second thread's wake-ups cost more than they gave
// (golang/go#13527): a proxy on a 16-core host then used one core of 16.
// bench --procs-only 1,2,0 on that 2-core host, with the stub and the load
// generator on the same two cores (docs/performance.md), measured 462,
// 461 and 353 requests a second at 256 concurrent 54 KB Messages
// translations, and 31, 27 and 10 at 32 concurrent 1 MB ones: 2 and 0 are
// the same setting there, so the spread between them is the noise, and
// the numbers show no gain of one thread over two to set against a
// larger host's cores. No larger host was at hand to measure. --procs 1
// stays for a host like that one (a small VM where CPU per request counts
// more than throughput).
const defaultProcs = 0

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
