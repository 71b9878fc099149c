package main

import (
	"runtime"
	"testing"
)

func TestSetProcs(t *testing.T) {
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
	setProcs(1, func(name string) (string, bool) { return "3", name == "GOMAXPROCS" })
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS=3 in the environment: --procs 1 changed it to %d", got)
	}
}
