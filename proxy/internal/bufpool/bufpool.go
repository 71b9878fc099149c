// Package bufpool lends the byte buffers that request and response bodies
// are read into (server) and built in (translate), and reads a body into
// one. A coding client's request is 50 KB and more, and the proxy holds it,
// its translation and the backend's answer: a fresh buffer for each was
// most of what a request allocated, and so most of the garbage collector's
// work. A buffer never given back is simply collected.
package bufpool

import (
	"io"
	"math/bits"
	"sync"
)

// pools holds the buffers by size class: pools[k] those whose capacity is
// at least size(k) and less than size(k+1). One pool for all sizes handed
// a 4 KB answer's buffer to a 54 KB body, which then allocated a new one
// each time (and fresh memory costs a request more than anything it does
// with it).
var pools [classes]sync.Pool // of *[]byte

// maxPooled: larger buffers go back to the garbage collector rather than
// stay in the pool.
const maxPooled = 1 << 20

// minSize is the least a new buffer holds.
const minSize = 4096

// classes: four a doubling, a quarter apart (4, 5, 6, 7, 8, 10, … KB), so
// that a buffer is at most a quarter larger than what it was asked for:
// with one class a doubling, a 53 KB body took a 64 KB buffer, and 256
// concurrent requests held 256 × 2 such (the body and its translation).
// size(classes-1) == maxPooled.
const classes = 33

// size is the least capacity of class k's buffers.
func size(k int) int { return minSize / 4 << (k / 4) * (4 + k%4) }

// class returns the smallest class whose buffers all hold n bytes, or
// classes when n is above maxPooled.
func class(n int) int {
	if n <= minSize {
		return 0
	}
	if n > maxPooled {
		return classes
	}
	// n-1 has its highest bit at 12+j: n is in (minSize<<j, minSize<<(j+1)],
	// and the class is the quarter of that doubling that holds n.
	j := bits.Len(uint(n-1)) - 13
	return 4*j + (n-1)>>(10+j) + 1 - 4
}

// Get returns an empty buffer with room for at least n bytes.
func Get(n int) []byte {
	k := class(n)
	if k == classes {
		return make([]byte, 0, n)
	}
	if p, ok := pools[k].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, size(k))
}

// Put gives b back. Nothing may use b, or a slice of it, afterwards.
func Put(b []byte) {
	c := cap(b)
	if c < minSize || c > maxPooled {
		return
	}
	k := class(c)
	if size(k) > c {
		k-- // the class below: every buffer of a class holds its least size
	}
	b = b[:0]
	pools[k].Put(&b)
}

// ReadAll reads r to its end into a buffer from Get, at most limit bytes
// (a longer body is cut at limit, as with io.LimitReader; a reader that
// enforces its own limit, like http.MaxBytesReader, reports it as an
// error). hint is the expected size, or -1. On an error the buffer holds
// what was read; either way the caller gives it back with Put.
func ReadAll(r io.Reader, hint, limit int64) ([]byte, error) {
	size := 1024
	if hint > 0 && hint < limit {
		size = int(hint) + 1 // +1: the read that sees the end
	}
	buf := Get(size)
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := cap(buf)
		if int64(end) > limit {
			end = int(limit)
		}
		n, err := r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}
