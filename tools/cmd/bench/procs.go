package main

import (
	"os"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/tools/internal/procs"
)

// proc is one process under test: the stub, the floor or Dragoman.
type proc struct {
	*procs.Process
	url string // http://127.0.0.1:PORT
}

func (p *proc) pid() int { return p.PID() }

// stop ends the process (it was started by this program).
func (p *proc) stop() {
	if p != nil {
		p.Stop(3 * time.Second)
	}
}

// memory reads VmHWM (peak resident set) and VmRSS of a process, in bytes.
func memory(pid int) (hwm, rss int64, err error) {
	s, err := procs.ReadStatus(pid)
	return s.HWM, s.RSS, err
}

// machine describes where the bench ran.
func machine() (cpu string, cores int) {
	cores = 0
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if cpu == "" {
				cpu = strings.TrimSpace(v)
			}
		case "processor":
			cores++
		}
	}
	if cpu == "" {
		cpu = "unknown CPU"
	}
	return cpu, cores
}
