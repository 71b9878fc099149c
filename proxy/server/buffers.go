package server

import (
	"io"
	"sync"
	"unsafe"
)

// Request and response bodies are read into pooled buffers. A coding
// client's request is 50 KB and more: a fresh buffer for each would be a
// large allocation per request (zeroed memory, and the garbage collector
// running every few dozen requests), which profiles of the proxy showed
// as a large part of its CPU time beside JSON scanning.
var bodyPool sync.Pool // of *[]byte

// maxPooledBody: larger buffers go back to the garbage collector rather
// than stay in the pool.
const maxPooledBody = 1 << 20

// getBuffer returns an empty buffer with room for at least size bytes.
func getBuffer(size int) []byte {
	if p, ok := bodyPool.Get().(*[]byte); ok {
		if cap(*p) >= size {
			return (*p)[:0]
		}
		bodyPool.Put(p)
	}
	return make([]byte, 0, max(size, 4096))
}

// putBuffer gives b back to the pool. Nothing may use b afterwards.
func putBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	b = b[:0]
	bodyPool.Put(&b)
}

// releaseBody gives a request body back once it is translated, unless
// the translation's output shares its memory (it never does today:
// translate builds a new body; the check keeps a future change from
// corrupting requests in flight).
func releaseBody(body, out []byte) {
	if overlap(body, out) {
		return
	}
	putBuffer(body)
}

func overlap(a, b []byte) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(cap(b)) && b0 < a0+uintptr(cap(a))
}

// readAll reads r to its end into a pooled buffer, at most limit bytes
// (a longer body is cut at limit, as with io.LimitReader). hint is the
// expected size, or -1.
func readAll(r io.Reader, hint int64, limit int64) ([]byte, error) {
	size := 1024
	if hint > 0 && hint < limit {
		size = int(hint) + 1
	}
	buf := getBuffer(size)
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
