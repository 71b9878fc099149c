// Package procs runs the binaries that make bench and make soak measure as
// processes of their own, on loopback, and reads the kernel's accounting of
// them (/proc/PID/stat and /proc/PID/status) and their goroutine counts.
package procs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a running binary with its output in a log file.
type Process struct {
	Name    string
	Path    string
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Start runs the binary at path with its output in dir/NAME.log, and waits
// until GET healthURL answers 200. The process dies with this one.
func Start(dir, name, healthURL string, env []string, path string, args ...string) (*Process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w (run make build first)", path, err)
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
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
	p := &Process{Name: name, Path: path, LogPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.exited) }()
	if WaitOK(healthURL, 15*time.Second, p.exited) {
		return p, nil
	}
	select {
	case <-p.exited:
		out, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%s exited at start (%v): %s", name, cmd.ProcessState, bytes.TrimSpace(out))
	default:
	}
	p.Stop(time.Second)
	return nil, fmt.Errorf("%s did not answer %s within 15 s (log: %s)", name, healthURL, logPath)
}

// StartOnFreePort is Start on a free loopback port, written wherever an
// argument or an env entry says PORT; health is the path that must answer
// 200. url is http://127.0.0.1:PORT.
func StartOnFreePort(dir, name, health string, env []string, path string, args ...string) (p *Process, url string, err error) {
	port, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	url = "http://127.0.0.1:" + strconv.Itoa(port)
	for _, list := range [][]string{args, env} {
		for i, a := range list {
			list[i] = strings.ReplaceAll(a, "PORT", strconv.Itoa(port))
		}
	}
	p, err = Start(dir, name, url+health, env, path, args...)
	return p, url, err
}

// WaitOK polls GET url until it answers 200, for up to within, and reports
// whether it did. It gives up early once stop is closed (nil: never), as
// when the process that should answer has ended.
func WaitOK(url string, within time.Duration, stop <-chan struct{}) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			return false
		default:
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// Goroutines reads a process's goroutine count at url: a bare number (bench
// floor's /debug/goroutines) or the first line of Go's goroutine profile
// (/debug/pprof/goroutine?debug=1).
func Goroutines(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "goroutine profile: total "))
	if err != nil {
		return 0, fmt.Errorf("goroutine count at %s: unexpected %q", url, line)
	}
	return n, nil
}

// ClearStub drops the record of requests of the stub backend at url,
// which would otherwise grow with a long run.
func ClearStub(url string) {
	req, _ := http.NewRequest(http.MethodDelete, url+"/_stub/requests", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM, waits up to grace for the process to end, then kills
// it. It returns once the process is gone; a nil or ended Process is fine.
func (p *Process) Stop(grace time.Duration) {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// ExitCode is the exit code of an ended process (-1 when a signal ended it).
func (p *Process) ExitCode() int {
	<-p.exited
	return p.cmd.ProcessState.ExitCode()
}

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPUTime is the user and system CPU time of a process so far, from the
// kernel's own accounting (/proc/PID/stat utime + stime).
func CPUTime(pid int) (time.Duration, error) {
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

// OnCPU is the time a process's threads have run so far, to the
// nanosecond: the sum of the first field of /proc/PID/task/*/schedstat.
// CPUTime counts in 10 ms ticks, too coarse to tell a few microseconds per
// request apart over a few thousand requests. A thread that has exited no
// longer counts (a Go process keeps its threads).
func OnCPU(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, errors.New("unexpected " + dir + "/" + t.Name() + "/schedstat")
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, errors.New("unexpected " + dir + "/" + t.Name() + "/schedstat")
		}
		total += ns
	}
	return time.Duration(total), nil
}

// Status is what /proc/PID/status says of a process's memory and threads.
type Status struct {
	HWM     int64 // peak resident set, bytes
	RSS     int64 // resident set, bytes
	Threads int64
}

// ReadStatus reads /proc/PID/status.
func ReadStatus(pid int) (Status, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Status{}, err
	}
	defer f.Close()
	var s Status
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			s.HWM = n << 10
		case "VmRSS":
			s.RSS = n << 10
		case "Threads":
			s.Threads = n
		}
	}
	return s, sc.Err()
}

// CPUMeter reads OnCPU of one process over and over, cheaply enough to
// read it around every request: it keeps each thread's schedstat open and
// reads it in place, and lists the threads again only when their count
// (the link count of /proc/PID/task) changes. Not safe for concurrent use.
type CPUMeter struct {
	dir     string
	task    *os.File
	nlink   uint64
	threads []*os.File
	buf     [128]byte
}

// NewCPUMeter opens the accounting of process pid.
func NewCPUMeter(pid int) (*CPUMeter, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &CPUMeter{dir: dir, task: f}, nil
}

// Read is the time the process's threads have run so far (as OnCPU).
func (m *CPUMeter) Read() (time.Duration, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(m.task.Fd()), &st); err != nil {
		return 0, err
	}
	if uint64(st.Nlink) != m.nlink || m.threads == nil {
		if err := m.list(); err != nil {
			return 0, err
		}
		m.nlink = uint64(st.Nlink)
	}
	var total int64
	for _, f := range m.threads {
		n, err := f.ReadAt(m.buf[:], 0)
		if n == 0 && err != nil {
			continue // the thread exited
		}
		b := m.buf[:n]
		if i := bytes.IndexByte(b, ' '); i >= 0 {
			b = b[:i]
		}
		ns, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return 0, errors.New("unexpected " + f.Name())
		}
		total += ns
	}
	return time.Duration(total), nil
}

func (m *CPUMeter) list() error {
	for _, f := range m.threads {
		f.Close()
	}
	m.threads = m.threads[:0]
	names, err := os.ReadDir(m.dir)
	if err != nil {
		return err
	}
	for _, t := range names {
		if f, err := os.Open(m.dir + "/" + t.Name() + "/schedstat"); err == nil {
			m.threads = append(m.threads, f)
		}
	}
	return nil
}

// Close closes the files the meter holds.
func (m *CPUMeter) Close() {
	for _, f := range m.threads {
		f.Close()
	}
	m.task.Close()
}
