package main

import (
	"runtime"
	"testing"
)

// TestSetProcs: --procs n sets GOMAXPROCS, 0 (the default) gives Go's
// own, and a GOMAXPROCS in the environment wins over either.
func TestSetProcs(t *testing.T) {
	if defaultProcs != 0 {
		t.Fatalf("the default --procs is %d: Go's own (0) follows a container's CPU limit", defaultProcs)
	}
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	noEnv := func(string) (string, bool) { return "", false }

	setProcs(1, noEnv)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("--procs 1: GOMAXPROCS %d", got)
	}
	runtime.SetDefaultGOMAXPROCS()
	want := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(1)
	setProcs(0, noEnv)
	if got := runtime.GOMAXPROCS(0); got != want {
		t.Fatalf("--procs 0: GOMAXPROCS %d, Go's default is %d", got, want)
	}
	runtime.GOMAXPROCS(3)
	env3 := func(name string) (string, bool) { return "3", name == "GOMAXPROCS" }
	for _, n := range []int{1, defaultProcs} {
		setProcs(n, env3)
		if got := runtime.GOMAXPROCS(0); got != 3 {
			t.Fatalf("GOMAXPROCS=3 in the environment: --procs %d changed it to %d", n, got)
		}
	}
}
