package translate

// chatLanes reads one backend Chat stream for a stream translator (the
// Messages one, messages_on_chat_stream.go, and the Responses one,
// responses_on_chat_stream.go) and sorts its content into lanes: one lane
// per block, or output item, of the answer, numbered in the order the
// lanes appear. The translator owns its
// own state machine and what it writes; chatLanes owns how the backend's
// chunks are read (SSE, error objects, choice 0, finish and usage) and the
// rules every Chat stream's content follows, tool calls above all.
//
// A lane is waiting, open or closed, and lanes open strictly in order:
// lanes[:next] have started, the last of them is the one open (until the
// end closes it), and lanes[next:] wait. After every chunk, as long as the
// open lane may be left and the next one is ready, the translator opens
// the next one (closing the open one first). So a block starts only at
// index next and stops only while open.
//
//   - A text, thinking or refusal lane can be left at any time: more of
//     that content after it closed starts a new lane. So text, reasoning
//     and text again give three lanes; content "" opens nothing.
//   - A tool lane (one tool call) can be left only once its arguments so
//     far form a whole JSON object (brackets balanced): its input is then
//     complete. Until then other content waits behind it. This is the
//     strategy for parallel calls whose fragments interleave (call 0,
//     call 1, call 0…): call 1 is held until call 0's object closes, then
//     goes out; when calls come one after another, as servers send them,
//     nothing waits. A fragment for a call already closed can only follow a
//     whole object, so it is whitespace or would make the arguments
//     invalid: it is dropped.
//   - A tool lane's arguments are held by the translator and go out when
//     the lane closes, as ToolInput makes them, the same input the
//     non-stream path gives: so the arguments a client accumulates are
//     always a JSON object, whatever the backend sent ("not-json{", an
//     object cut off at max_tokens, a JSON string). A fragment relayed as
//     it came could not be taken back.
//   - A tool lane is ready to open once its name is known.
//   - A tool call is known by its backend index and id: a fragment without
//     an id continues the latest call at its index, a new id at an index
//     in use (a known server bug) starts a new lane. So does a fragment
//     that opens a new object ('{') for a call whose object is already
//     whole: a backend reusing an id (or an index, without ids) for a
//     second call. A call without an id, or whose id an earlier call of the
//     answer has, gets idPrefix and a number: ids are unique in an answer.
//   - At the end, waiting lanes open in turn whatever their state, so every
//     call the backend sent reaches the client.
//   - A refusal (delta.refusal) goes to a lane of refusalKind: text for the
//     Messages format, a refusal part for the Responses format; refused is
//     then set.
//
// Only choice 0 is read. Reasoning comes from reasoning_content, or from
// reasoning when that is empty.

import (
	"bytes"
	"cmp"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/sse"
)

type laneKind uint8

const (
	laneText laneKind = iota
	laneThinking
	laneRefusal
	laneTool
)

type laneState uint8

const (
	laneWaiting laneState = iota
	laneOpen
	laneClosed
)

// lane is one block, or output item, of the answer.
type lane struct {
	kind  laneKind
	state laneState
	// text is the content the translator holds: the Messages one keeps
	// what has not gone out, the Responses one all of it (text[:sent] went
	// out). A tool lane's text is its arguments.
	text []byte
	sent int

	// tool calls only
	chatIndex int    // the call's index in the backend's tool_calls
	wireID    string // the id the backend gave the call, "" until it does
	id, name  string // as the client sees them; id unique in the answer
	nextName  string // a name that came for a new call while args were whole
	args      argScanner
}

// leavable reports whether the lane may be closed while the answer goes
// on.
func (l *lane) leavable() bool { return l.kind != laneTool || l.args.whole() }

// ready reports whether the lane can be opened.
func (l *lane) ready() bool { return l.kind != laneTool || l.name != "" }

// laneWriter is the translator chatLanes feeds: its state machine writes
// the events.
type laneWriter interface {
	// push gives content to lane i, in the lane's state.
	push(dst []byte, i int, content string) []byte
	// openNext closes the open lane, if any, and opens lanes[next].
	openNext(dst []byte) []byte
	// end writes the end of the answer: the backend's stream ended.
	end(dst []byte) []byte
	// Start writes the start of the answer, once: it opens it.
	Start(dst []byte) []byte
	// failBackend ends the answer with an error: the backend's last event
	// was an error object carrying message.
	failBackend(dst []byte, message string) []byte
}

// chatLanes is the reading of one backend Chat stream, embedded in the
// translator that writes it.
type chatLanes struct {
	w           laneWriter  // the translator this reading is embedded in
	phase       streamPhase // of the answer, as the translator moves it
	refusalKind laneKind    // the lane a refusal goes to
	idPrefix    string      // the made-up tool ids: idPrefix and a number
	madeIDs     int

	backendDone bool  // [DONE] came, or the finish and its usage
	err         error // a stream error read returned; read keeps returning it

	dec sse.Decoder

	lanes []lane
	next  int // the next lane to open; lanes[next:] wait

	finish     string         // finish_reason of choice 0
	vllmStop   jsontext.Value // vLLM's stop_reason beside it
	usage      *chat.Usage    // the backend's, nil until it reports it
	finalUsage bool           // usage came with or after the finish chunk
	outBytes   int            // content bytes, for an estimate when usage never comes
	refused    bool           // the backend sent a refusal
}

// Done reports whether the backend ended its stream: it sent [DONE], or
// its finish and then its usage. The caller may stop reading.
func (c *chatLanes) Done() bool { return c.backendDone }

// BackendUsage returns the usage the backend reported, nil when it sent
// none (the end of the answer then carries an estimate).
func (c *chatLanes) BackendUsage() *chat.Usage { return c.usage }

// Feed feeds raw backend bytes, split anywhere, and appends the events
// they complete (Start is implied). When the backend sends an error object
// instead of a chunk, Feed returns a *BackendError and the caller then
// calls Fail; an event too large to buffer returns sse.ErrEventTooLarge.
// Either error is returned again by every later Feed. Bytes after the end
// of the backend's stream (Done) are ignored.
func (c *chatLanes) Feed(dst, p []byte) ([]byte, error) {
	dst = c.w.Start(dst)
	if c.phase != phaseOpen {
		return dst, nil
	}
	return c.read(dst, p, c.w)
}

// Finish ends the answer, whatever came before (nothing at all, a stream
// cut before [DONE], an error Feed returned): the open block or item
// closed, those still waiting written, then the translator's end. A last
// event without its blank line is still read; if it is an error object,
// Finish ends the answer as the translator's Fail does. Later calls
// append nothing, as do calls after Fail.
func (c *chatLanes) Finish(dst []byte) []byte {
	dst = c.w.Start(dst)
	if c.phase != phaseOpen {
		return dst
	}
	dst, be := c.readEnd(dst, c.w)
	if be != nil {
		return c.w.failBackend(dst, be.Message)
	}
	return c.w.end(dst)
}

// read feeds raw backend bytes, split anywhere, and appends the events
// they complete. An error object from the backend returns a
// *BackendError; an event too large to buffer sse.ErrEventTooLarge; either
// is returned again by every later read. Bytes after the backend's end
// are ignored.
func (c *chatLanes) read(dst, p []byte, w laneWriter) ([]byte, error) {
	if c.backendDone {
		return dst, nil
	}
	if c.err != nil {
		return dst, c.err
	}
	if err := c.dec.Feed(p); err != nil {
		c.err = err
		return dst, err
	}
	for !c.backendDone {
		ev, ok := c.dec.Next()
		if !ok {
			break
		}
		if dst, c.err = c.event(dst, ev.Data, w); c.err != nil {
			return dst, c.err
		}
	}
	return dst, nil
}

// readEnd reads what the backend sent last, a last event without its
// blank line, when its stream ended. It returns the backend's error when
// that event is an error object.
func (c *chatLanes) readEnd(dst []byte, w laneWriter) ([]byte, *BackendError) {
	for c.err == nil && !c.backendDone {
		ev, ok := c.dec.End()
		if !ok {
			break
		}
		if dst, c.err = c.event(dst, ev.Data, w); c.err != nil {
			if be, ok := c.err.(*BackendError); ok {
				return dst, be
			}
		}
	}
	return dst, nil
}

var doneData = []byte("[DONE]")

// chunkOptions decode backend text whatever its UTF-8: invalid bytes
// become U+FFFD rather than failing the chunk; a repeated member name is
// taken, the last one winning.
var chunkOptions = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// event handles the data of one backend event.
func (c *chatLanes) event(dst, data []byte, w laneWriter) ([]byte, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return dst, nil
	}
	if bytes.Equal(data, doneData) {
		c.backendDone = true
		return w.end(dst), nil
	}
	var chunk chat.Chunk
	if err := json.Unmarshal(data, &chunk, chunkOptions); err != nil {
		if bytes.IndexByte(data, '\n') >= 0 {
			// Some servers forget the blank line between events, so one
			// event holds several data lines: read them one by one.
			var lineErr error
			for len(data) > 0 && lineErr == nil && !c.backendDone {
				line, rest, _ := bytes.Cut(data, []byte{'\n'})
				data = rest
				dst, lineErr = c.event(dst, line, w)
			}
			return dst, lineErr
		}
		if e := parseBackendError(data); e != nil {
			return dst, e
		}
		return dst, nil // not a chunk (a keep-alive, a server's own notice)
	}
	ck := &chunk
	if ck.Error != nil || len(ck.Choices) == 0 && ck.Usage == nil {
		// An error object; or maybe an error in a shape without one, such as
		// {"detail": …}, that decodes as an empty chunk.
		if e := parseBackendError(data); e != nil {
			return dst, e
		}
		if ck.Error != nil {
			return dst, &BackendError{Type: ck.Error.Type, Message: "the backend reported an error without a message"}
		}
	}
	for i := range ck.Choices {
		ch := &ck.Choices[i]
		if ch.Index != 0 {
			continue
		}
		dst = c.delta(dst, &ch.Delta, w)
		if ch.FinishReason != "" {
			c.finish = ch.FinishReason
			c.vllmStop = append(c.vllmStop[:0], ch.StopReason...)
		}
	}
	if ck.Usage != nil {
		c.usage = ck.Usage
		c.finalUsage = c.finish != ""
	}
	if c.finalUsage {
		// The finish and its usage came: what follows can only be [DONE].
		c.backendDone = true
		dst = w.end(dst)
	}
	return dst, nil
}

// parseBackendError reads the error a backend sent in place of a chunk:
// {"error":{"message":…,"type":…}}, {"error":"…"} and the other shapes
// chat.ParseError knows. It returns nil when data holds no error message.
func parseBackendError(data []byte) *BackendError {
	var e chat.ErrorResponse
	if json.Unmarshal(data, &e, chunkOptions) == nil && e.Error.Message != "" {
		return &BackendError{Type: e.Error.Type, Message: e.Error.Message}
	}
	if msg := chat.ParseError(data); msg != "" {
		return &BackendError{Message: msg}
	}
	return nil
}

// delta routes the content of one choice delta to its lanes, then opens
// the lanes that may open.
func (c *chatLanes) delta(dst []byte, d *chat.Delta, w laneWriter) []byte {
	reasoning := d.ReasoningContent
	if reasoning == "" {
		reasoning = d.Reasoning
	}
	if reasoning != "" {
		dst = c.push(dst, c.textLane(laneThinking), reasoning, w)
	}
	if d.Content != "" {
		dst = c.push(dst, c.textLane(laneText), d.Content, w)
	}
	if d.Refusal != "" {
		c.refused = true
		dst = c.push(dst, c.textLane(c.refusalKind), d.Refusal, w)
	}
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		l := c.toolLane(tc)
		if l < 0 {
			continue
		}
		if c.lanes[l].name == "" && tc.Function.Name != "" && c.lanes[l].state == laneWaiting {
			c.lanes[l].name = tc.Function.Name
		}
		if tc.Function.Arguments != "" {
			c.lanes[l].args.scan(tc.Function.Arguments)
			dst = c.push(dst, l, tc.Function.Arguments, w)
		}
	}
	for c.next < len(c.lanes) && c.lanes[c.next].ready() && (c.next == 0 || c.lanes[c.next-1].leavable()) {
		dst = w.openNext(dst)
	}
	return dst
}

func (c *chatLanes) push(dst []byte, i int, content string, w laneWriter) []byte {
	c.outBytes += len(content)
	return w.push(dst, i, content)
}

// textLane returns the lane that takes more content of a kind: the last
// lane if it is of that kind and not closed, else a new one. (An earlier
// lane of the kind would put the content before what came in between.)
func (c *chatLanes) textLane(kind laneKind) int {
	if n := len(c.lanes); n > 0 && c.lanes[n-1].kind == kind && c.lanes[n-1].state != laneClosed {
		return n - 1
	}
	c.lanes = append(c.lanes, lane{kind: kind})
	return len(c.lanes) - 1
}

// toolLane returns the lane of a tool-call fragment, or -1 when the call's
// lane is already closed (see the rules above).
func (c *chatLanes) toolLane(tc *chat.ToolCallDelta) int {
	latest := true
	for i := len(c.lanes) - 1; i >= 0; i-- {
		l := &c.lanes[i]
		if l.kind != laneTool || l.chatIndex != tc.Index {
			continue
		}
		switch {
		case tc.ID == "" && latest, tc.ID == l.wireID:
		case latest && l.wireID == "":
			// The call's id comes after its first fragment: take it, unless
			// the block already went out under a made-up one.
			l.wireID = tc.ID
			if l.state == laneWaiting {
				l.id = c.uniqueToolID(tc.ID)
			}
		default:
			latest = false
			continue // another call at this index; maybe an older one has this id
		}
		if l.args.whole() {
			if startsObject(tc.Function.Arguments) {
				// A second call under the same id (or index): a new lane.
				name := tc.Function.Name
				if name == "" {
					name = cmp.Or(l.nextName, l.name)
				}
				return c.newToolLane(tc.Index, l.wireID, name)
			}
			if tc.Function.Name != "" {
				l.nextName = tc.Function.Name // its arguments may follow
			}
		}
		if l.state == laneClosed {
			return -1
		}
		return i
	}
	return c.newToolLane(tc.Index, tc.ID, "")
}

// newToolLane starts the lane of a new call.
func (c *chatLanes) newToolLane(index int, wireID, name string) int {
	c.lanes = append(c.lanes, lane{kind: laneTool, chatIndex: index, wireID: wireID, id: c.uniqueToolID(wireID), name: name})
	return len(c.lanes) - 1
}

// uniqueToolID returns the backend's id for a new call, or a made-up one
// when the backend sent none or an earlier call has it.
func (c *chatLanes) uniqueToolID(wireID string) string {
	if wireID != "" && !c.toolIDUsed(wireID) {
		return wireID
	}
	for {
		c.madeIDs++
		if id := c.idPrefix + strconv.Itoa(c.madeIDs); !c.toolIDUsed(id) {
			return id
		}
	}
}

func (c *chatLanes) toolIDUsed(id string) bool {
	for i := range c.lanes {
		if c.lanes[i].kind == laneTool && c.lanes[i].id == id {
			return true
		}
	}
	return false
}

func (c *chatLanes) hasToolCalls() bool {
	for i := range c.lanes {
		if c.lanes[i].kind == laneTool {
			return true
		}
	}
	return false
}

// startsObject reports whether tool-call arguments start a JSON object.
func startsObject(args string) bool {
	a := strings.TrimLeft(args, jsonSpace)
	return a != "" && a[0] == '{'
}

// argScanner follows a tool call's arguments, fragment by fragment, far
// enough to tell when they form one whole JSON object. It only counts
// brackets outside strings: arguments it calls whole may still be invalid
// JSON, but no byte after a whole object could make them valid.
type argScanner struct {
	depth     int
	inString  bool
	escaped   bool
	closed    bool // the object closed
	notObject bool // the text does not start with '{': never whole
}

func (a *argScanner) whole() bool { return a.closed }

func (a *argScanner) scan(frag string) {
	for i := 0; i < len(frag) && !a.closed && !a.notObject; i++ {
		c := frag[i]
		if a.inString {
			switch {
			case a.escaped:
				a.escaped = false
			case c == '\\':
				a.escaped = true
			case c == '"':
				a.inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '{':
			a.depth++
		case '[':
			a.notObject = a.depth == 0
			a.depth++
		case '"':
			a.notObject = a.depth == 0
			a.inString = true
		case '}', ']':
			a.depth--
			a.notObject = a.depth < 0
			a.closed = a.depth == 0
		default:
			a.notObject = a.depth == 0
		}
	}
}
