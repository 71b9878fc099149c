package translate

import (
	"bytes"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/sse"
)

// MessagesToMessages prepares a Messages request for a backend that serves
// the Messages format itself (a vendora/ route). Every byte of the body
// reaches the backend as the client sent it, except:
//   - model becomes Target.BackendModel;
//   - max_tokens is clamped to Target.MaxOutputTokens when that is set;
//   - the client's billing-header block at the head of the system prompt is
//     removed, by the rule of the translated path (isBillingBlock); a
//     system prompt that held nothing else goes whole;
//   - the top-level members named in Target.DropParams are removed.
//
// The body is validated as JSON; what the Messages format asks of it
// beyond model is the backend's to judge. BackendRequest.Stream is the
// request's stream flag.
func MessagesToMessages(body []byte, resolve Resolver) (BackendRequest, error) {
	top, err := scanObject(body, false, nil)
	if err != nil {
		return BackendRequest{}, err
	}
	target, stream, rename, err := passThroughTarget(top, resolve)
	if err != nil {
		return BackendRequest{}, err
	}
	edits := []edit{rename}
	if v, ok := top.get("max_tokens"); ok && target.MaxOutputTokens > 0 && v.value.Kind() == '0' {
		if n, err := strconv.ParseFloat(string(v.value), 64); err == nil && n > float64(target.MaxOutputTokens) {
			edits = append(edits, edit{v.start, v.end, strconv.AppendInt(nil, int64(target.MaxOutputTokens), 10)})
		}
	}
	var names []string
	if target.DropParams != "" {
		names = strings.Split(target.DropParams, ",")
	}
	drop := make([]bool, len(top.list))
	for i, mem := range top.list {
		drop[i] = slices.Contains(names, mem.name)
	}
	if sys, ok := top.get("system"); ok && sys.value.Kind() == '[' {
		i := slices.IndexFunc(top.list, func(mem member) bool { return mem.start == sys.start })
		if !drop[i] {
			start, end, only, found := billingElement(sys.value)
			switch {
			case found && only:
				drop[i] = true
			case found:
				edits = append(edits, edit{sys.start + start, sys.start + end, nil})
			}
		}
	}
	edits = append(edits, memberDeletions(top.list, drop)...)
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	return BackendRequest{Body: splice(body, edits), Target: target, Stream: stream}, nil
}

// RequestModel returns the model of a request body without reading the
// rest of it: the value of the first top-level "model" member when it is
// a string, or "". It is a quick look for routing; the translation reads
// the whole body (and the last "model", should there be several).
func RequestModel(body []byte) string {
	sc := scanner{b: body}
	if sc.ws() != '{' {
		return ""
	}
	sc.i++
	sc.depth = 1
	for sc.ws() == '"' {
		raw, err := sc.value()
		if err != nil || sc.expect(':') != nil {
			return ""
		}
		v, err := sc.value()
		if err != nil {
			return ""
		}
		if string(raw) == `"model"` {
			var model string
			if jsontext.Value(v).Kind() == '"' && json.Unmarshal(v, &model) == nil {
				return model
			}
			return ""
		}
		if sc.ws() != ',' {
			return ""
		}
		sc.i++
	}
	return ""
}

// passThroughTarget reads what a pass-through reads first of a scanned
// request: its model, resolved to a Target, and its stream flag; rename is
// the edit that puts Target.BackendModel in place of the client's model.
func passThroughTarget(top object, resolve Resolver) (target Target, stream bool, rename edit, err error) {
	model, m, err := requestModel(top)
	if err != nil {
		return Target{}, false, edit{}, err
	}
	if stream, err = streamFlag(top); err != nil {
		return Target{}, false, edit{}, err
	}
	if target, err = resolveTarget(resolve, model); err != nil {
		return Target{}, false, edit{}, err
	}
	q, _ := jsontext.AppendQuote(nil, target.BackendModel)
	return target, stream, edit{m.start, m.end, q}, nil
}

// requestModel reads the model member of a scanned request: its value, a
// non-empty string, and the member.
func requestModel(top object) (string, member, error) {
	var model string
	m, ok := top.get("model")
	if ok && m.value.Kind() == '"' {
		_ = json.Unmarshal(m.value, &model)
	}
	if model == "" {
		return "", m, invalidf("model: required (a string naming a configured model)")
	}
	return model, m, nil
}

// streamFlag reads the stream member of a scanned request.
func streamFlag(top object) (bool, error) {
	s, ok := top.get("stream")
	if !ok {
		return false, nil
	}
	switch s.value.Kind() {
	case 't':
		return true, nil
	case 'f', 'n':
		return false, nil
	}
	return false, invalidf("stream: must be a boolean, got %s", kindName(s.value.Kind()))
}

// billingElement finds the billing-header block at the head of a system
// array (valid JSON): the bytes [start, end) to cut, its separator
// included, and whether it is the array's only element.
func billingElement(list []byte) (start, end int, only, found bool) {
	sc := scanner{b: list, i: 1}
	sc.ws()
	start = sc.i
	raw, err := sc.value()
	if err != nil || len(raw) == 0 || raw[0] != '{' {
		return 0, 0, false, false
	}
	var blk messages.Block
	if json.Unmarshal(raw, &blk, decodeOpts, aliasRaw) != nil || !isBillingBlock(0, &blk) {
		return 0, 0, false, false
	}
	end = sc.i
	if sc.ws() != ',' {
		return start, end, true, true
	}
	sc.i++
	sc.ws()
	return start, sc.i, false, true
}

// memberDeletions returns the edits that remove the members of list marked
// in drop, with the commas between them, so the object stays valid JSON: a
// run of removed members goes up to the name of the member after it, or,
// at the end of the object, from the end of the member before it.
func memberDeletions(list []member, drop []bool) []edit {
	var edits []edit
	for i := 0; i < len(list); {
		if !drop[i] {
			i++
			continue
		}
		j := i
		for j+1 < len(list) && drop[j+1] {
			j++
		}
		switch {
		case j+1 < len(list):
			edits = append(edits, edit{list[i].keyStart, list[j+1].keyStart, nil})
		case i > 0:
			edits = append(edits, edit{list[i-1].end, list[j].end, nil})
		default:
			edits = append(edits, edit{list[i].keyStart, list[j].end, nil})
		}
		i = j + 1
	}
	return edits
}

// NativeStream relays the Messages stream of a backend that serves the
// format itself to a Messages client. It rewrites the model of
// message_start's message to the alias the client asked for and passes
// every other byte as it came. It hands out whole events only (the lines
// of an event and the blank line that ends it), so the caller may write a
// ping between any two of its outputs. A NativeStream is not safe for
// concurrent use.
//
//	open ──Feed: message_stop or error event──▶ done (Feed appends nothing more)
//	open ──EOF──▶ the caller asks Ended: false means the stream broke off, and
//	              Fail appends the error event that ends it for the client.
type NativeStream struct {
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

// NewNativeStream returns the relay of one Messages stream whose
// message_start names the model alias.
func NewNativeStream(alias string) *NativeStream {
	return &NativeStream{alias: appendQuoted(nil, alias)}
}

// SkipStart makes the relay leave out the backend's message_start: the
// caller already sent one of its own. Its usage still counts
// (BackendUsage).
func (n *NativeStream) SkipStart() { n.skip = true }

// Done reports whether the backend's stream ended (message_stop or an
// error event): the caller may stop reading.
func (n *NativeStream) Done() bool { return n.done }

// Ended reports whether the stream ended with message_stop.
func (n *NativeStream) Ended() bool { return n.stopped }

// BackendUsage returns the usage of message_start and message_delta so
// far, in the Chat form (ChatUsage); nil when none came.
func (n *NativeStream) BackendUsage() *chat.Usage {
	if !n.counted {
		return nil
	}
	return ChatUsage(n.usage)
}

// BackendErr returns the error event the backend sent, which Feed relayed
// as it was, or nil; for the caller's logs.
func (n *NativeStream) BackendErr() *BackendError { return n.err }

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
func (n *NativeStream) Feed(dst, p []byte) ([]byte, error) {
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
func (n *NativeStream) line(dst, line, ending []byte) []byte {
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
			}
		}
	}
	n.event = append(append(n.event, line...), ending...)
	return dst
}

// noteUsage takes the usage of a message_start (message.usage) or a
// message_delta (usage: the counts it names replace those so far).
func (n *NativeStream) noteUsage(data []byte) {
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
func (n *NativeStream) startModel(data []byte) ([]byte, bool) {
	top, err := scanObject(data, false, func(name string) bool { return name == "type" || name == "message" })
	if err != nil {
		return nil, false
	}
	typ, ok := top.get("type")
	msg, ok2 := top.get("message")
	if !ok || !ok2 || !bytes.Equal(typ.value, []byte(`"message_start"`)) || msg.value.Kind() != '{' {
		return nil, false
	}
	inner, err := scanObject(msg.value, false, func(name string) bool { return name == "model" })
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

// Fail appends an error event in the Messages error shape, for a stream
// that broke off (Ended is false). After Done it appends nothing.
func (n *NativeStream) Fail(dst []byte, errType, message string) []byte {
	if n.done {
		return dst
	}
	n.done = true
	return appendErrorEvent(dst, errType, message)
}
