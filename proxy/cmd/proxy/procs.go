package main

import (
	"fmt"
	"runtime"
	"strconv"

	"github.com/dragoman-dev/dragoman/proxy/config"
)

// procs is --procs: how many threads run the proxy's Go code at once
// (GOMAXPROCS). autoProcs, the default, is one thread where Go's own
// default is two or fewer (a 2-CPU VM, a container limited to 2 CPUs),
// and Go's default above that; 0 is Go's default everywhere.
//
// The numbers behind auto, from bench on a 2-CPU virtual machine with the
// stub and the load generator on the same two CPUs (docs/performance.md):
//   - throughput, --procs-only 1,2,0: 462, 461 and 353 requests a second at
//     256 concurrent 54 KB Messages translations (2 and 0 are the same
//     setting there: the spread is the noise), 31, 27 and 10 at 32
//     concurrent 1 MB ones: no gain from the second thread;
//   - latency, --ab bin/proxy --ab-env GOMAXPROCS=1, one connection, the
//     54 KB cases: added p50 28–49 µs lower with one thread, CPU 130–170 µs
//     a request lower. With a thread per CPU, Go wakes a second thread for
//     each goroutine made ready while the first runs (the transport's read
//     and write loops, the connection's reader), and it mostly finds
//     nothing (golang/go#13527); on this VM a wake-up is a dear context
//     switch.
//   - memory, 1,000 slow streams: 133.7 kB a stream with one thread, 144.1
//     kB with two.
//
// Above two CPUs Go's default keeps every core for throughput, as the
// proxy had none of that size to measure on; it follows the container's
// CPU limit (Go 1.25 and later read the cgroup's quota, and follow it when
// it changes; an explicit one thread does not follow a limit raised later).
type procs int

// autoProcs is --procs auto.
const autoProcs procs = -1

func (p *procs) String() string {
	if *p == autoProcs {
		return "auto"
	}
	return strconv.Itoa(int(*p))
}

func (p *procs) Set(s string) error {
	if s == "auto" {
		*p = autoProcs
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want auto, 0 (Go's default: a thread per CPU) or a number of threads, got %q", s)
	}
	*p = procs(n)
	return nil
}

// autoThreads is what auto gives where Go's default is goDefault threads.
func autoThreads(goDefault int) int {
	if goDefault <= 2 {
		return 1
	}
	return goDefault
}

// setProcs sets GOMAXPROCS for p unless the GOMAXPROCS environment
// variable chose it already.
func setProcs(p procs, getenv config.Getenv) {
	if v, ok := getenv("GOMAXPROCS"); ok && v != "" {
		return
	}
	switch {
	case p > 0:
		runtime.GOMAXPROCS(int(p))
	case p == 0:
		runtime.SetDefaultGOMAXPROCS()
	default:
		runtime.SetDefaultGOMAXPROCS()
		if n := runtime.GOMAXPROCS(0); autoThreads(n) != n {
			runtime.GOMAXPROCS(autoThreads(n))
		}
	}
}
