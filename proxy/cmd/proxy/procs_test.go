package main

import (
	"flag"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestSetProcs: --procs n sets GOMAXPROCS, 0 gives Go's own, auto (the
// default) one thread where Go's own is 2 or fewer and Go's own above, and
// a GOMAXPROCS in the environment wins over any of them.
func TestSetProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	noEnv := func(string) (string, bool) { return "", false }

	setProcs(1, noEnv)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("--procs 1: GOMAXPROCS %d", got)
	}
	runtime.SetDefaultGOMAXPROCS()
	goDefault := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(1)
	setProcs(0, noEnv)
	if got := runtime.GOMAXPROCS(0); got != goDefault {
		t.Fatalf("--procs 0: GOMAXPROCS %d, Go's default is %d", got, goDefault)
	}
	runtime.GOMAXPROCS(5)
	setProcs(autoProcs, noEnv)
	if got, want := runtime.GOMAXPROCS(0), autoThreads(goDefault); got != want {
		t.Fatalf("--procs auto with Go's default at %d: GOMAXPROCS %d, want %d", goDefault, got, want)
	}
	runtime.GOMAXPROCS(3)
	env3 := func(name string) (string, bool) { return "3", name == "GOMAXPROCS" }
	for _, p := range []procs{1, 0, autoProcs} {
		setProcs(p, env3)
		if got := runtime.GOMAXPROCS(0); got != 3 {
			t.Fatalf("GOMAXPROCS=3 in the environment: --procs %s changed it to %d", p.String(), got)
		}
	}
}

func TestAutoThreads(t *testing.T) {
	for goDefault, want := range map[int]int{1: 1, 2: 1, 3: 3, 16: 16} {
		if got := autoThreads(goDefault); got != want {
			t.Errorf("auto where Go's default is %d: %d threads, want %d", goDefault, got, want)
		}
	}
}

// TestProcsFlag: --procs takes auto, 0 and a number, and refuses anything
// else saying what it takes.
func TestProcsFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want procs
	}{{[]string{"--procs", "auto"}, autoProcs}, {[]string{"--procs", "0"}, 0}, {[]string{"--procs=4"}, 4}} {
		p := autoProcs
		fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
		fs.Var(&p, "procs", "")
		if err := fs.Parse(tc.args); err != nil || p != tc.want {
			t.Errorf("%v: %v, err %v; want %v", tc.args, p.String(), err, tc.want.String())
		}
	}
	for _, bad := range []string{"-1", "two", ""} {
		p := autoProcs
		fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Var(&p, "procs", "")
		err := fs.Parse([]string{"--procs", bad})
		if err == nil || !strings.Contains(err.Error(), "want auto, 0") {
			t.Errorf("--procs %q: %v, want an error that says what --procs takes", bad, err)
		}
	}
}
