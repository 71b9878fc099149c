package translate

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/sse"
)

// ChatOnChatStream relays a backend's Chat stream to a Chat client. It rewrites
// the top-level "model" of each chunk to the alias the client asked for
// and passes every other byte as it came: line endings, comments, [DONE],
// error chunks. It works line by line, so a line split across reads is
// held until it is whole. A chunk whose JSON spans several data lines, or
// that is not valid JSON, passes unchanged. A ChatOnChatStream is not safe for
// concurrent use.
type ChatOnChatStream struct {
	alias []byte // the alias as a JSON string
	lines lineFeeder
	done  bool
	err   *BackendError
	usage *chat.Usage

	jbuf bytes.Buffer // a chunk's JSON, for dec to read in place
	dec  jsontext.Decoder
}

// NewChatOnChatStream returns the relay of one Chat stream whose chunks name
// the model alias.
func NewChatOnChatStream(alias string) *ChatOnChatStream {
	return &ChatOnChatStream{alias: jsonquote.Append(nil, alias)}
}

// Done reports whether the backend sent [DONE]: the caller may stop
// reading.
func (c *ChatOnChatStream) Done() bool { return c.done }

// BackendErr returns the last error chunk the backend sent, which Feed
// relayed as it was, or nil; for the caller's logs and metrics.
func (c *ChatOnChatStream) BackendErr() *BackendError { return c.err }

// Usage returns the usage the backend reported in its last chunk, nil when
// it sent none.
func (c *ChatOnChatStream) Usage() *chat.Usage { return c.usage }

// Feed relays raw backend bytes, split anywhere: it appends to dst every
// line p completes. It fails only when a line outgrows
// sse.DefaultMaxEventSize, and then keeps failing.
func (c *ChatOnChatStream) Feed(dst, p []byte) ([]byte, error) {
	return c.lines.feed(dst, p, c)
}

// lineSink takes the lines a lineFeeder cuts.
type lineSink interface {
	// line takes one line, without its ending, and the ending.
	line(dst, line, ending []byte) []byte
}

// lineFeeder cuts a stream's bytes, split anywhere, into whole lines.
type lineFeeder struct {
	buf []byte // the start of a line whose end has not come
}

// feed hands sink every line p completes. It fails when a line outgrows
// sse.DefaultMaxEventSize, and then keeps failing.
func (f *lineFeeder) feed(dst, p []byte, sink lineSink) ([]byte, error) {
	if len(f.buf) > sse.DefaultMaxEventSize {
		return dst, sse.ErrEventTooLarge
	}
	in := p
	if len(f.buf) > 0 {
		f.buf = append(f.buf, p...)
		in = f.buf
	}
	for {
		line, n, ok := sse.CutLine(in)
		if !ok {
			break
		}
		dst = sink.line(dst, line, in[len(line):n])
		in = in[n:]
	}
	// A '\r' at the end of p ended its line; a '\n' coming next is an empty
	// line of its own, relayed as it is, so the bytes stay the same.
	f.buf = append(f.buf[:0], in...)
	if len(f.buf) > sse.DefaultMaxEventSize {
		return dst, sse.ErrEventTooLarge
	}
	return dst, nil
}

var dataField = []byte("data:")

// line relays one line and its ending.
func (c *ChatOnChatStream) line(dst, line, ending []byte) []byte {
	payload, ok := bytes.CutPrefix(line, dataField)
	if !ok {
		return append(append(dst, line...), ending...)
	}
	payload = bytes.TrimPrefix(payload, []byte{' '})
	if bytes.Equal(payload, doneData) {
		c.done = true
	}
	start, end := c.modelValue(payload)
	if start < 0 {
		return append(append(dst, line...), ending...)
	}
	at := len(line) - len(payload)
	dst = append(dst, line[:at+start]...)
	dst = append(dst, c.alias...)
	dst = append(dst, line[at+end:]...)
	return append(dst, ending...)
}

var (
	modelName = []byte(`"model"`)
	errorName = []byte(`"error"`)
	usageName = []byte(`"usage"`)
)

// modelValue finds the value of the top-level "model" member of a JSON
// object; start is -1 when there is none. On the way it notes a top-level
// "error" member and a "usage" one.
func (c *ChatOnChatStream) modelValue(obj []byte) (start, end int) {
	start = -1
	if len(obj) == 0 || obj[0] != '{' {
		return start, 0
	}
	c.jbuf.Reset()
	c.jbuf.Write(obj)
	c.dec.Reset(&c.jbuf, jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if tok, err := c.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return -1, 0
	}
	for c.dec.PeekKind() == '"' {
		name, err := c.dec.ReadValue()
		if err != nil {
			return -1, 0
		}
		isModel, isError, isUsage := bytes.Equal(name, modelName), bytes.Equal(name, errorName), bytes.Equal(name, usageName)
		value, err := c.dec.ReadValue()
		if err != nil {
			return -1, 0
		}
		switch {
		case isModel:
			end = int(c.dec.InputOffset())
			start = end - len(value)
		case isError:
			if e := parseBackendError(obj); e != nil {
				c.err = e
			}
		case isUsage:
			if u := chat.UsageOf(value); u != nil {
				c.usage = u
			}
		}
	}
	if tok, err := c.dec.ReadToken(); err != nil || tok.Kind() != '}' ||
		len(bytes.TrimSpace(obj[c.dec.InputOffset():])) > 0 {
		return -1, 0 // not one whole object: leave it alone
	}
	return start, end
}
