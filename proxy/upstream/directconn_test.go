package upstream

import (
	"bytes"
	"io"
	"net"
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

// The transport hands a directConn the rest of a body of Do behind an
// io.LimitedReader (after reading its first bytes into its write
// buffer): the rest goes in one write, from the body's own memory, and
// the body is let go when the transport reads its end.
func TestDirectConnWritesTheBodyWhole(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 10000)
	recycled := 0
	ref := &bodyRef{b: body, body: body, holds: 1, own: true, recycle: func([]byte) { recycled++ }}
	r, err := ref.reader()
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 4000)
	if n, _ := r.Read(head); n != len(head) {
		t.Fatalf("first read: %d bytes", n)
	}
	lr := &io.LimitedReader{R: r, N: int64(len(body) - len(head))}
	wc := &writeConn{}
	n, err := directConn{wc}.ReadFrom(lr)
	if err != nil || n != int64(len(body)-len(head)) || lr.N != 0 {
		t.Fatalf("ReadFrom: %d, %v; left %d", n, err, lr.N)
	}
	if len(wc.writes) != 1 || &wc.writes[0][0] != &body[len(head)] || len(wc.writes[0]) != len(body)-len(head) {
		t.Fatalf("%d writes; want one of the body's own last %d bytes", len(wc.writes), len(body)-len(head))
	}
	if recycled != 0 {
		t.Fatal("recycled before the transport read the body's end")
	}
	if n, err := r.Read(head); n != 0 || err != io.EOF {
		t.Fatalf("after the body: %d, %v; want EOF", n, err)
	}
	ref.over()
	r.Close()
	if recycled != 1 {
		t.Fatalf("recycled %d times, want once", recycled)
	}
}

// Any other reader is copied as before.
func TestDirectConnCopiesOtherReaders(t *testing.T) {
	wc := &writeConn{}
	n, err := directConn{wc}.ReadFrom(&io.LimitedReader{R: bytes.NewReader([]byte("hello")), N: 5})
	if err != nil || n != 5 || len(wc.writes) != 1 || string(wc.writes[0]) != "hello" {
		t.Fatalf("ReadFrom: %d, %v, writes %q", n, err, wc.writes)
	}
}
