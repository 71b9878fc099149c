package translate

// The events every stream writes alike: a server-sent event's head and
// end, the Messages error event, and the shape every stream's Fail shares.

import (
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// failOnce is the shape of every stream's Fail: start (Start, implied; nil
// for a stream without one) writes the opening events first, then end
// reports whether the stream was still open, marking it failed if so, and
// only then write appends the failure. After the end, and after a first
// failure, nothing more is appended.
func failOnce(dst []byte, start func([]byte) []byte, end func() bool, write func([]byte) []byte) []byte {
	if start != nil {
		dst = start(dst)
	}
	if !end() {
		return dst
	}
	return write(dst)
}

// failPhase is failOnce's end for a stream whose state is a streamPhase:
// open becomes failed; any other phase is already over.
func failPhase(p *streamPhase) func() bool {
	return func() bool {
		if *p != phaseOpen {
			return false
		}
		*p = phaseFailed
		return true
	}
}

// endOnce is failOnce's end for a stream whose end is one flag.
func endOnce(ended *bool) func() bool {
	return func() bool {
		if *ended {
			return false
		}
		*ended = true
		return true
	}
}

// appendEventHead begins the server-sent event name: "event: name\ndata: ".
func appendEventHead(dst []byte, name string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	return append(dst, "\ndata: "...)
}

func appendEventEnd(dst []byte) []byte { return append(dst, "\n\n"...) }

// appendErrorEvent appends an error event in the Messages error shape;
// errType "" is api_error.
func appendErrorEvent(dst []byte, errType, message string) []byte {
	if errType == "" {
		errType = messages.APIError
	}
	dst = appendEventHead(dst, messages.EventError)
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = jsonquote.Append(dst, errType)
	dst = append(dst, `,"message":`...)
	dst = jsonquote.Append(dst, message)
	dst = append(dst, `}}`...)
	return appendEventEnd(dst)
}
