package bufpool

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 1000) // 10 000 bytes
	for _, tc := range []struct {
		name        string
		hint, limit int64
		want        string
	}{
		{"no hint", -1, 1 << 20, body},
		{"exact hint", int64(len(body)), 1 << 20, body},
		{"hint too small", 10, 1 << 20, body},
		{"hint too large", 1 << 19, 1 << 20, body},
		{"cut at the limit", -1, 4000, body[:4000]},
		{"empty", -1, 1 << 20, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := body
			if tc.name == "empty" {
				src = ""
			}
			// HalfReader: the loop must keep reading until EOF.
			got, err := ReadAll(iotest.HalfReader(strings.NewReader(src)), tc.hint, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("read %d bytes, want %d", len(got), len(tc.want))
			}
			Put(got)
		})
	}
}

func TestReadAllReportsTheReadersError(t *testing.T) {
	boom := errors.New("boom")
	got, err := ReadAll(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), -1, 100)
	if !errors.Is(err, boom) || string(got) != "abc" {
		t.Fatalf("got %q, %v; want the bytes before the error and the error", got, err)
	}
}

// http.MaxBytesReader enforces its limit as an error: ReadAll given a
// larger limit reports it rather than cutting the body.
func TestReadAllThroughMaxBytesReader(t *testing.T) {
	const limit = 100
	r := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(bytes.NewReader(make([]byte, 2*limit))), limit)
	_, err := ReadAll(r, -1, limit+1)
	var tooBig *http.MaxBytesError
	if !errors.As(err, &tooBig) {
		t.Fatalf("err = %v, want *http.MaxBytesError", err)
	}
}

func TestGetGivesRoom(t *testing.T) {
	for _, n := range []int{0, 1, 5000, 1 << 21} {
		b := Get(n)
		if len(b) != 0 || cap(b) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		Put(append(b, 'x'))
	}
}

// A buffer given back is handed out again for its size, whatever smaller
// buffers were given back after it (one pool for all sizes handed out the
// small one, and a large body then allocated anew each time).
func TestGetBySize(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops buffers given back at random under -race; TestClasses holds there")
	}
	for _, size := range []int{5000, 54 << 10, 300 << 10} {
		reused := 0
		for range 100 {
			b := append(Get(size), 1)
			Put(b)
			Put(make([]byte, 0, 4096))
			c := Get(size)
			if cap(c) < size {
				t.Fatalf("Get(%d): cap %d", size, cap(c))
			}
			if &c[:1][0] == &b[0] {
				reused++
			}
			Put(c)
		}
		// sync.Pool may drop an item (a GC between Put and Get); nearly
		// all must come back.
		if reused < 90 {
			t.Fatalf("Get(%d) reused %d of 100 buffers given back", size, reused)
		}
	}
}

// Every buffer of a class holds the least size of the class, and Get(n)
// takes from a class whose least size is n or more.
func TestClasses(t *testing.T) {
	if size(0) != minSize || size(classes-1) != maxPooled || class(maxPooled) != classes-1 || class(maxPooled+1) != classes {
		t.Fatalf("classes from %d to %d bytes, want %d to %d", size(0), size(classes-1), minSize, maxPooled)
	}
	for n := 1; n <= maxPooled; n += 1 + n/97 {
		k := class(n)
		if k >= classes || size(k) < n || (k > 0 && size(k-1) >= n) {
			t.Fatalf("Get(%d) takes from class %d (buffers of %d bytes and more)", n, k, size(k))
		}
		if n > minSize && size(k) > n+n/4 {
			t.Fatalf("Get(%d) takes a buffer of %d bytes: over a quarter more", n, size(k))
		}
		if n < minSize {
			continue
		}
		Put(make([]byte, 0, n))
		b := Get(n)
		if cap(b) < n {
			t.Fatalf("Get(%d) after Put of cap %d: cap %d", n, n, cap(b))
		}
	}
}
