package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/pgtest"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// forwarder relays a loopback port to another, and can stop (closing
// every connection it relays) and start again on the same port: a
// database that goes away and comes back.
type forwarder struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newForwarder(t *testing.T, target string) *forwarder {
	f := &forwarder{t: t, target: target}
	f.start()
	t.Cleanup(f.stop)
	return f
}

func (f *forwarder) start() {
	addr := f.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.ln, f.addr = ln, ln.Addr().String()
	f.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

func (f *forwarder) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		f.ln.Close()
		f.ln = nil
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// TestKeyStoreUnreachable: Postgres goes away. A key with limits gets 503
// in the caller's own format, "the key store is unreachable", without
// the driver's text (dial tcp, the database's address, its user); the
// log has the detail without the password. The master key and a key
// without limits are served meanwhile. Once the database is back, the
// key with limits is served again.
func TestKeyStoreUnreachable(t *testing.T) {
	pg := pgtest.New(t)
	host := strings.TrimPrefix(pg, "postgres://dragoman@")
	host = host[:strings.Index(host, "/")]
	f := newForwarder(t, host)
	const password = "pg-secret-password"
	url := strings.Replace(pg, "dragoman@"+host, "dragoman:"+password+"@"+f.addr, 1)
	c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
	g := newGate(t, url, c)
	h := newHarness(t, harnessOptions{gate: g})
	limited := createKey(t, g, keys.Spec{Name: "limited", TPM: 100000})
	free := createKey(t, g, keys.Spec{Name: "free"})
	for _, w := range wires {
		if status, _, _, body := call(t, h, w, limited, "local-model"); status != 200 {
			t.Fatalf("%s before: %d %s", w.path, status, body)
		}
	}
	f.stop()
	for _, w := range wires {
		status, retry, typ, body := call(t, h, w, limited, "local-model")
		wantType := "service_unavailable"
		if w.path == "/v1/messages" {
			wantType = "api_error"
		}
		if status != 503 || typ != wantType || retry == "" || !strings.Contains(body, "the key store is unreachable") {
			t.Errorf("%s store down: %d %q %s %s", w.path, status, retry, typ, body)
		}
		for _, leak := range []string{"dial", "failed to connect", f.addr, "user=", "dragoman", password} {
			if strings.Contains(body, leak) {
				t.Errorf("%s: the driver's text %q in the answer: %s", w.path, leak, body)
			}
		}
		if status, _, _, body := call(t, h, w, free, "local-model"); status != 200 {
			t.Errorf("%s key without limits, store down: %d %s", w.path, status, body)
		}
		resp, b := h.do(http.MethodPost, w.path, fmt.Sprintf(w.body, "local-model"), nil, false)
		if resp.StatusCode != 200 {
			t.Errorf("%s master key, store down: %d %s", w.path, resp.StatusCode, b)
		}
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "key store unreachable") || strings.Contains(logs, password) {
		t.Errorf("the log: want the detail without the password:\n%s", logs)
	}
	f.start()
	waitFor(t, func() bool {
		status, _, _, _ := call(t, h, wires[0], limited, "local-model")
		return status == 200
	})
	for _, w := range wires {
		if status, _, _, body := call(t, h, w, limited, "local-model"); status != 200 {
			t.Errorf("%s the store back: %d %s", w.path, status, body)
		}
	}
	g.Close(context.Background())
}
