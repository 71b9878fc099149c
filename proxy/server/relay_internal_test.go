package server

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strconv"
	"testing"
)

// chunks is a backend body that returns one chunk per Read.
type chunks struct{ c [][]byte }

func (r *chunks) Read(p []byte) (int, error) {
	if len(r.c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.c[0])
	if r.c[0] = r.c[0][n:]; len(r.c[0]) == 0 {
		r.c = r.c[1:]
	}
	return n, nil
}

func (r *chunks) Close() error { return nil }

// TestRelayWritesEachReadsTranslation: the relay takes a fresh output
// buffer from the pool for each read and gives it back once written, so
// what the client gets is exactly what feed made of each read, in order,
// whether a read translates to nothing, to a little, or to more than the
// buffer's first size; feed is always handed an empty dst.
func TestRelayWritesEachReadsTranslation(t *testing.T) {
	var in [][]byte
	for i := range 40 {
		in = append(in, []byte("read "+strconv.Itoa(i)+";"))
	}
	// What a read becomes: nothing for every 5th, 3×outSize bytes for
	// every 7th, a line otherwise; each made of the read's bytes, so a
	// buffer shared across reads would show.
	translate := func(dst, p []byte) []byte {
		switch n := len(p); {
		case bytes.HasSuffix(p, []byte("5;")) || bytes.HasSuffix(p, []byte("0;")):
			return dst
		case n%7 == 0:
			return append(dst, bytes.Repeat(p, 3*outSize/n+1)...)
		default:
			return append(append(append(dst, '<'), p...), ">\n"...)
		}
	}
	var want []byte
	for _, p := range in {
		want = translate(want, p)
	}
	rec := httptest.NewRecorder()
	feed := func(dst, p []byte) ([]byte, error) {
		if len(dst) != 0 {
			t.Fatalf("feed handed a dst holding %d bytes", len(dst))
		}
		return translate(dst, p), nil
	}
	body := &chunks{c: append([][]byte(nil), in...)}
	for i := range body.c {
		body.c[i] = bytes.Clone(body.c[i])
	}
	if err := relay(rec, httptest.NewRequest("POST", "/", nil), body, feed, nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("the client got %d bytes, want %d (what feed made of each read, in order)", len(got), len(want))
	}
}

// A backend that has not ended its answer once the translator saw its end
// is not waited for: drain returns when its wait closes the body (the
// read blocked until then), and one that sends on and on after its end
// is read no further than drainBytes and a read.
func TestDrainDoesNotWaitForABackend(t *testing.T) {
	buf := make([]byte, 1<<10)
	silent, w := io.Pipe()
	defer w.Close()
	drain(silent, buf) // returns: the wait closed the pipe
	if _, err := w.Write([]byte("x")); err != io.ErrClosedPipe {
		t.Fatalf("the body of a silent backend is still open after drain (write: %v)", err)
	}
	endless := &countingReader{}
	drain(io.NopCloser(endless), buf)
	if endless.n > drainBytes+len(buf) {
		t.Fatalf("drain read %d bytes of an endless body, want at most %d", endless.n, drainBytes+len(buf))
	}
}

// countingReader is an endless body of zeros that counts what was read.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += len(p)
	clear(p)
	return len(p), nil
}
