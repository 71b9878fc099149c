package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one process under test: the stub, the floor or Dragoman.
type proc struct {
	name string
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:PORT
	log  *os.File
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// start runs a process with its output in a log file of dir and waits
// until GET health answers 200.
func start(dir, name string, port int, health string, env []string, path string, args ...string) (*proc, error) {
	logf, err := os.Create(dir + "/" + name + ".log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, path, err)
	}
	p := &proc{name: name, cmd: cmd, url: "http://127.0.0.1:" + strconv.Itoa(port), log: logf}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			logf.Close()
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("%s exited at start (%v): %s", name, err, bytes.TrimSpace(out))
		default:
		}
		resp, err := http.Get(p.url + health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				go func() { <-exited }()
				return p, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.stop()
	return nil, fmt.Errorf("%s did not answer %s within 15 s (log: %s)", name, health, logf.Name())
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop ends the process (it was started by this program) and closes its log.
func (p *proc) stop() {
	if p == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 100; i++ {
			if p.cmd.Process.Signal(syscall.Signal(0)) != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
	}
	p.cmd.Process.Kill()
	p.log.Close()
}

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is the user and system CPU time of a process so far, from the
// kernel's own accounting (/proc/PID/stat utime + stime).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unexpected /proc/PID/stat")
	}
	return time.Duration(ut+st) * clockTick, nil
}

// memory reads VmHWM (peak resident set) and VmRSS of a process, in bytes.
func memory(pid int) (hwm, rss int64, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, k := range []struct {
			name string
			dst  *int64
		}{{"VmHWM:", &hwm}, {"VmRSS:", &rss}} {
			if v, ok := strings.CutPrefix(line, k.name); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				*k.dst = kb << 10
			}
		}
	}
	return hwm, rss, sc.Err()
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
