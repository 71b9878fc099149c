package server

import (
	"bytes"
	"io"
	"mime"
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/sse"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// Some servers answer an overflow with a 200 and an event stream whose
// first event is the error (LM Studio 0.4.21's data: {"error": …} chunk,
// lmstudio-bug-tracker#2322; llama.cpp's event: error). Once the proxy
// relays such a stream, the client has its 200 and can only be told of
// the failure in an error event, which coding clients do not read as an
// overflow: they do not compact, they stop. So the start of every event
// stream is read before anything is committed, up to its first content:
// an overflow there becomes the backend's status answer (400), and every
// path that maps one (a retry with a smaller max_tokens, the client's
// own words and status) applies as it does to a 400.

// startPeekLimit bounds what is read of a stream before its first
// content: a few events of no content (a role chunk, message_start,
// content_block_start, pings) come before it.
const (
	startPeekLimit  = 64 << 10
	startPeekEvents = 8
)

// streamStartError reads the start of a backend's event stream up to its
// first content (or startPeekEvents events, or startPeekLimit bytes): an
// error event there that is a context overflow is returned as the
// backend's 400. The answer's body is replaced by one that yields what
// was read, then the rest; an answer that is not an event stream is left
// alone.
func streamStartError(resp *upstream.Response) *upstream.Error {
	if !isEventStream(resp.Header) {
		return nil
	}
	var (
		dec    sse.Decoder
		peeked []byte // what was read, in a buffer of its own: the stream keeps it until relayed
		bufp   = readBuffers.Get().(*[]byte)
		buf    = *bufp
		events int
	)
	defer func() {
		readBuffers.Put(bufp)
		resp.Body = &replayBody{head: peeked, ReadCloser: resp.Body}
	}()
	for len(peeked) < startPeekLimit {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			peeked = append(peeked, buf[:n]...)
			if dec.Feed(buf[:n]) != nil {
				return nil
			}
			for {
				ev, ok := dec.Next()
				if !ok {
					break
				}
				status, body, verdict := startEvent(ev.Type, ev.Data)
				switch verdict {
				case startError:
					if _, ok := overflow.Detect(status, body); ok {
						return &upstream.Error{Kind: upstream.Status, Status: overflow.Status, Body: bytes.Clone(body)}
					}
					return nil
				case startContent:
					return nil
				}
				if events++; events >= startPeekEvents {
					return nil
				}
			}
		}
		if err != nil {
			return nil
		}
	}
	return nil
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// replayBody yields head, then the rest of the body.
type replayBody struct {
	head []byte
	io.ReadCloser
}

func (r *replayBody) Read(p []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(p, r.head)
		r.head = r.head[n:]
		if len(r.head) == 0 {
			r.head = nil // its memory goes, not kept for the stream's life
		}
		return n, nil
	}
	return r.ReadCloser.Read(p)
}

type startVerdict int

const (
	startNothing startVerdict = iota // no content yet: read on
	startContent                     // content, the end, or what is not known: relay
	startError                       // an error before any content
)

// startEvent says what one event at the start of a stream is: in the Chat
// format a chunk (content when a delta carries text, reasoning or tool
// calls, or a choice finishes) or a data: {"error": …} chunk; in the
// Messages format message_start, content_block_start and ping carry
// nothing, an error event is one. For an error it returns the status the
// error names (its code, when it is an HTTP status; else 400) and the
// body to read it from.
func startEvent(name string, data []byte) (int, []byte, startVerdict) {
	var ev struct {
		Type    string         `json:"type"`
		Object  string         `json:"object"`
		Error   jsontext.Value `json:"error"`
		Code    jsontext.Value `json:"code"`
		Choices []struct {
			Delta struct {
				Content          string         `json:"content"`
				Reasoning        string         `json:"reasoning"`
				ReasoningContent string         `json:"reasoning_content"`
				ToolCalls        jsontext.Value `json:"tool_calls"`
			} `json:"delta"`
			FinishReason jsontext.Value `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return 0, nil, startContent // [DONE], or not JSON: the relay says what it is
	}
	hasError := len(ev.Error) > 0 && ev.Error.Kind() != 'n'
	if hasError || name == "error" || ev.Type == "error" || ev.Object == "error" {
		status := 400
		code := ev.Code
		if hasError && ev.Error.Kind() == '{' {
			var inner struct {
				Code jsontext.Value `json:"code"`
			}
			_ = json.Unmarshal(ev.Error, &inner)
			code = inner.Code
		}
		var n int
		if json.Unmarshal(code, &n) == nil && n >= 400 && n < 600 {
			status = n
		}
		return status, data, startError
	}
	switch ev.Type {
	case "message_start", "content_block_start", "ping":
		return 0, nil, startNothing
	case "":
	default:
		return 0, nil, startContent
	}
	if len(ev.Choices) == 0 {
		return 0, nil, startNothing // a usage chunk, or one with no choices yet
	}
	for _, c := range ev.Choices {
		d := c.Delta
		if d.Content != "" || d.Reasoning != "" || d.ReasoningContent != "" || (len(d.ToolCalls) > 0 && d.ToolCalls.Kind() != 'n') ||
			(len(c.FinishReason) > 0 && c.FinishReason.Kind() != 'n') {
			return 0, nil, startContent
		}
	}
	return 0, nil, startNothing
}
