package upstream_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// Every body size, around the transport's write buffer (4 KB) and its
// copy buffer (32 KB) too, reaches the backend byte for byte, with its
// Content-Length, on one kept-alive connection.
func TestBodiesArriveWhole(t *testing.T) {
	var conns atomic.Int32
	type received struct {
		body   []byte
		length int64
	}
	seen := make(chan received, 1)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- received{b, r.ContentLength}
		w.Write([]byte(`{}`))
	}), &conns)
	pool := upstream.NewPool()
	for _, n := range []int{1, 100, 4000, 4096, 4097, 32 << 10, 32<<10 + 1, 54 << 10, 1 << 20} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte('a' + i%26)
		}
		resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/x", Body: body, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := <-seen; !bytes.Equal(got.body, body) || got.length != int64(n) {
			t.Fatalf("%d bytes sent: the backend read %d, Content-Length %d", n, len(got.body), got.length)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for one request at a time, want 1 kept alive", n)
	}
}

// newServer serves h on loopback, counting its connections in conns (when
// not nil).
func newServer(t *testing.T, h http.Handler, conns *atomic.Int32) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew && conns != nil {
			conns.Add(1)
		}
	}}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// call makes one call to base and returns the answer's body, read whole.
func call(t *testing.T, pool *upstream.Pool, base string) string {
	t.Helper()
	resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: base, Path: "/x", Body: []byte(`{}`), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A chunked answer read to its end gives its connection back; an answer
// closed before its end closes it, and the next call dials again.
func TestConnectionKeptOnlyAfterTheWholeAnswer(t *testing.T) {
	var conns atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	}), &conns)
	pool := upstream.NewPool()
	for range 3 {
		if got := call(t, pool, srv); got != "data: 0\n\ndata: 1\n\ndata: 2\n\n" {
			t.Fatalf("answer %q", got)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 3 answers read whole, want 1", n)
	}
	resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/x", Body: []byte(`{}`), Stream: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Read(make([]byte, 4))
	resp.Body.Close()
	if got := call(t, pool, srv); got != "data: 0\n\ndata: 1\n\ndata: 2\n\n" {
		t.Fatalf("answer after an abandoned one %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2: the abandoned answer's closed", n)
	}
}

// A backend that closes a connection while it is idle (uvicorn's
// keep-alive timeout) costs the next call nothing but a new connection.
func TestBackendClosedIdleConnection(t *testing.T) {
	var conns atomic.Int32
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{IdleTimeout: 20 * time.Millisecond, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + l.Addr().String()
	pool := upstream.NewPool()
	for i := range 3 {
		if got := call(t, pool, base); got != "ok" {
			t.Fatalf("call %d: %q", i, got)
		}
		time.Sleep(200 * time.Millisecond) // the server closes it meanwhile
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (each closed by the backend while idle)", n)
	}
}

// rawBackend answers each connection with what answer writes, after
// reading the request's head.
func rawBackend(t *testing.T, answer func(c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	serve := func(c net.Conn) {
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(r)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			answer(c, r)
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return "http://" + l.Addr().String()
}

// A backend that says Connection: close, or answers HTTP/1.0 without a
// length, is not asked again on that connection.
func TestAnswerThatClosesItsConnection(t *testing.T) {
	for name, answer := range map[string]string{
		"connection close": "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"http/1.0":         "HTTP/1.0 200 OK\r\n\r\nok",
	} {
		t.Run(name, func(t *testing.T) {
			var conns atomic.Int32
			base := rawBackend(t, func(c net.Conn, r *bufio.Reader) {
				conns.Add(1)
				io.WriteString(c, answer)
				c.Close()
			})
			pool := upstream.NewPool()
			for i := range 3 {
				if got := call(t, pool, base); got != "ok" {
					t.Fatalf("call %d: %q", i, got)
				}
			}
			if n := conns.Load(); n != 3 {
				t.Fatalf("%d answers", n)
			}
		})
	}
}

// Informational answers (100 Continue, 103 Early Hints) before the
// answer are passed over.
func TestInformationalAnswersPassedOver(t *testing.T) {
	base := rawBackend(t, func(c net.Conn, r *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	pool := upstream.NewPool()
	for i := range 2 {
		if got := call(t, pool, base); got != "ok" {
			t.Fatalf("call %d: %q", i, got)
		}
	}
}

// A backend whose answer's head does not end is cut off at a bound, with
// an error, not read into memory without end.
func TestEndlessAnswerHead(t *testing.T) {
	base := rawBackend(t, func(c net.Conn, r *bufio.Reader) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := []byte("X-Filler: " + strings.Repeat("a", 1000) + "\r\n")
		for {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	})
	_, err := upstream.NewPool().Do(context.Background(), upstream.Call{BaseURL: base, Path: "/x", Body: []byte(`{}`), Timeout: time.Minute})
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Kind != upstream.Unreachable || !strings.Contains(err.Error(), "exceeded") {
		t.Fatalf("err = %v, want the answer head's bound", err)
	}
}

// Close from another goroutine ends a Read under way (the relay's drain
// does), and the connection is not given to the next call.
func TestCloseWhileReading(t *testing.T) {
	var conns atomic.Int32
	release := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.Write([]byte("data: 0\n\n"))
			w.(http.Flusher).Flush()
			<-release
			return
		}
		w.Write([]byte("ok"))
	}), &conns)
	defer close(release)
	pool := upstream.NewPool()
	resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/slow", Body: []byte(`{}`), Stream: true, StreamTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		read <- err
	}()
	time.Sleep(20 * time.Millisecond)
	resp.Body.Close()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the read ended without an error: the answer did not end")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the Read under way")
	}
	if got := call(t, pool, srv); got != "ok" {
		t.Fatalf("next call: %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

// A backend that reads the body and is slow to answer (a cold model): the
// body is let go once it was sent whole, before the answer comes: the
// garbage collector takes it while the call waits.
func TestBodyLetGoOnceSent(t *testing.T) {
	read := make(chan struct{})
	answer := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(read)
		<-answer
		w.Write([]byte(`{"ok":true}`))
	}), nil)
	defer close(answer)
	pool := upstream.NewPool()
	body := weakBody(pool, srv)
	<-read
	deadline := time.Now().Add(5 * time.Second)
	for body.Value() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the body was held while the backend was slow to answer")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// weakBody starts a call with a 54 KB body of its own and returns a weak
// pointer to that body: the test holds no reference to it.
func weakBody(pool *upstream.Pool, base string) weak.Pointer[byte] {
	body := bytes.Repeat([]byte("y"), 54<<10)
	go pool.Do(context.Background(), upstream.Call{BaseURL: base, Path: "/x", Body: body, Timeout: time.Minute})
	return weak.Make(&body[0])
}

// A backend that answers at once without reading the body, and neither
// reads nor closes the connection after: the answer reaches the caller
// at once, not when the write of the body gives up.
func TestEarlyAnswerWhileTheBodyIsWritten(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	hold := make(chan struct{})
	defer close(hold)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				if _, err := http.ReadRequest(r); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"error\":\"no\"}")
				<-hold
			}()
		}
	}()
	body := bytes.Repeat([]byte("z"), 64<<20) // far more than the socket buffers hold
	start := time.Now()
	_, err = upstream.NewPool().Do(context.Background(), upstream.Call{BaseURL: "http://" + l.Addr().String(), Path: "/x", Body: body, Timeout: 30 * time.Second})
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Kind != upstream.Status || ue.Status != 400 || string(ue.Body) != `{"error":"no"}` {
		t.Fatalf("err = %v, want the backend's 400", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the early answer took %s: the call waited for the body's write", took)
	}
}
