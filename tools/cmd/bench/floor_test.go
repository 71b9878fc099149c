package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadWhole: the buffered floor reads a body of announced length, one
// of unknown length, and reports one cut short.
func TestReadWhole(t *testing.T) {
	body := strings.Repeat("0123456789", 5400)
	known := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
	unknown := httptest.NewRequest("POST", "/v1/messages", io.NopCloser(strings.NewReader(body)))
	unknown.ContentLength = -1
	for name, r := range map[string]*http.Request{"known length": known, "unknown length": unknown} {
		got, err := readWhole(r)
		if err != nil || !bytes.Equal(got, []byte(body)) {
			t.Errorf("%s: got %d bytes, %v; want the %d bytes sent", name, len(got), err, len(body))
		}
	}
	short := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body[:100]))
	short.ContentLength = int64(len(body))
	if _, err := readWhole(short); err == nil {
		t.Error("a body shorter than its Content-Length was read without an error")
	}
}

// TestPrivateCopy: the floor's executable is a byte-identical copy of the
// bench, in a file of its own (not the same file, so no shared pages).
func TestPrivateCopy(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := privateCopy(self, t.TempDir(), "floor")
	if err != nil {
		t.Fatal(err)
	}
	a, errA := os.ReadFile(self)
	b, errB := os.ReadFile(dst)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("the copy is not the bench's bytes (%v, %v; %d vs %d bytes)", errA, errB, len(a), len(b))
	}
	si, _ := os.Stat(self)
	di, err := os.Stat(dst)
	if err != nil || di.Mode().Perm()&0o100 == 0 {
		t.Fatalf("the copy is not executable: %v %v", di.Mode(), err)
	}
	if os.SameFile(si, di) {
		t.Fatal("the copy is the same file as the bench")
	}
	if _, err := privateCopy(self, filepath.Dir(dst), "floor"); err == nil {
		t.Error("a second copy over the first was allowed")
	}
}
