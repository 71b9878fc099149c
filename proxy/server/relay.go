package server

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
)

// readBuffers hold one backend read of a stream: events are small, and a
// read returns what has come, so 4 KB keeps the memory of 256 open streams
// low; a fast backend's burst takes a few more reads.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 4<<10); return &b }}

// outSize is the least room of a relay's output buffer (outRoom).
const outSize = 4 << 10

// outRoom is the room of the output buffer for a read of n bytes: twice
// the read. A read of Chat chunks becomes up to ~1.4 times its size in
// Responses events (each delta names its item, its indexes and its
// sequence number); with room for the read alone, a full read's events
// outgrew the buffer, append reallocated it two or three times, and the
// grown buffer went back to a larger class of bufpool, so the next read's
// Get found its class empty and allocated again (translate's
// BenchmarkResponsesStreamReads: 46 KB a stream of 4 KB reads, now 30).
func outRoom(n int) int { return max(outSize, 2*n) }

// relay copies a backend stream to the client through feed, flushing after
// every read. It reads, translates, writes and flushes in the calling
// goroutine, as httputil.ReverseProxy does: no hand-over between
// goroutines for each event. A client that stops reading blocks the write,
// and so the next backend read. While nothing is written to the client (the
// backend is silent, or feed holds what it sends), ping (when not nil)
// keeps the client's idle timer from firing: a timer writes it, under
// the lock that each write of the loop takes. The client's going away
// cancels the backend request (its context is the client's), which ends the
// read. relay returns the error that ended the stream early (a read error, a
// feed error, or the client's going away), nil at a clean end.
func relay(w http.ResponseWriter, r *http.Request, body io.ReadCloser, feed func(dst, p []byte) ([]byte, error), done func() bool, ping func(dst []byte) []byte, every time.Duration) error {
	flusher, _ := w.(http.Flusher)
	bufp := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(bufp)
	buf := *bufp
	obs := observed(w)
	var pg *pinger
	if ping != nil && every > 0 {
		pg = startPinger(w, func(b []byte) bool {
			_, err := w.Write(b)
			if err == nil && flusher != nil {
				flusher.Flush()
			}
			return err == nil
		}, nil, ping, every)
		defer pg.stop()
	}
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if pg != nil {
				pg.mu.Lock()
			}
			// What one read translates to, in a pooled buffer taken for
			// this read alone: grown from nothing for every stream, it was
			// a good part of what a translated stream allocated; held for
			// the stream's life, it was 4 KB more per open stream, most of
			// whose time is spent waiting for the backend's next read.
			var werr error
			out, ferr := feed(bufpool.Get(outRoom(n)), buf[:n])
			wrote := len(out) > 0
			if wrote {
				if _, werr = w.Write(out); werr == nil && flusher != nil {
					flusher.Flush()
				}
				obs.noteFirstToken(out)
			}
			bufpool.Put(out)
			if pg != nil {
				if wrote {
					// Only what reaches the client resets its idle timer:
					// a backend busy with a tool call whose arguments the
					// translator holds still gets pings out.
					pg.last = time.Now()
				}
				pg.mu.Unlock()
			}
			if werr != nil {
				return werr
			}
			if ferr != nil {
				return ferr
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if done != nil && done() {
			drain(body, buf)
			return nil
		}
		if rerr != nil {
			if err := r.Context().Err(); err != nil {
				return err
			}
			return rerr
		}
	}
}

// drainWait and drainBytes bound what drain reads (drainWait a variable
// for the tests, which wait longer so that a loaded machine cannot make
// them fail).
var drainWait = 2 * time.Millisecond

const drainBytes = 4 << 10

// drain reads what is left of a backend's stream once the translator saw
// its end (done: the finish and the usage, or [DONE]): what usually
// follows ([DONE], the end of the chunked encoding) comes at once, and a
// body read to its end gives the connection back to its pool (upstream).
// Closed before its end, as it was when relay stopped at done, the
// connection was dropped, and the backend's next request dialled a new
// one: at one connection ~100 µs of a short stream's added latency (bench
// --ab, responses 43 KB stream). A backend that sends more than
// drainBytes, or has not ended its answer within drainWait, is not waited
// for: its body is closed, the connection dropped as before. drain
// reads into buf.
func drain(body io.ReadCloser, buf []byte) {
	t := time.AfterFunc(drainWait, func() { body.Close() })
	defer t.Stop()
	for n := 0; n <= drainBytes; {
		k, err := body.Read(buf)
		if err != nil {
			return
		}
		n += k
	}
}
