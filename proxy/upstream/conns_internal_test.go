package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// What a backend receives from a call on the pool's own connections is
// what it received through net/http's transport: method, target, Host,
// protocol, length, every header and the body.
func TestHeadAsTheTransportWritesIt(t *testing.T) {
	type seen struct {
		method, uri, host, proto string
		length                   int64
		header                   http.Header
		body                     string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Host, r.Proto, r.ContentLength, r.Header.Clone(), string(b)}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	for _, c := range []Call{
		{BaseURL: srv.URL + "/v1", Path: "/messages", Body: []byte(`{"model":"m"}`), APIKey: "k-123", Session: "s-1",
			Header: http.Header{"Anthropic-Version": {"2023-06-01"}, "Anthropic-Beta": {"a-1", "b-2"}},
			Attempt: func(r *http.Request) func(int, error) {
				r.Header.Set("Traceparent", "00-ab-cd-01")
				return func(int, error) {}
			}},
		{BaseURL: srv.URL + "/v1?x=1", Path: "/chat/completions", Body: []byte(`{}`), Stream: true},
		{BaseURL: srv.URL, Path: "/messages/count_tokens", StreamFlag: func(http.Header) bool { return false }},
	} {
		var answers [2]seen
		for i, own := range []bool{true, false} {
			p := NewPool()
			if !own {
				p.conns[c.BaseURL] = nil // through the transport
			} else if p.direct(c.BaseURL) == nil {
				t.Fatalf("%s: not on the pool's own connections", c.BaseURL)
			}
			ref := &bodyRef{b: c.Body, body: c.Body, holds: 1, own: true}
			resp, err := p.once(context.Background(), c, ref)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ref.over()
			answers[i] = <-got
		}
		if !reflect.DeepEqual(answers[0], answers[1]) {
			t.Errorf("%s%s:\nown connection %+v\ntransport      %+v", c.BaseURL, c.Path, answers[0], answers[1])
		}
	}
}

// Backends reached over TLS or through a proxy go through the transport.
func TestOwnConnectionsOnlyForPlainHTTP(t *testing.T) {
	p := NewPool()
	if p.direct("https://gpu.example:8000/v1") != nil {
		t.Error("https on the pool's own connections")
	}
	if p.direct("http://127.0.0.1:8000/v1") == nil {
		t.Error("http not on the pool's own connections")
	}
	p.proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "127.0.0.1:3128"})
	if p.direct("http://gpu.example:8000/v1") != nil {
		t.Error("a proxied backend on the pool's own connections")
	}
}

// failingConn is a reused connection the backend closed: writes fail,
// reads end.
type failingConn struct{ net.Conn }

func (failingConn) Write([]byte) (int, error) { return 0, syscall.EPIPE }
func (failingConn) Read([]byte) (int, error)  { return 0, io.EOF }
func (failingConn) Close() error              { return nil }

// A reused connection whose write fails, with no answer, costs the call
// a new connection, not its failure; a new connection's is the call's.
func TestWriteFailureOnAReusedConnection(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	p := NewPool()
	cs := p.direct(srv.URL)
	stale := &conn{Conn: failingConn{}, reused: true}
	stale.br = bufio.NewReader(stale)
	cs.idle = append(cs.idle, stale)
	writes := 0
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/x", nil)
	resp, err := cs.exchange(req, []byte(`{}`), func() { writes++ })
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" || requests.Load() != 1 || writes != 1 {
		t.Fatalf("answer %q, %d requests, written %d times; want ok, 1, 1", b, requests.Load(), writes)
	}

	for _, c := range cs.idle {
		c.Close()
	}
	cs.idle = nil
	cs.dial = func(context.Context, string, string) (net.Conn, error) { return failingConn{}, nil }
	if _, err := cs.exchange(req, []byte(`{}`), func() { writes++ }); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("a new connection's failed write: err = %v", err)
	}
	if requests.Load() != 1 || writes != 1 {
		t.Fatalf("%d requests, written %d times after a failed write", requests.Load(), writes)
	}
}

// Connections idle for idleFor are closed, without a call to close
// them.
func TestIdleConnectionsClosed(t *testing.T) {
	closed := make(chan struct{}, 2)
	addr := AcceptEach(t, func(c net.Conn) {
		c.Read(make([]byte, 1)) // returns when the pool closes it
		closed <- struct{}{}
	})
	cs := newConns(addr, addr)
	cs.idleFor = 50 * time.Millisecond
	for range 2 {
		c, err := cs.connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cs.put(c)
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 2 {
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 2 idle connections closed", i)
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if len(cs.idle) != 0 || cs.sweep != nil {
		t.Fatalf("%d idle connections kept, sweep %v", len(cs.idle), cs.sweep != nil)
	}
}

// AcceptEach serves each connection to a loopback listener with handle,
// in a goroutine of its own, until the test ends; it returns the
// listener's address. (Exported for the package's external tests.)
func AcceptEach(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return l.Addr().String()
}
