package server

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// corkConn holds what is written to a connection while it is corked, and
// writes it in one piece when it is released: the frames of one backend
// read (several events) leave in one write, as the SSE relay's one write
// of that read does, instead of one write and one wake-up of the client
// per frame (coder/websocket flushes every message).
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	held   []byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.corked {
		c.held = append(c.held, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// cork holds the writes from now on.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// release writes what was held, within wsWriteTimeout, and stops holding.
func (c *corkConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.held) == 0 {
		return nil
	}
	c.Conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	_, err := c.Conn.Write(c.held)
	c.Conn.SetWriteDeadline(time.Time{})
	c.held = c.held[:0]
	return err
}

// drop lets the buffer go: an idle connection keeps none.
func (c *corkConn) drop() {
	c.mu.Lock()
	if !c.corked {
		c.held = nil
	}
	c.mu.Unlock()
}

// corkingWriter is the upgrade's ResponseWriter, whose hijacked connection
// is a corkConn (conn, once hijacked).
type corkingWriter struct {
	http.ResponseWriter
	conn *corkConn
}

func (w *corkingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: nc}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, 4096)), nil
}
