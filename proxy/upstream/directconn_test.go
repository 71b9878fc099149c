package upstream

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
)

// writeConn records the writes it is given.
type writeConn struct {
	net.Conn
	writes [][]byte
}

func (c *writeConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, p)
	return len(p), nil
}

func (c *writeConn) all() string {
	var b strings.Builder
	for _, w := range c.writes {
		b.Write(w)
	}
	return b.String()
}

const testHead = "POST /v1/messages HTTP/1.1\r\nHost: b\r\nContent-Length: 100000\r\n\r\n"

// newTestBody returns a body of Do (100,000 bytes), its first reader, and
// a count of its recycling.
func newTestBody(t *testing.T) ([]byte, *bodyReader, *int) {
	body := bytes.Repeat([]byte("0123456789"), 10000)
	recycled := new(int)
	ref := &bodyRef{b: body, body: body, holds: 1, own: true, recycle: func([]byte) { *recycled++ }}
	r, err := ref.reader()
	if err != nil {
		t.Fatal(err)
	}
	return body, r, recycled
}

// The transport writes the head of a request whose body is a body of Do,
// then hands the connection the body behind an io.LimitedReader: the head
// waits, and goes with the whole body, which is written from its own
// memory; the body is let go when the transport reads its end.
func TestDirectConnWritesHeadAndBodyTogether(t *testing.T) {
	body, r, recycled := newTestBody(t)
	wc := &writeConn{}
	c := &directConn{Conn: wc}
	c.carry(r)
	head := []byte(testHead)
	if n, err := c.Write(head); n != len(head) || err != nil {
		t.Fatalf("Write(head): %d, %v", n, err)
	}
	copy(head, "XXXX") // the transport's buffer is its own again
	if len(wc.writes) != 0 {
		t.Fatalf("the head went alone: %q", wc.writes)
	}
	lr := &io.LimitedReader{R: r, N: int64(len(body))}
	n, err := c.ReadFrom(lr)
	if err != nil || n != int64(len(body)) || lr.N != 0 {
		t.Fatalf("ReadFrom: %d, %v; left %d", n, err, lr.N)
	}
	if got := wc.all(); got != testHead+string(body) {
		t.Fatalf("wrote %d bytes, want the head and the body (%d)", len(got), len(testHead)+len(body))
	}
	last := wc.writes[len(wc.writes)-1]
	if &last[0] != &body[0] || len(last) != len(body) {
		t.Fatal("the body was copied")
	}
	if *recycled != 0 {
		t.Fatal("recycled before the transport read the body's end")
	}
	if n, err := r.Read(make([]byte, 10)); n != 0 || err != io.EOF {
		t.Fatalf("after the body: %d, %v; want EOF", n, err)
	}
	r.ref.over()
	r.Close()
	if *recycled != 1 {
		t.Fatalf("recycled %d times, want once", *recycled)
	}
	// The next request on the connection carries no body of Do: its head
	// goes at once.
	c.carry(nil)
	c.Write([]byte(testHead))
	if got := wc.all(); !strings.HasSuffix(got, testHead) || len(got) != 2*len(testHead)+len(body) {
		t.Fatal("a head without a body of Do was held")
	}
}

// A head is held only while its body is unread, only when it ends the
// head and asks no 100 Continue; whatever comes next goes out after it.
func TestDirectConnHoldsOnlyWhatAWaitingBodyFollows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write string
		setup func(r *bodyReader)
		held  bool
	}{
		{"head", testHead, nil, true},
		{"part of a head", testHead[:20], nil, false},
		{"expects 100 Continue", strings.Replace(testHead, "\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n", 1), nil, false},
		{"body started", testHead, func(r *bodyReader) { r.Read(make([]byte, 10)) }, false},
		{"body closed", testHead, func(r *bodyReader) { r.Close() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := newTestBody(t)
			if tc.setup != nil {
				tc.setup(r)
			}
			wc := &writeConn{}
			c := &directConn{Conn: wc}
			c.carry(r)
			c.Write([]byte(tc.write))
			if held := len(wc.writes) == 0; held != tc.held {
				t.Fatalf("held %v, want %v", held, tc.held)
			}
			c.Write([]byte("next"))
			if got := wc.all(); got != tc.write+"next" {
				t.Fatalf("wrote %q", got)
			}
		})
	}
}

// A held head goes before a body from any other reader, which is copied.
func TestDirectConnCopiesOtherReaders(t *testing.T) {
	_, r, _ := newTestBody(t)
	wc := &writeConn{}
	c := &directConn{Conn: wc}
	c.carry(r)
	c.Write([]byte(testHead))
	n, err := c.ReadFrom(&io.LimitedReader{R: bytes.NewReader([]byte("hello")), N: 5})
	if err != nil || n != 5 || wc.all() != testHead+"hello" {
		t.Fatalf("ReadFrom: %d, %v, wrote %q", n, err, wc.all())
	}
}
