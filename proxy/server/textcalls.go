package server

import (
	"crypto/rand"
	"io"
	"sync"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// Tool calls a backend model wrote as text (issue 38): when the request
// offered tools and the route's tool_calls_in_text is not off, the
// backend's answer goes through translate's recovery in the backend's own
// format before the client's translator reads it, whatever the front, so
// one wiring serves them all (see translate/text_calls.go). Each recovered
// call counts in dragoman_text_tool_calls_total.

// textCalls puts resp's body, the backend's answer to x, through the
// recovery of the calls written as text, when there is any to do.
func (x *exchange) textCalls(resp *upstream.Response) {
	o := x.req.TextCallOptions()
	if o == nil {
		return
	}
	prefix := "call_"
	if x.route.Protocol == config.ProtocolMessages {
		prefix = "toolu_"
	}
	prefix += rand.Text()[:16] + "_"
	b := &textCallBody{in: resp.Body, count: func(f textcall.Family) { x.s.metrics.TextToolCall(x.alias, f) }}
	switch {
	case !x.req.Stream && x.route.Protocol == config.ProtocolMessages:
		b.whole = func(body []byte) ([]byte, []textcall.Family) { return translate.MessagesTextResponse(body, o, prefix) }
	case !x.req.Stream:
		b.whole = func(body []byte) ([]byte, []textcall.Family) { return translate.ChatTextResponse(body, o, prefix) }
	case x.route.Protocol == config.ProtocolMessages:
		b.stream = translate.NewMessagesTextCalls(o, prefix)
	default:
		b.stream = translate.NewChatTextCalls(o, prefix)
	}
	resp.Body = b
}

// textStream is a stream filter of package translate.
type textStream interface {
	Feed(dst, p []byte) ([]byte, error)
	Close(dst []byte) []byte
	Recovered() []textcall.Family
}

// textCallBody reads a backend's answer through a recovery: a stream
// filter fed as the answer comes (into the reader's own buffer: a slow
// stream holds no buffer of its own between reads), or, for a whole
// answer, a function of the body read whole.
type textCallBody struct {
	in     io.ReadCloser
	stream textStream
	whole  func([]byte) ([]byte, []textcall.Family)
	count  func(textcall.Family)

	out    []byte // filtered, not yet read
	pooled []byte // out's buffer, from bufpool
	err    error  // the error after out: io.EOF once the answer ended

	// mu guards the filter and counted: Close may come from another
	// goroutine while a Read is under way (drain's timer closes a body to
	// end the Read it waits in), and the backend's body is read outside
	// it, so that Close never waits for a Read.
	mu      sync.Mutex
	counted bool
}

func (b *textCallBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 && b.err == nil {
		b.fill(p)
	}
	if len(b.out) > 0 {
		n := copy(p, b.out)
		b.out = b.out[n:]
		if len(b.out) == 0 && b.pooled != nil {
			bufpool.Put(b.pooled)
			b.pooled = nil
		}
		return n, nil
	}
	return 0, b.err
}

// fill reads the next piece of the answer (into p, as scratch) and
// filters it into out.
func (b *textCallBody) fill(p []byte) {
	if b.whole != nil {
		body, err := io.ReadAll(b.in)
		if err != nil {
			b.out, b.err = body, err
			return
		}
		out, fams := b.whole(body)
		b.out, b.err = out, io.EOF
		b.mu.Lock()
		b.note(fams)
		b.mu.Unlock()
		return
	}
	n, err := b.in.Read(p)
	b.mu.Lock()
	out, ferr := b.stream.Feed(bufpool.Get(n+512), p[:n])
	switch {
	case ferr != nil:
		b.err = ferr
	case err == io.EOF:
		out = b.stream.Close(out)
		b.err = io.EOF
		b.note(b.stream.Recovered())
	case err != nil:
		b.err = err
	}
	b.mu.Unlock()
	if len(out) == 0 {
		bufpool.Put(out)
		out = nil
	}
	b.out, b.pooled = out, out
}

// note counts the calls recovered, once; b.mu is held.
func (b *textCallBody) note(fams []textcall.Family) {
	if b.counted {
		return
	}
	b.counted = true
	for _, f := range fams {
		b.count(f)
	}
}

// Close closes the backend's body; the calls a stream recovered before it
// broke off count. It may come while a Read waits for the backend: the
// body is closed first, which ends that Read.
func (b *textCallBody) Close() error {
	err := b.in.Close()
	if b.stream != nil {
		b.mu.Lock()
		b.note(b.stream.Recovered())
		b.mu.Unlock()
	}
	return err
}
