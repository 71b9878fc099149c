package upstream_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// releases records what Call.Release was given.
type releases struct {
	mu  sync.Mutex
	got [][]byte
}

func (r *releases) release(b []byte) {
	r.mu.Lock()
	r.got = append(r.got, b)
	r.mu.Unlock()
}

func (r *releases) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// wantOnce checks that Release was given body, once.
func (r *releases) wantOnce(t *testing.T, body []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != 1 || len(r.got[0]) != len(body) || &r.got[0][0] != &body[0] {
		t.Fatalf("Release was given %d bodies, want the call's own once", len(r.got))
	}
}

// The body of a call goes to Release once, after the backend read it
// whole; also when no attempt could send it.
func TestReleaseGetsTheBodyOnce(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"ok":true}`))
	}), nil)
	pool := upstream.NewPool()
	for _, base := range []string{srv, unreachable(t)} {
		var rel releases
		body := bytes.Repeat([]byte("r"), 54<<10)
		resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: base, Path: "/x", Body: body, Timeout: 5 * time.Second, Release: rel.release})
		if base == srv {
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		} else if err == nil {
			t.Fatal("a call to a closed port succeeded")
		}
		rel.wantOnce(t, body)
	}
}

// A backend that answers before it read the body: Do returns with the
// answer while the transport may still be writing the body. Release
// comes only once the transport can read nothing more of it: what the
// caller then writes into that memory never reaches the backend.
func TestReleasedBodyNeverSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	scribbled := make(chan struct{})
	scribbles := make(chan int, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		if _, err := http.ReadRequest(r); err != nil {
			scribbles <- -1
			return
		}
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\n\r\nno")
		select {
		case <-scribbled:
		case <-time.After(5 * time.Second):
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		rest, _ := io.ReadAll(r)
		scribbles <- bytes.Count(rest, []byte("X"))
	}()
	var rel releases
	body := bytes.Repeat([]byte("z"), 64<<20) // far more than the socket buffers hold
	_, err = upstream.NewPool().Do(context.Background(), upstream.Call{BaseURL: "http://" + l.Addr().String(), Path: "/x", Body: body, Timeout: 30 * time.Second, Release: rel.release})
	if err == nil {
		t.Fatal("the backend's 400 was not an error")
	}
	deadline := time.Now().Add(10 * time.Second)
	for rel.count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Release was not called")
		}
		time.Sleep(time.Millisecond)
	}
	rel.wantOnce(t, body)
	for i := range body {
		body[i] = 'X'
	}
	close(scribbled)
	if n := <-scribbles; n != 0 {
		t.Fatalf("the backend received %d bytes written into the body after its Release", n)
	}
}

// Writing a 54 KB body to the socket takes no buffer of its own: a TCP
// connection's ReadFrom allocated 32 KB for each (pooledCopyConn).
func TestBodyWrittenWithoutACopyBuffer(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts are not exact under -race (make test runs this without it)")
	}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	}), nil)
	pool := upstream.NewPool()
	body := bytes.Repeat([]byte("w"), 54<<10)
	do := func() {
		resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/x", Body: body, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do() // the connection dialed
	const calls = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		do()
	}
	runtime.ReadMemStats(&after)
	// Client and backend together, headers and all, allocate about 10 KB
	// a call here.
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > 24<<10 {
		t.Fatalf("%d bytes allocated a call, want at most 24 KB", per)
	}
}

// unreachable is the address of a port nothing listens on.
func unreachable(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}
