package upstream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// The body is given to Release once the last of its readers ended and
// no new reader can get it: the transport may still read through a
// reader after Do returned (RoundTrip may close a body after it returns).
func TestBodyReleasedAfterItsLastReader(t *testing.T) {
	body := bytes.Repeat([]byte("b"), 100)
	var released [][]byte
	ref := &bodyRef{b: body, release: func(b []byte) { released = append(released, b) }}
	r1, err := ref.reader()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := ref.reader() // GetBody's, for a retry on a stale connection
	if err != nil {
		t.Fatal(err)
	}
	ref.over()
	if got, err := io.ReadAll(r1); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the first reader read %d bytes, %v", len(got), err)
	}
	if len(released) != 0 {
		t.Fatal("released while a reader could still read the body")
	}
	r2.Close()
	if len(released) != 1 || &released[0][0] != &body[0] {
		t.Fatalf("released %d times once the last reader was closed, want once", len(released))
	}
	if n, err := r2.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("a closed reader read %d bytes, %v", n, err)
	}
	if _, err := ref.reader(); !errors.Is(err, errBodySent) {
		t.Fatalf("a reader after the end: %v, want errBodySent", err)
	}
	r1.Close()
	ref.over()
	if len(released) != 1 {
		t.Fatalf("released %d times, want once", len(released))
	}
}
