package translate

import (
	"bytes"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/sse"
)

// MessagesOnMessagesStream relays the Messages stream of a backend that serves the
// format itself to a Messages client. It rewrites the model of
// message_start's message to the alias the client asked for and passes
// every other byte as it came. It hands out whole events only (the lines
// of an event and the blank line that ends it), so the caller may write a
// ping between any two of its outputs. A MessagesOnMessagesStream is not safe for
// concurrent use.
//
//	open ──Feed: message_stop or error event──▶ done (Feed appends nothing more)
//	open ──EOF──▶ the caller asks Ended: false means the stream broke off, and
//	              Fail appends the error event that ends it for the client.
type MessagesOnMessagesStream struct {
	alias   []byte // the alias as a JSON string
	lines   lineFeeder
	event   []byte // the lines of the event so far
	name    []byte // the event's type, from its event: line
	done    bool
	stopped bool // message_stop came
	skip    bool // leave out the backend's message_start
	drop    bool // the event being read is left out
	err     *BackendError
	usage   messages.Usage
	counted bool // a usage came
}

// NewMessagesOnMessagesStream returns the relay of one Messages stream whose
// message_start names the model alias.
func NewMessagesOnMessagesStream(alias string) *MessagesOnMessagesStream {
	return &MessagesOnMessagesStream{alias: jsonquote.Append(nil, alias)}
}

// SkipStart makes the relay leave out the backend's message_start: the
// caller already sent one of its own. Its usage still counts
// (BackendUsage).
func (n *MessagesOnMessagesStream) SkipStart() { n.skip = true }

// Done reports whether the backend's stream ended (message_stop or an
// error event): the caller may stop reading.
func (n *MessagesOnMessagesStream) Done() bool { return n.done }

// Ended reports whether the stream ended with message_stop.
func (n *MessagesOnMessagesStream) Ended() bool { return n.stopped }

// BackendUsage returns the usage of message_start and message_delta so
// far, in the Chat form (ChatUsage); nil when none came.
func (n *MessagesOnMessagesStream) BackendUsage() *chat.Usage {
	if !n.counted {
		return nil
	}
	return ChatUsage(n.usage)
}

// BackendErr returns the error event the backend sent, which Feed relayed
// as it was, or nil; for the caller's logs.
func (n *MessagesOnMessagesStream) BackendErr() *BackendError { return n.err }

var (
	eventField       = []byte("event:")
	messageStartName = []byte(messages.EventMessageStart)
	messageStopName  = []byte(messages.EventMessageStop)
	messageDeltaName = []byte(messages.EventMessageDelta)
	errorEventName   = []byte(messages.EventError)
)

// Feed relays raw backend bytes, split anywhere: it appends to dst every
// event p completes. It fails only when an event outgrows
// sse.DefaultMaxEventSize, and then keeps failing.
func (n *MessagesOnMessagesStream) Feed(dst, p []byte) ([]byte, error) {
	if n.done {
		return dst, nil
	}
	dst, err := n.lines.feed(dst, p, n)
	if err == nil && len(n.event) > sse.DefaultMaxEventSize {
		err = sse.ErrEventTooLarge
	}
	return dst, err
}

// line takes one line and its ending; a blank line ends the event.
func (n *MessagesOnMessagesStream) line(dst, line, ending []byte) []byte {
	if n.done {
		return dst
	}
	if len(line) == 0 {
		if !n.drop {
			dst = append(append(dst, n.event...), ending...)
		}
		n.event, n.name, n.drop = n.event[:0], n.name[:0], false
		n.done = n.stopped || n.err != nil
		return dst
	}
	if n.drop {
		if payload, ok := bytes.CutPrefix(line, dataField); ok && bytes.Equal(n.name, messageStartName) {
			n.noteUsage(bytes.TrimPrefix(payload, []byte{' '})) // left out, but its input tokens count
		}
		return dst
	}
	if v, ok := bytes.CutPrefix(line, eventField); ok {
		n.name = append(n.name[:0], bytes.TrimSpace(v)...)
		if bytes.Equal(n.name, messageStopName) {
			n.stopped = true
		}
		if n.skip && bytes.Equal(n.name, messageStartName) {
			n.skip, n.drop = false, true
			n.event = n.event[:0]
			return dst
		}
	} else if payload, ok := bytes.CutPrefix(line, dataField); ok {
		payload = bytes.TrimPrefix(payload, []byte{' '})
		switch {
		case bytes.Equal(n.name, messageStartName) || len(n.name) == 0 && bytes.Contains(payload, messageStartName):
			n.noteUsage(payload)
			if out, ok := n.startModel(payload); ok {
				at := len(line) - len(payload)
				n.event = append(n.event, line[:at]...)
				n.event = append(append(n.event, out...), ending...)
				return dst
			}
		case bytes.Equal(n.name, messageDeltaName):
			n.noteUsage(payload)
		case bytes.Equal(n.name, errorEventName):
			if e := parseBackendError(payload); e != nil {
				n.err = e
				if !isMessagesError(payload) {
					// Not the Messages error shape (llama-server's
					// {"code","message","type"}): a client's SDK cannot
					// read it, so it goes out in that shape.
					n.drop = true
					return appendErrorEvent(dst, messagesErrorType(e), e.Message)
				}
			}
		}
	}
	n.event = append(append(n.event, line...), ending...)
	return dst
}

// noteUsage takes the usage of a message_start (message.usage) or a
// message_delta (usage: the counts it names replace those so far).
func (n *MessagesOnMessagesStream) noteUsage(data []byte) {
	var ev struct {
		Message *struct {
			Usage *messages.Usage `json:"usage"`
		} `json:"message"`
		Usage *usageDelta `json:"usage"`
	}
	if json.Unmarshal(data, &ev, decodeOpts) != nil {
		return
	}
	if ev.Message != nil && ev.Message.Usage != nil {
		n.usage, n.counted = *ev.Message.Usage, true
	}
	if ev.Usage != nil {
		ev.Usage.applyTo(&n.usage)
		n.counted = true
	}
}

// startModel rewrites message.model in the data of a message_start event;
// ok is false when the data is not such an event.
func (n *MessagesOnMessagesStream) startModel(data []byte) ([]byte, bool) {
	top, err := scanObject(data, false, func(name []byte) bool { return string(name) == "type" || string(name) == "message" })
	if err != nil {
		return nil, false
	}
	typ, ok := top.get("type")
	msg, ok2 := top.get("message")
	if !ok || !ok2 || !bytes.Equal(typ.value, []byte(`"message_start"`)) || msg.value.Kind() != '{' {
		return nil, false
	}
	inner, err := scanObject(msg.value, false, func(name []byte) bool { return string(name) == "model" })
	if err != nil {
		return nil, false
	}
	var e edit
	if m, ok := inner.get("model"); ok {
		e = edit{msg.start + m.start, msg.start + m.end, n.alias}
	} else {
		ins := append(append([]byte(`"model":`), n.alias...), ',')
		if inner.members == 0 {
			ins = ins[:len(ins)-1]
		}
		at := msg.start + inner.open + 1
		e = edit{at, at, ins}
	}
	out := splice(data, []edit{e})
	return out, true
}

// isMessagesError says whether an error event's data is in the Messages
// error shape: {"type":"error","error":{"type","message"}}.
func isMessagesError(data []byte) bool {
	var e struct {
		Type  string              `json:"type"`
		Error *messages.ErrorBody `json:"error"`
	}
	return json.Unmarshal(data, &e, decodeOpts) == nil && e.Type == "error" && e.Error != nil && e.Error.Type != "" && e.Error.Message != ""
}

// messagesErrorType is the Messages error type of a backend's error in
// another shape, from the type it named: a server's own types (llama.cpp's
// server_error, exceed_context_size_error…) are the Messages format's
// api_error, invalid_request_error or overloaded_error by what they say.
func messagesErrorType(e *BackendError) string {
	switch e.Type {
	case messages.InvalidRequestError, messages.AuthenticationError, messages.NotFoundError,
		messages.RateLimitError, messages.OverloadedError, messages.APIError:
		return e.Type
	case "exceed_context_size_error", "not_supported_error":
		return messages.InvalidRequestError
	case "unavailable_error":
		return messages.OverloadedError
	}
	return messages.APIError
}

// Fail appends an error event in the Messages error shape, for a stream
// that broke off (Ended is false). After Done it appends nothing.
func (n *MessagesOnMessagesStream) Fail(dst []byte, errType, message string) []byte {
	return failOnce(dst, nil, endOnce(&n.done), func(dst []byte) []byte { return appendErrorEvent(dst, errType, message) })
}
