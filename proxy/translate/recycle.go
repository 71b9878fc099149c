package translate

import "sync"

// The bodies MessagesToChat and ChatToChat build for the backend, and the
// answers ChatResponseModel rewrites, are as large as a client's request
// (50 KB and more): a fresh buffer for each was most of what a request
// allocated, and so most of the garbage collector's work. They come from
// a pool; a caller that knows when nothing reads a body any more gives it
// back with Recycle. A body never given back is simply collected.
var outPool sync.Pool // of *[]byte

// maxRecycled: larger buffers are left to the garbage collector.
const maxRecycled = 1 << 20

// getOut returns an empty buffer with room for at least n bytes.
func getOut(n int) []byte {
	if p, ok := outPool.Get().(*[]byte); ok {
		if cap(*p) >= n {
			return (*p)[:0]
		}
		outPool.Put(p)
	}
	return make([]byte, 0, n)
}

// Recycle gives back a body returned by MessagesToChat or ChatToChat
// (BackendRequest.Body) or by ChatResponseModel, once nothing reads it:
// after it has been sent. Nothing may use b afterwards.
func Recycle(b []byte) {
	if cap(b) == 0 || cap(b) > maxRecycled {
		return
	}
	b = b[:0]
	outPool.Put(&b)
}
