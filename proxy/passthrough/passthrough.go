// Package passthrough forwards a Chat Completions request body while it
// arrives: it reads the body only as far as its top-level "model" member,
// then hands out what it has read, with model rewritten in place, and the
// rest as it comes, validating it on the way with a streaming JSON
// tokenizer (jsontext.Decoder), one top-level member or one message at a
// time.
//
// The validation is what translate.ChatToChat does for a pass-through:
// an object; model a string; messages a non-empty array of objects whose
// role is a string; stream a boolean or null; max_tokens and
// max_completion_tokens whole numbers of at least 1, or null; well-formed
// JSON, no duplicate member, nothing after the object. Errors are
// *translate.RequestError.
//
// The last byte of the body is withheld until the whole body is
// validated: a reader of Body never sees a complete body that is
// malformed; on a malformation its Read returns the error, and an HTTP
// transport reading it abandons the request.
//
// What was read is kept until Release, so that another attempt (a retry
// at another backend, the transport's retry on a stale connection) can
// send the body again from its start; after Release only the bytes the
// current reader has not yet handed out are held.
package passthrough

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// Request is a body being read: Start has read it up to model.
type Request struct {
	Model string // the model the client asked for

	contentLength int64
	start, end    int64 // model's value: [start, end) in the body

	mu      sync.Mutex
	src     io.Reader // the client's body
	dec     *jsontext.Decoder
	buf     []byte // what was read from the client, from offset base on
	base    int64
	reader  int // the current Body reader's number; older ones are cut off
	whole   bool
	inMsgs  bool // in the messages array
	msgs    int  // messages read
	hasMsgs bool // the messages member was read
	// keep: what was read stays for another attempt (until Release).
	keep atomic.Bool

	state     sync.Mutex // guards what follows, read while mu may be held by a reader
	done      bool       // the body ended and is valid
	err       error      // the body is malformed (a *translate.RequestError) or unreadable
	stream    bool
	maxTokens [2]int // max_tokens, max_completion_tokens (0: none or null)
}

// source is the decoder's reader: what it reads is also kept, to be
// handed out.
type source struct{ r *Request }

func (s source) Read(p []byte) (int, error) {
	r := s.r
	n, err := r.src.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

func invalid(format string, args ...any) error {
	return &translate.RequestError{Msg: fmt.Sprintf(format, args...)}
}

// readErr words an error of the decoder or the reader: a malformation is a
// RequestError; a read error (a client gone, a body over its limit) is
// returned as it is.
func readErr(err error) error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return invalid("malformed JSON: %v", se.Err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return invalid("malformed JSON: unexpected end of input")
	}
	return err
}

// SmallBody is the length up to which Start reads and validates a body
// whole before anything is sent: forwarding a small body while it arrives
// gains nothing, and a malformed one then never reaches a backend.
const SmallBody = 16 << 10

// Start reads body, contentLength bytes long (-1: unknown), until its
// top-level model member has been read; a body of at most SmallBody bytes
// it reads and validates whole. The error is a *translate.RequestError
// when the body is malformed or has no model string, or the reader's own
// error.
func Start(body io.Reader, contentLength int64) (*Request, error) {
	r := &Request{src: body, contentLength: contentLength}
	r.keep.Store(true)
	r.dec = jsontext.NewDecoder(source{r})
	if err := r.toModel(); err != nil {
		return nil, err
	}
	if contentLength >= 0 && contentLength <= SmallBody {
		r.mu.Lock()
		defer r.mu.Unlock()
		for !r.step() {
		}
		if err := r.Err(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Request) toModel() error {
	tok, err := r.dec.ReadToken()
	if err == io.EOF && len(r.buf) == 0 {
		return invalid("the request body is empty: send a JSON object")
	}
	if err != nil {
		return readErr(err)
	}
	if tok.Kind() != '{' {
		return invalid("the body must be a JSON object")
	}
	for {
		if r.dec.PeekKind() == '}' {
			// The end, and no model.
			if _, err := r.dec.ReadToken(); err != nil {
				return readErr(err)
			}
			return invalid("model: required (a string naming a configured model)")
		}
		name, err := r.dec.ReadToken()
		if err != nil {
			return readErr(err)
		}
		if name.String() != "model" {
			if err := r.topMember(name.String()); err != nil {
				return err
			}
			for r.inMsgs {
				if err := r.message(); err != nil {
					return err
				}
			}
			continue
		}
		v, err := r.dec.ReadValue()
		if err != nil {
			return readErr(err)
		}
		if v.Kind() != '"' || json.Unmarshal(v, &r.Model) != nil || r.Model == "" {
			return invalid("model: required (a string naming a configured model)")
		}
		r.end = r.dec.InputOffset()
		r.start = r.end - int64(len(v))
		return nil
	}
}

// topMember reads the value of a top-level member other than model,
// checking the members ChatToChat checks; of messages it reads only the
// opening bracket (message reads each element).
func (r *Request) topMember(name string) error {
	switch name {
	case "stream":
		v, err := r.dec.ReadValue()
		if err != nil {
			return readErr(err)
		}
		switch v.Kind() {
		case 't':
			r.setState(func() { r.stream = true })
		case 'f', 'n':
		default:
			return invalid("stream: must be a boolean, got %s", translate.KindName(v.Kind()))
		}
	case "max_tokens", "max_completion_tokens":
		v, err := r.dec.ReadValue()
		if err != nil {
			return readErr(err)
		}
		switch v.Kind() {
		case 'n':
		case '0':
			n, err := strconv.ParseFloat(string(v), 64)
			switch {
			case err != nil:
				return invalid("%s: must be a number", name)
			case n != math.Trunc(n):
				return invalid("%s: must be a whole number of tokens, got %s", name, v)
			case n < 1:
				return invalid("%s: must be at least 1, got %s", name, v)
			}
			i := 0
			if name == "max_completion_tokens" {
				i = 1
			}
			r.setState(func() { r.maxTokens[i] = int(min(n, 1<<31)) })
		default:
			return invalid("%s: must be a number, got %s", name, translate.KindName(v.Kind()))
		}
	case "messages":
		if k := r.dec.PeekKind(); k != '[' {
			if err := r.dec.SkipValue(); err != nil {
				return readErr(err)
			}
			return invalid("messages: required (an array of messages)")
		}
		if _, err := r.dec.ReadToken(); err != nil {
			return readErr(err)
		}
		r.inMsgs, r.hasMsgs = true, true
	default:
		if err := r.dec.SkipValue(); err != nil {
			return readErr(err)
		}
	}
	return nil
}

// message reads one element of the messages array, or its end.
func (r *Request) message() error {
	i := r.msgs
	switch r.dec.PeekKind() {
	case ']':
		if _, err := r.dec.ReadToken(); err != nil {
			return readErr(err)
		}
		if i == 0 {
			return invalid("messages: must not be empty")
		}
		r.inMsgs = false
		return nil
	case '{':
	default:
		if err := r.dec.SkipValue(); err != nil {
			return readErr(err)
		}
		return invalid("messages.%d: must be an object", i)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return readErr(err)
	}
	for r.dec.PeekKind() != '}' {
		name, err := r.dec.ReadToken()
		if err != nil {
			return readErr(err)
		}
		if name.String() == "role" {
			v, err := r.dec.ReadValue()
			if err != nil {
				return readErr(err)
			}
			if v.Kind() != '"' {
				return invalid("messages.%d.role: must be a string", i)
			}
			continue
		}
		if err := r.dec.SkipValue(); err != nil {
			return readErr(err)
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return readErr(err)
	}
	r.msgs++
	return nil
}

// step reads one more message, top-level member, or the end, and reports
// whether the body is over (valid or not); r.mu is held.
func (r *Request) step() bool {
	if r.dec == nil {
		return true
	}
	err := r.next()
	if err == nil && !r.isDone() {
		return false
	}
	if err != nil {
		r.setState(func() { r.err = err })
	}
	r.dec = nil // its buffer goes
	return true
}

func (r *Request) next() error {
	if r.inMsgs {
		return r.message()
	}
	if r.dec.PeekKind() != '}' {
		name, err := r.dec.ReadToken()
		if err != nil {
			return readErr(err)
		}
		return r.topMember(name.String())
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return readErr(err)
	}
	// Nothing may follow the object.
	switch _, err := r.dec.ReadToken(); {
	case err == nil:
		return invalid("malformed JSON: data after the top-level object")
	case err != io.EOF:
		return readErr(err)
	case !r.hasMsgs:
		return invalid("messages: required (an array of messages)")
	}
	r.setState(func() { r.done = true })
	return nil
}

func (r *Request) setState(f func()) {
	r.state.Lock()
	f()
	r.state.Unlock()
}

func (r *Request) isDone() bool {
	r.state.Lock()
	defer r.state.Unlock()
	return r.done
}

// Whole reads the rest of the body and returns all of it, as the client
// sent it: for a request that must be translated whole
// (translate.ChatToChat). It cuts off the readers of Body, and is not to
// be called after Release.
func (r *Request) Whole() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.whole, r.dec = true, nil
	if r.base != 0 {
		return nil, errors.New("passthrough: Whole after Release")
	}
	for {
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, 0)[:len(r.buf)]
		}
		n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if err == io.EOF {
			b := r.buf
			r.buf = nil
			return b, nil
		}
		if err != nil {
			r.setState(func() { r.err = err })
			return nil, err
		}
	}
}

// Size is the length of the body Body hands out for backendModel, -1 when
// the client did not say its length.
func (r *Request) Size(backendModel string) int64 {
	if r.contentLength < 0 {
		return -1
	}
	q, _ := jsontext.AppendQuote(nil, backendModel)
	return r.contentLength - (r.end - r.start) + int64(len(q))
}

// errSuperseded is what a reader of Body returns once another was asked
// for: its attempt is over.
var errSuperseded = errors.New("passthrough: the body is being sent by another attempt")

// Body returns a reader of the body from its start, with model's value
// replaced by backendModel: it hands out what was read and reads (and
// validates) the rest as it is read. A reader returned earlier fails from
// then on. After Release, Body returns a reader that fails.
func (r *Request) Body(backendModel string) io.Reader {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reader++
	q, _ := jsontext.AppendQuote(nil, backendModel)
	if r.base != 0 || r.whole {
		return &bodyReader{r: r, id: -1}
	}
	return &bodyReader{r: r, id: r.reader, q: q}
}

// Release ends the keeping of what was read: no other attempt will send
// the body (the backend's answer came). The current reader goes on; what
// it has handed out is let go.
func (r *Request) Release() { r.keep.Store(false) }

type bodyReader struct {
	r   *Request
	id  int
	q   []byte // the backend model, quoted
	off int64  // the next byte of the client's body to hand out
	qat int    // how much of q was handed out
}

func (b *bodyReader) Read(p []byte) (int, error) {
	r := b.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if b.id != r.reader || r.whole {
		return 0, errSuperseded
	}
	for {
		if b.off == r.start && b.qat < len(b.q) {
			n := copy(p, b.q[b.qat:])
			b.qat += n
			if b.qat == len(b.q) {
				b.off = r.end
			}
			return n, nil
		}
		// The last byte waits for the end of the validation.
		avail := r.base + int64(len(r.buf))
		if !r.isDone() {
			avail--
		}
		if b.off < r.start {
			avail = min(avail, r.start)
		}
		if b.off < avail {
			n := copy(p, r.buf[b.off-r.base:avail-r.base])
			b.off += int64(n)
			r.trim(b.off)
			return n, nil
		}
		if err := r.Err(); err != nil {
			return 0, err
		}
		if r.isDone() {
			return 0, io.EOF
		}
		r.step()
	}
}

// trim lets go of what the current reader has handed out, once nothing
// else will read it (after Release); r.mu is held.
func (r *Request) trim(off int64) {
	if r.keep.Load() {
		return
	}
	gone := int(off - r.base)
	if gone < len(r.buf)/2 && gone < 64<<10 {
		return // the copy below waits until it is worth it
	}
	n := copy(r.buf, r.buf[gone:])
	r.buf = r.buf[:n]
	r.base = off
	if n == 0 && cap(r.buf) > 64<<10 {
		r.buf = nil
	}
}

// Err is the body's malformation or read error once a reader met one; nil
// while the body is fine so far.
func (r *Request) Err() error {
	r.state.Lock()
	defer r.state.Unlock()
	return r.err
}

// Finished says whether the whole body was read and found valid, and then
// its stream flag and max_tokens (0: none).
func (r *Request) Finished() (done, stream bool, maxTokens int) {
	r.state.Lock()
	defer r.state.Unlock()
	// ChatToChat's: max_completion_tokens when set, else max_tokens.
	maxTokens = r.maxTokens[0]
	if r.maxTokens[1] != 0 {
		maxTokens = r.maxTokens[1]
	}
	return r.done, r.stream, maxTokens
}
