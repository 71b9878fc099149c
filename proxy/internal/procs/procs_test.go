package procs

import (
	"os"
	"testing"
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

func TestStartRefusesMissingBinary(t *testing.T) {
	if _, err := Start(t.TempDir(), "x", "http://127.0.0.1:1/", nil, "/no/such/binary"); err == nil {
		t.Fatal("no error")
	}
}
