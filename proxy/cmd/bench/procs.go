package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/procs"
)

// proc is one process under test: the stub, the floor or Dragoman.
type proc struct {
	*procs.Process
	url string // http://127.0.0.1:PORT
}

// start runs a process on port and waits until GET health answers 200.
func start(dir, name string, port int, health string, env []string, path string, args ...string) (*proc, error) {
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := procs.Start(dir, name, url+health, env, path, args...)
	if err != nil {
		return nil, err
	}
	return &proc{Process: p, url: url}, nil
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
