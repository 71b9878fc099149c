package procs

import (
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestReadStatusAndCPUTimeOfThisProcess(t *testing.T) {
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	s, err := ReadStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS < 8<<20 || s.HWM < s.RSS || s.Threads < 1 {
		t.Errorf("status = %+v, want RSS ≥ 8 MB, HWM ≥ RSS, threads ≥ 1", s)
	}
	if _, err := CPUTime(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStatus(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
	_ = buf[len(buf)-1]
}

// TestOnCPUCountsWork: 200 ms of this process's CPU time, as getrusage
// counts it, shows in OnCPU within 8 ms. The kernel brings a thread's
// schedstat up to date when the thread leaves its CPU and at each
// scheduler tick (4 ms at this VM's HZ of 250), so a thread still running
// when OnCPU reads it is behind by up to a tick: two threads at the most
// here (GOMAXPROCS 2). At 30 ms and ±2 ms the test failed about 1 run in
// 250 under load (28.2 ms counted against 30.3 ms). Clock ticks
// (utime + stime) would be 10 ms apart.
func TestOnCPUCountsWork(t *testing.T) {
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	r0 := rusage()
	before, err := OnCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for rusage()-r0 < 200*time.Millisecond {
		for range 10000 {
			x++
		}
	}
	after, err := OnCPU(os.Getpid())
	r1 := rusage()
	if err != nil {
		t.Fatal(err)
	}
	got, want := after-before, r1-r0
	if got < want-8*time.Millisecond || got > want+8*time.Millisecond {
		t.Errorf("OnCPU counted %v while getrusage counted %v", got, want)
	}
	if _, err := OnCPU(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
	_ = x
}

func TestStartRefusesMissingBinary(t *testing.T) {
	if _, err := Start(t.TempDir(), "x", "http://127.0.0.1:1/", nil, "/no/such/binary"); err == nil {
		t.Fatal("no error")
	}
}

// TestCPUMeterAgreesWithOnCPU: the meter counts what OnCPU counts, also
// after the process has started new threads.
func TestCPUMeterAgreesWithOnCPU(t *testing.T) {
	m, err := NewCPUMeter(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Read(); err != nil {
		t.Fatal(err)
	}
	// Work on threads the meter has not seen yet: locked goroutines get
	// threads of their own.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// 20 ms of this thread's CPU, not of wall clock: on a loaded
			// machine a thread spinning 20 ms of wall clock may run for a
			// few, and the 60 ms below was not reached.
			for start := threadCPU(t); threadCPU(t)-start < 20*time.Millisecond && !t.Failed(); {
				for range 10000 {
				}
			}
		}()
	}
	wg.Wait()
	got, err := m.Read()
	if err != nil {
		t.Fatal(err)
	}
	want, err := OnCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := want - got; d < 0 || d > 5*time.Millisecond {
		t.Errorf("meter %v, OnCPU %v (read just after)", got, want)
	}
	if got < 60*time.Millisecond {
		t.Errorf("meter %v after 4 threads spun 20 ms each", got)
	}
}

// threadCPU is the calling thread's time on a CPU so far (the first field
// of its /proc/self/task/TID/schedstat, in nanoseconds).
func threadCPU(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(syscall.Gettid()) + "/schedstat")
	if err != nil {
		t.Error(err)
		return 0
	}
	ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
	if err != nil {
		t.Error(err)
		return 0
	}
	return time.Duration(ns)
}

// TestGoroutines reads both forms of a goroutine count: this process's own
// goroutine profile (as a --pprof endpoint serves it) and a bare number.
func TestGoroutines(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/goroutine", pprof.Handler("goroutine"))
	mux.HandleFunc("/count", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("42\n")) })
	mux.HandleFunc("/other", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("not a count\n")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if n, err := Goroutines(srv.URL + "/debug/pprof/goroutine?debug=1"); err != nil || n < 2 {
		t.Errorf("profile: %d, %v; want this process's count (2 or more: the test and the server)", n, err)
	}
	if n, err := Goroutines(srv.URL + "/count"); err != nil || n != 42 {
		t.Errorf("bare number: %d, %v; want 42", n, err)
	}
	if _, err := Goroutines(srv.URL + "/other"); err == nil {
		t.Error("no error for an answer that holds no count")
	}
}
