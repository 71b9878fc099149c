package translate

// Tool calls and reasoning that a backend model wrote as text in its
// answer's content (issue 38), recovered by package textcall, are given
// to the client as real calls and reasoning. The recovery works on the
// backend's answer in the backend's own format, before the answer's
// translator: a Chat answer whose content holds a call becomes a Chat
// answer with tool_calls (ChatTextCalls, ChatTextResponse), a Messages
// answer whose text block holds one a Messages answer with a tool_use
// block (MessagesTextCalls, MessagesTextResponse). So every front gets
// them from either backend protocol, streamed or not, through the
// translators it always goes through: a tool_use block and stop_reason
// tool_use (Messages), a function_call item (Responses), tool_calls and
// finish_reason tool_calls (Chat).
//
// It runs only when the request offered tools and the target's
// proxy_params.tool_calls_in_text is not off (TextCallOptions is nil
// otherwise, and the answer passes as it always did, byte for byte).
// Content that is not recovered reaches the client unaltered: textcall
// gives it back as text.
//
// Each stream filter is one state machine over the backend's events; it
// holds the SSE line or event being read and the Scanner's bounded tail,
// nothing of the answer that went out.

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/sse"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// TextCallOptions are what the backend's answer to req is recognized
// with; nil when nothing is to be recovered: the request offered no
// tools, or the target's tool_calls_in_text is off.
func (req *BackendRequest) TextCallOptions() *textcall.Options {
	if req.Target.TextCalls == 0 || len(req.Tools) == 0 {
		return nil
	}
	return &textcall.Options{Families: req.Target.TextCalls, Reasoning: req.Target.TextReasoning, Tools: req.Tools}
}

// offeredTools are a request's function tools for textcall: their names
// and a copy of their parameter schemas (the request's memory goes back
// to its pool). nil when the target recovers no call.
func offeredTools[T any](target Target, tools []T, of func(*T) (string, jsontext.Value)) []textcall.Tool {
	if target.TextCalls == 0 || len(tools) == 0 {
		return nil
	}
	out := make([]textcall.Tool, 0, len(tools))
	for i := range tools {
		name, schema := of(&tools[i])
		if name == "" {
			continue
		}
		out = append(out, textcall.Tool{Name: name, Parameters: memo.Get(target.Memo, memoSchema, schema, func() []byte { return compactSchema(schema) })})
	}
	return out
}

// compactSchema is what textcall reads of a parameter schema, the type of
// each top-level property ({"properties":{"k":{"type":…}}}, anyOf and
// oneOf kept), in memory of its own: a stream keeps it for its whole
// life, and a coding client's tools hold tens of kilobytes of
// descriptions. nil when the schema has no properties (or is not valid
// JSON). It reads the schema with jsonscan, member by member, copying
// only those values (no value is decoded).
func compactSchema(schema jsontext.Value) []byte {
	if schema.Kind() != '{' {
		return nil
	}
	var out []byte
	sc := jsonscan.New(schema)
	err := sc.Members(func(key []byte) error {
		if string(key) != `"properties"` || sc.Peek() != '{' {
			_, err := sc.Value()
			return err
		}
		out = append(out[:0], `{"properties":{`...)
		n := 0
		err := sc.Members(func(name []byte) error {
			if n > 0 {
				out = append(out, ',')
			}
			n++
			out = append(append(out, name...), ":{"...)
			if sc.Peek() != '{' {
				_, err := sc.Value()
				out = append(out, '}')
				return err
			}
			m := 0
			err := sc.Members(func(key []byte) error {
				switch string(key) {
				case `"type"`, `"anyOf"`, `"oneOf"`:
					v, err := sc.Value()
					if m > 0 {
						out = append(out, ',')
					}
					m++
					out = append(append(append(out, key...), ':'), v...)
					return err
				}
				_, err := sc.Value()
				return err
			})
			out = append(out, '}')
			return err
		})
		out = append(out, "}}"...)
		return err
	})
	if err != nil {
		return nil
	}
	return out
}

func messagesToolOf(t *messages.Tool) (string, jsontext.Value) {
	if t.Type != "" && t.Type != "custom" || len(t.InputSchema) == 0 {
		return "", nil // a server tool
	}
	return t.Name, t.InputSchema
}

func chatToolOf(t *chat.Tool) (string, jsontext.Value) { return t.Function.Name, t.Function.Parameters }

func chatOutToolOf(t *chatTool) (string, jsontext.Value) { return t.name, t.parameters }

// The facts of text calls a connection's memo remembers (internal/memo):
// a schema's compact parameter types, and the tools of a pass-through's
// tools array, in either shape.
const (
	memoSchema      byte = 's'
	memoRawMessages byte = 'm'
	memoRawChat     byte = 'h'
)

// rawTools reads the tools of a request a normalizer passes through: the
// value of its "tools" member, in the Chat shape
// ({"type":"function","function":{"name","parameters"}}) or the Messages
// one ({"type","name","input_schema"}; a server tool, of a type other than
// custom, is left out). The body was validated when its members were
// scanned; the tools are read with jsonscan, member by member, the names
// unescaped and the schemas compacted, their descriptions skipped. A
// tools value not of that shape (a name that is not a string) offers
// none, as a decoder would have refused it. What the client's connection
// sent before is remembered (Target.Memo).
func rawTools(target Target, top *object, messagesShape bool) []textcall.Tool {
	if target.TextCalls == 0 {
		return nil
	}
	v, ok := top.get("tools")
	if !ok || v.value.Kind() != '[' {
		return nil
	}
	kind := memoRawChat
	if messagesShape {
		kind = memoRawMessages
	}
	return memo.Get(target.Memo, kind, v.value, func() []textcall.Tool {
		return readRawTools(v.value, messagesShape)
	})
}

// readRawTools is rawTools on the value of a tools member.
func readRawTools(tools jsontext.Value, messagesShape bool) []textcall.Tool {
	var out []textcall.Tool
	sc := jsonscan.New(tools)
	err := sc.Elements(func(int) error {
		var t rawTool
		var err error
		if messagesShape {
			err = t.readMessages(&sc)
		} else {
			err = t.readChat(&sc)
		}
		if err == nil && t.name != "" && (!messagesShape || !t.server && t.schema != nil) {
			out = append(out, textcall.Tool{Name: t.name, Parameters: compactSchema(t.schema)})
		}
		return err
	})
	if err != nil {
		return nil
	}
	return out
}

// rawTool is what rawTools reads of one tool.
type rawTool struct {
	name   string
	schema jsontext.Value
	server bool // a Messages server tool (a type other than custom)
}

var errToolShape = errors.New("a tool of another shape")

// stringMember reads a member's value that must be a string or null (as
// a string field decodes), unescaped.
func stringMember(sc *jsonscan.Scanner) (string, error) {
	v, err := sc.Value()
	switch {
	case err != nil:
		return "", err
	case v[0] == 'n':
		return "", nil
	case v[0] != '"':
		return "", errToolShape
	}
	name, err := rawName(v)
	return string(name), err
}

// skipNull reads a null where an object may be (it decodes as nothing);
// any other value there is not a tool.
func skipNull(sc *jsonscan.Scanner, c byte) error {
	if c != 'n' {
		return errToolShape
	}
	_, err := sc.Value()
	return err
}

// readMessages reads a Messages tool: {"type","name","input_schema"}.
func (t *rawTool) readMessages(sc *jsonscan.Scanner) error {
	if c := sc.Peek(); c != '{' {
		return skipNull(sc, c)
	}
	return sc.Members(func(key []byte) error {
		var err error
		switch string(key) {
		case `"name"`:
			t.name, err = stringMember(sc)
		case `"type"`:
			var typ string
			typ, err = stringMember(sc)
			t.server = typ != "" && typ != "custom"
		case `"input_schema"`:
			t.schema, err = sc.Value()
		default:
			_, err = sc.Value()
		}
		return err
	})
}

// readChat reads a Chat tool: {"type","function":{"name","parameters"}}.
func (t *rawTool) readChat(sc *jsonscan.Scanner) error {
	if c := sc.Peek(); c != '{' {
		return skipNull(sc, c)
	}
	return sc.Members(func(key []byte) error {
		if string(key) != `"function"` {
			_, err := sc.Value()
			return err
		}
		if c := sc.Peek(); c != '{' {
			return skipNull(sc, c)
		}
		return sc.Members(func(key []byte) error {
			var err error
			switch string(key) {
			case `"name"`:
				t.name, err = stringMember(sc)
			case `"parameters"`:
				t.schema, err = sc.Value()
			default:
				_, err = sc.Value()
			}
			return err
		})
	})
}

// TextCallIDs makes the ids of the calls recovered in one answer:
// Prefix and a number. The caller picks a prefix unique to the answer
// (the server a random one; tests a fixed one), so each recovered call
// gets a fresh id.
type TextCallIDs struct {
	Prefix string
	n      int
}

func (g *TextCallIDs) next() string {
	g.n++
	return g.Prefix + strconv.Itoa(g.n)
}

// textCallsSeen counts what a filter recovered, for the metrics.
type textCallsSeen struct {
	calls []textcall.Family
}

// Recovered returns the family of each call recovered so far, in order.
func (s *textCallsSeen) Recovered() []textcall.Family { return s.calls }

// ChatTextCalls filters one backend Chat stream: the content of choice
// 0 goes through a textcall.Scanner; what it gives back as text stays
// the chunk's content, and reasoning and recovered calls go out as
// chunks of their own (reasoning_content; tool_calls with a fresh id and
// the whole arguments) before the chunk that held their end. A
// finish_reason "stop" becomes "tool_calls" once a call was recovered.
// Lines that carry no content pass as they came. The scanner ends at
// choice 0's finish_reason, at [DONE], or at Close.
type ChatTextCalls struct {
	textCallsSeen
	opts  *textcall.Options
	ids   TextCallIDs
	lines lineFeeder
	sc    *textcall.Scanner
	ended bool // the scanner was closed
	evs   []textcall.Event
	// the first chunk, whose id, model and created the chunks the filter
	// writes take (read when it writes one)
	first, id, model, created []byte
	toolIndex                 int // the next tool_calls index: after the backend's own
	plain                     plainChunk
}

// plainChunk is the shape of the latest chunk of plain text that passed
// as it came: its bytes before and after the content's text. A server
// writes every text chunk of a stream the same way (the same id, model
// and created, the same members in the same order), so the next chunk
// that starts and ends with the same bytes, its text between them plain
// (no quote, backslash or control character; UTF-8), is the same chunk
// of another text: quickScan would find it so, and it is not read again.
type plainChunk struct {
	head, tail []byte
}

// learn keeps the shape of payload, whose content's text is
// payload[start:end].
func (c *plainChunk) learn(payload []byte, start, end int) {
	c.head = append(c.head[:0], payload[:start]...)
	c.tail = append(c.tail[:0], payload[end:]...)
}

// text is the content's text of payload when payload has the shape
// learned.
func (c *plainChunk) text(payload []byte) ([]byte, bool) {
	if c.head == nil || len(payload) < len(c.head)+len(c.tail) || !bytes.HasPrefix(payload, c.head) || !bytes.HasSuffix(payload, c.tail) {
		return nil, false
	}
	text := payload[len(c.head) : len(payload)-len(c.tail)]
	ascii := true
	for _, b := range text {
		if b < ' ' || b == '"' || b == '\\' {
			return nil, false
		}
		ascii = ascii && b < utf8.RuneSelf
	}
	return text, ascii || utf8.Valid(text)
}

// NewChatTextCalls returns the filter of one Chat stream; idPrefix
// starts the ids of the calls it recovers.
func NewChatTextCalls(o *textcall.Options, idPrefix string) *ChatTextCalls {
	return &ChatTextCalls{opts: o, ids: TextCallIDs{Prefix: idPrefix}, sc: textcall.NewScanner(o)}
}

// Feed takes raw backend bytes, split anywhere, and appends the filtered
// stream's lines that p completes.
func (f *ChatTextCalls) Feed(dst, p []byte) ([]byte, error) {
	return f.lines.feed(dst, p, f)
}

// Close ends the stream: a last line without its ending goes through,
// then what the scanner held back.
func (f *ChatTextCalls) Close(dst []byte) []byte {
	if len(f.lines.buf) > 0 {
		rest := bytes.Clone(f.lines.buf)
		f.lines.buf = f.lines.buf[:0]
		dst = f.line(dst, rest, []byte("\n\n"))
	}
	if f.ended {
		return dst
	}
	f.ended = true
	f.evs = f.sc.Close(f.evs[:0])
	return f.appendEvents(dst, f.evs)
}

// chatSpots is where a chunk's choice 0 holds its content and finish.
type chatSpots struct {
	content            string
	cStart, cEnd       int // the content value; cStart < 0: none
	finish             string
	fStart, fEnd       int // the finish_reason value; fStart < 0: none
	id, model, created []byte
	toolIndex          int  // 1 + the highest tool_calls index of the chunk; 0: none
	plain              bool // quickScan: content is not set, its bytes are the text (no escapes, UTF-8)
}

func (f *ChatTextCalls) line(dst, line, ending []byte) []byte {
	payload, ok := bytes.CutPrefix(line, dataField)
	if !ok {
		return append(append(dst, line...), ending...)
	}
	payload = bytes.TrimPrefix(payload, []byte{' '})
	at := len(line) - len(payload)
	if bytes.Equal(payload, doneData) {
		if !f.ended {
			f.ended = true
			f.evs = f.sc.Close(f.evs[:0])
			dst = f.appendEvents(dst, f.evs)
		}
		return append(append(dst, line...), ending...)
	}
	if f.ended || !bytes.Contains(payload, []byte(`"choices"`)) {
		return append(append(dst, line...), ending...)
	}
	if f.first == nil {
		f.first = bytes.Clone(payload) // its id, model and created, for the chunks the filter writes
	}
	if text, ok := f.plain.text(payload); ok && f.sc.Passes(text) {
		return append(append(dst, line...), ending...) // as below, the line read again
	}
	sp, ok := quickScan(payload)
	if ok && sp.plain && sp.fStart < 0 && f.sc.Passes(payload[sp.cStart+1:sp.cEnd-1]) {
		// Plain text, which the scanner would give back as it came: the
		// line too, without copying the text out (nor checking the line
		// is JSON: the scanner is left as it was whatever it is).
		f.plain.learn(payload, sp.cStart+1, sp.cEnd-1)
		return append(append(dst, line...), ending...)
	}
	if ok {
		ok = sp.complete(payload)
	}
	if !ok {
		sp, ok = chunkSpots(payload)
	}
	if !ok {
		return append(append(dst, line...), ending...)
	}
	f.toolIndex = max(f.toolIndex, sp.toolIndex)
	f.evs = f.evs[:0]
	if sp.cStart >= 0 {
		f.evs = f.sc.Feed(f.evs, sp.content)
	}
	if sp.fStart >= 0 {
		f.ended = true
		f.evs = f.sc.Close(f.evs)
	}
	var edits [2]edit
	e := edits[:0]
	if sp.cStart >= 0 && sp.fStart < 0 && eventsAre(f.evs, sp.content) {
		return append(append(dst, line...), ending...) // the text as it came
	}
	if sp.cStart >= 0 {
		text, only := eventsText(f.evs)
		if !only {
			dst = f.appendEvents(dst, f.evs)
			text = ""
		}
		if text != sp.content {
			e = append(e, edit{at + sp.cStart, at + sp.cEnd, jsonquote.Append(nil, text)})
		}
	} else if len(f.evs) > 0 {
		dst = f.appendEvents(dst, f.evs)
	}
	if sp.fStart >= 0 && sp.finish == "stop" && len(f.calls) > 0 {
		e = append(e, edit{at + sp.fStart, at + sp.fEnd, []byte(`"tool_calls"`)})
	}
	if len(e) == 0 {
		return append(append(dst, line...), ending...)
	}
	out := splice(line, e)
	dst = append(append(dst, out...), ending...)
	bufpool.Put(out)
	return dst
}

func cmpOr(b, or []byte) []byte {
	if len(b) == 0 {
		return or
	}
	return b
}

// eventsAre reports whether evs are text events that, joined, are text.
func eventsAre(evs []textcall.Event, text string) bool {
	for _, ev := range evs {
		if ev.Kind != textcall.EventText || !strings.HasPrefix(text, ev.Text) {
			return false
		}
		text = text[len(ev.Text):]
	}
	return text == ""
}

// quickSpots finds the content of a chunk the way most chunks of a text
// answer are written, in one pass over its strings, without decoding it:
// one choice, its content (if any) a string, its finish_reason null or
// a string without escapes, no tool_calls, no member named
// twice. ok is false for any other chunk, which chunkSpots reads.
func quickSpots(obj []byte) (chatSpots, bool) {
	sp, ok := quickScan(obj)
	return sp, ok && sp.complete(obj)
}

// complete ends quickScan's reading of obj: the content of a plain
// string, and whether obj is JSON (when it holds content or a finish).
func (sp *chatSpots) complete(obj []byte) bool {
	if sp.plain {
		sp.content, sp.plain = string(obj[sp.cStart+1:sp.cEnd-1]), false
	}
	if sp.cStart < 0 && sp.fStart < 0 {
		return true
	}
	// A line that is not JSON passes as it came (translators leave it
	// out): its "content" is no answer text.
	return jsontext.Value(obj).IsValid(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
}

// quickScan is quickSpots without its last steps (complete): a content
// string without escapes is left in obj (plain), and obj is not checked
// to be JSON.
func quickScan(obj []byte) (sp chatSpots, ok bool) {
	sp.cStart, sp.fStart = -1, -1
	var index, contents, finishes int
	depth := 0                  // of the brackets outside strings: the choice's members are at 3, the delta's at 4
	var inChoices, inDelta bool // the latest member at depth 1 is "choices"; at 3 "delta" (or "message")
	var inChoice bool           // a member of a choice was read
	for i := 0; i < len(obj); {
		q := bytes.IndexByte(obj[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		d, low := nestingLow(obj[i:start])
		if inChoices && inChoice && depth+low <= 2 && depth+d >= 3 {
			return sp, false // a second choice: which is choice 0 is the decoder's to say
		}
		depth += d
		end, escaped := stringEnd(obj, start)
		if end < 0 {
			return sp, false
		}
		i = end + 1
		v, isKey := memberValue(obj, i)
		if !isKey {
			continue // a value
		}
		name := obj[start+1 : end]
		inChoice = inChoice || inChoices && depth >= 3
		switch depth {
		case 1:
			inChoices = string(name) == "choices"
		case 3:
			inDelta = string(name) == "delta" || string(name) == "message"
		}
		if !inChoices && depth >= 3 {
			return sp, false
		}
		switch string(name) {
		case "tool_calls":
			return sp, false
		case "index":
			if index++; index > 1 || depth != 3 || len(v) < 2 || v[0] != '0' || v[1] >= '0' && v[1] <= '9' || v[1] == '.' || v[1] == 'e' || v[1] == 'E' {
				return sp, false // a second choice, or not choice 0
			}
		case "content", "finish_reason":
			if name[0] == 'c' && (depth != 4 || !inDelta) || name[0] == 'f' && depth != 3 {
				return sp, false // not a choice's finish_reason, nor its delta's content
			}
			if v[0] == 'n' {
				continue // null
			}
			at := len(obj) - len(v)
			vEnd, vEscaped := stringEnd(obj, at)
			if v[0] != '"' || vEnd < 0 || escaped || vEscaped && name[0] != 'c' {
				return sp, false
			}
			if name[0] == 'c' {
				if contents++; contents > 1 {
					return sp, false
				}
				sp.cStart, sp.cEnd = at, vEnd+1
				switch {
				case vEscaped: // "\n" and the like: the string alone decoded
					if json.Unmarshal(obj[at:vEnd+1], &sp.content, jsontext.AllowInvalidUTF8(true)) != nil {
						return sp, false
					}
				case utf8.Valid(obj[at+1 : vEnd]):
					sp.plain = true // its bytes are the text
				default:
					return sp, false
				}
			} else {
				if finishes++; finishes > 1 {
					return sp, false
				}
				sp.fStart, sp.fEnd = at, vEnd+1
				if v := obj[at+1 : vEnd]; !vEscaped && utf8.Valid(v) {
					sp.finish = string(v)
				} else {
					json.Unmarshal(obj[at:vEnd+1], &sp.finish) // as choiceSpots reads it
				}
			}
			i = vEnd + 1
		}
	}
	return sp, index == 1 || sp.cStart < 0 && sp.fStart < 0
}

// nesting is the change of bracket depth over bytes outside strings.
func nesting(gap []byte) int {
	d := 0
	for _, c := range gap {
		switch c {
		case '{', '[':
			d++
		case '}', ']':
			d--
		}
	}
	return d
}

// nestingLow is nesting's change of depth over gap and the lowest change
// it reaches on the way (0 or less).
func nestingLow(gap []byte) (d, low int) {
	for _, c := range gap {
		switch c {
		case '{', '[':
			d++
		case '}', ']':
			if d--; d < low {
				low = d
			}
		}
	}
	return d, low
}

// stringEnd returns the offset of the closing quote of the JSON string
// that starts at obj[start], and whether it holds an escape; -1 when it
// does not close.
func stringEnd(obj []byte, start int) (int, bool) {
	escaped := false
	for j := start + 1; j < len(obj); {
		k := bytes.IndexByte(obj[j:], '"')
		if k < 0 {
			return -1, escaped
		}
		end := j + k
		if !escaped && bytes.IndexByte(obj[j:end], '\\') >= 0 {
			escaped = true
		}
		n := 0
		for p := end - 1; p > start && obj[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return end, escaped
		}
		j = end + 1
	}
	return -1, escaped
}

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\r\n"

// memberValue returns what follows ':' after a member's name whose
// closing quote is obj[at-1]; isKey is false when no ':' and value
// follow: the string was a value.
func memberValue(obj []byte, at int) (v []byte, isKey bool) {
	v = bytes.TrimLeft(obj[at:], jsonSpace)
	if len(v) == 0 || v[0] != ':' {
		return nil, false
	}
	v = bytes.TrimLeft(v[1:], jsonSpace)
	return v, len(v) > 0
}

// eventsText joins the text of events that are all text; only is false
// when one is not.
func eventsText(evs []textcall.Event) (text string, only bool) {
	if len(evs) == 1 && evs[0].Kind == textcall.EventText {
		return evs[0].Text, true
	}
	var b []byte
	for _, ev := range evs {
		if ev.Kind != textcall.EventText {
			return "", false
		}
		b = append(b, ev.Text...)
	}
	return string(b), true
}

// appendEvents writes each event as a chunk of its own.
func (f *ChatTextCalls) appendEvents(dst []byte, evs []textcall.Event) []byte {
	if len(evs) > 0 && f.id == nil {
		sp, _ := chunkSpots(f.first)
		f.id, f.model, f.created = cmpOr(sp.id, []byte(`""`)), sp.model, sp.created
	}
	for _, ev := range evs {
		dst = append(dst, `data: {"id":`...)
		dst = appendRawOr(dst, f.id, `""`)
		dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
		dst = appendRawOr(dst, f.created, `0`)
		dst = append(dst, `,"model":`...)
		dst = appendRawOr(dst, f.model, `""`)
		dst = append(dst, `,"choices":[{"index":0,"delta":{`...)
		switch ev.Kind {
		case textcall.EventText:
			dst = append(dst, `"content":`...)
			dst = jsonquote.Append(dst, ev.Text)
		case textcall.EventReasoning:
			dst = append(dst, `"reasoning_content":`...)
			dst = jsonquote.Append(dst, ev.Text)
		case textcall.EventCall:
			f.calls = append(f.calls, ev.Call.Family)
			dst = append(dst, `"tool_calls":[{"index":`...)
			dst = strconv.AppendInt(dst, int64(f.toolIndex), 10)
			f.toolIndex++
			dst = append(dst, `,"id":`...)
			dst = jsonquote.Append(dst, f.ids.next())
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = jsonquote.Append(dst, ev.Call.Name)
			dst = append(dst, `,"arguments":`...)
			dst = jsonquote.Append(dst, ev.Call.Arguments)
			dst = append(dst, `}}]`...)
		}
		dst = append(dst, "},\"finish_reason\":null}]}\n\n"...)
	}
	return dst
}

func appendRawOr(dst, raw []byte, or string) []byte {
	if len(raw) == 0 {
		return append(dst, or...)
	}
	return append(dst, raw...)
}

// chunkSpots finds choice 0's content and finish_reason in a chunk.
func chunkSpots(obj []byte) (sp chatSpots, ok bool) {
	sp.cStart, sp.fStart = -1, -1
	dec := jsontext.NewDecoder(bytes.NewReader(obj), jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return sp, false
	}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return sp, false
		}
		name := tok.String()
		switch name {
		case "id", "model", "created":
			v, err := dec.ReadValue()
			if err != nil {
				return sp, false
			}
			switch name {
			case "id":
				sp.id = bytes.Clone(v)
			case "model":
				sp.model = bytes.Clone(v)
			default:
				sp.created = bytes.Clone(v)
			}
		case "choices":
			if dec.PeekKind() != '[' {
				if dec.SkipValue() != nil {
					return sp, false
				}
				continue
			}
			dec.ReadToken()
			for dec.PeekKind() == '{' {
				if !choiceSpots(dec, &sp) {
					return sp, false
				}
			}
			if _, err := dec.ReadToken(); err != nil {
				return sp, false
			}
		default:
			if dec.SkipValue() != nil {
				return sp, false
			}
		}
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return sp, false
	}
	return sp, true
}

// readStringSpan reads the next value; when it is a string, it notes where
// the value lies in the input ([*start, *end)) and decodes it into dst. It
// reports false only when the value cannot be read.
func readStringSpan(dec *jsontext.Decoder, start, end *int, dst *string, opts ...json.Options) bool {
	v, err := dec.ReadValue()
	if err != nil {
		return false
	}
	if v.Kind() == '"' {
		*end = int(dec.InputOffset())
		*start = *end - len(v)
		json.Unmarshal(v, dst, opts...)
	}
	return true
}

// choiceSpots reads one choice, noting its spots when its index is 0.
func choiceSpots(dec *jsontext.Decoder, sp *chatSpots) bool {
	dec.ReadToken() // {
	c := chatSpots{cStart: -1, fStart: -1}
	index := -1
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return false
		}
		switch tok.String() {
		case "index":
			v, err := dec.ReadValue()
			if err != nil {
				return false
			}
			if n, err := strconv.Atoi(string(v)); err == nil {
				index = n
			}
		case "finish_reason":
			if !readStringSpan(dec, &c.fStart, &c.fEnd, &c.finish) {
				return false
			}
		case "delta", "message":
			if dec.PeekKind() != '{' {
				if dec.SkipValue() != nil {
					return false
				}
				continue
			}
			dec.ReadToken()
			for dec.PeekKind() == '"' {
				n, err := dec.ReadToken()
				if err != nil {
					return false
				}
				switch n.String() { // read before any other call voids n
				case "content":
					if !readStringSpan(dec, &c.cStart, &c.cEnd, &c.content, jsontext.AllowInvalidUTF8(true)) {
						return false
					}
				case "tool_calls":
					v, err := dec.ReadValue()
					if err != nil {
						return false
					}
					var calls []struct {
						Index int `json:"index"`
					}
					json.Unmarshal(v, &calls)
					for i, tc := range calls {
						c.toolIndex = max(c.toolIndex, tc.Index+1, i+1)
					}
				default:
					if dec.SkipValue() != nil {
						return false
					}
				}
			}
			if _, err := dec.ReadToken(); err != nil {
				return false
			}
		default:
			if dec.SkipValue() != nil {
				return false
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	if index == 0 {
		c.id, c.model, c.created = sp.id, sp.model, sp.created
		*sp = c
	}
	return true
}

// MessagesTextCalls filters one backend Messages stream: the text of
// each text block goes through a textcall.Scanner (one per block), and
// its events become blocks of their own: text, thinking, and a tool_use
// block for each recovered call (a fresh id, its input in one
// input_json_delta). The blocks that follow are renumbered; a
// message_delta's stop_reason "end_turn" becomes "tool_use" once a call
// was recovered. Every other event passes as it came. One block is open
// at a time, as the format asks.
type MessagesTextCalls struct {
	textCallsSeen
	opts  *textcall.Options
	ids   TextCallIDs
	lines lineFeeder
	event []byte // the lines of the event being read
	name  []byte // its type

	sc      *textcall.Scanner // the text block being scanned; nil: none
	textIdx int               // its index in the backend's stream
	open    laneKind          // the block this filter opened and left open
	opened  bool
	next    int   // the next block index for the client
	renum   []int // the backend's block index → the client's
	evs     []textcall.Event
}

// NewMessagesTextCalls returns the filter of one Messages stream;
// idPrefix starts the ids of the calls it recovers.
func NewMessagesTextCalls(o *textcall.Options, idPrefix string) *MessagesTextCalls {
	return &MessagesTextCalls{opts: o, ids: TextCallIDs{Prefix: idPrefix}, textIdx: -1}
}

// Feed takes raw backend bytes, split anywhere, and appends the filtered
// events p completes.
func (f *MessagesTextCalls) Feed(dst, p []byte) ([]byte, error) {
	dst, err := f.lines.feed(dst, p, f)
	if err == nil && len(f.event) > sse.DefaultMaxEventSize {
		err = sse.ErrEventTooLarge
	}
	return dst, err
}

// Close ends the stream: the event being read goes through, then what
// the scanner of an unfinished text block held back.
func (f *MessagesTextCalls) Close(dst []byte) []byte {
	if len(f.lines.buf) > 0 {
		rest := bytes.Clone(f.lines.buf)
		f.lines.buf = f.lines.buf[:0]
		dst = f.line(dst, rest, []byte("\n"))
	}
	if len(f.event) > 0 {
		dst = f.line(dst, nil, []byte("\n"))
	}
	return f.endText(dst)
}

func (f *MessagesTextCalls) line(dst, line, ending []byte) []byte {
	if len(line) > 0 {
		if v, ok := bytes.CutPrefix(line, eventField); ok {
			f.name = append(f.name[:0], bytes.TrimSpace(v)...)
		}
		f.event = append(append(f.event, line...), ending...)
		return dst
	}
	ev := f.event
	dst = f.handle(dst, ev, ending)
	f.event, f.name = f.event[:0], f.name[:0]
	return dst
}

// blockEvent is the part of a content_block_* event the filter reads.
type blockEvent struct {
	Type         string `json:"type"`
	Index        int    `json:"index"`
	ContentBlock *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content_block"`
	Delta *struct {
		Type       string  `json:"type"`
		Text       string  `json:"text"`
		StopReason *string `json:"stop_reason"`
	} `json:"delta"`
}

// handle takes one whole event (its lines, then the blank line's ending).
func (f *MessagesTextCalls) handle(dst, ev, ending []byte) []byte {
	data := eventData(ev)
	if f.sc != nil && bytes.Equal(f.name, contentBlockDeltaName) {
		if index, text, ok := quickTextDelta(data); ok && index == f.textIdx {
			f.evs = f.sc.Feed(f.evs[:0], text)
			return f.appendEvents(dst, f.evs)
		}
	}
	var be blockEvent
	if data == nil || json.Unmarshal(data, &be, decodeOpts) != nil {
		return append(append(dst, ev...), ending...)
	}
	switch be.Type {
	case messages.EventContentBlockStart:
		dst = f.endText(dst)
		if be.ContentBlock != nil && be.ContentBlock.Type == "text" {
			f.sc, f.textIdx = textcall.NewScanner(f.opts), be.Index
			f.evs = f.sc.Feed(f.evs[:0], be.ContentBlock.Text)
			return f.appendEvents(dst, f.evs)
		}
		return f.renumbered(dst, ev, ending, data, be.Index, true)
	case messages.EventContentBlockDelta:
		if f.sc != nil && be.Index == f.textIdx {
			if be.Delta != nil && be.Delta.Type == "text_delta" {
				f.evs = f.sc.Feed(f.evs[:0], be.Delta.Text)
				return f.appendEvents(dst, f.evs)
			}
			return dst // a text block's citations_delta: its text is what counts
		}
		return f.renumbered(dst, ev, ending, data, be.Index, false)
	case messages.EventContentBlockStop:
		if f.sc != nil && be.Index == f.textIdx {
			return f.endText(dst)
		}
		return f.renumbered(dst, ev, ending, data, be.Index, false)
	case messages.EventMessageDelta:
		dst = f.endText(dst)
		if be.Delta != nil && be.Delta.StopReason != nil && *be.Delta.StopReason == messages.StopEndTurn && len(f.calls) > 0 {
			return append(append(dst, bytes.Replace(ev, []byte(`"end_turn"`), []byte(`"tool_use"`), 1)...), ending...)
		}
	case messages.EventMessageStop, messages.EventError:
		dst = f.endText(dst)
	}
	return append(append(dst, ev...), ending...)
}

var (
	contentBlockDeltaName = []byte(messages.EventContentBlockDelta)
	contentBlockDeltaType = []byte(`"` + messages.EventContentBlockDelta + `"`)
)

// quickTextDelta reads a text_delta event the way servers write it, in
// one pass over its strings without decoding the event: its index and
// text. ok is false for any other event, which handle decodes.
func quickTextDelta(obj []byte) (index int, text string, ok bool) {
	depth, index := 0, -1
	var typed, textDelta, haveText, inDelta bool
	i := 0
	for i < len(obj) {
		q := bytes.IndexByte(obj[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		depth += nesting(obj[i:start])
		end, escaped := stringEnd(obj, start)
		if end < 0 || escaped {
			return 0, "", false
		}
		i = end + 1
		v, isKey := memberValue(obj, i)
		if !isKey {
			continue
		}
		name := string(obj[start+1 : end])
		if depth == 1 {
			inDelta = name == "delta"
		} else if !inDelta {
			return 0, "", false
		}
		switch {
		case depth == 1 && name == "type":
			if !bytes.HasPrefix(v, contentBlockDeltaType) {
				return 0, "", false // handle's to read: it passes on what is not a delta
			}
			typed = true
			i = len(obj) - len(v) + len(contentBlockDeltaType)
		case depth == 1 && name == "index":
			n := 0
			for n < len(v) && v[n] >= '0' && v[n] <= '9' {
				n++
			}
			if n == 0 || n > 6 || n < len(v) && (v[n] == '.' || v[n] == 'e' || v[n] == 'E') {
				return 0, "", false
			}
			index, _ = strconv.Atoi(string(v[:n]))
		case depth == 2 && name == "type":
			if !bytes.HasPrefix(v, []byte(`"text_delta"`)) {
				return 0, "", false
			}
			textDelta = true
			i = len(obj) - len(v) + len(`"text_delta"`)
		case depth == 2 && name == "text":
			at := len(obj) - len(v)
			vEnd, vEscaped := stringEnd(obj, at)
			if v[0] != '"' || vEnd < 0 || haveText {
				return 0, "", false
			}
			haveText = true
			if vEscaped || !utf8.Valid(obj[at+1:vEnd]) {
				if json.Unmarshal(obj[at:vEnd+1], &text, jsontext.AllowInvalidUTF8(true)) != nil {
					return 0, "", false
				}
			} else {
				text = string(obj[at+1 : vEnd])
			}
			i = vEnd + 1
		case depth == 2:
			return 0, "", false // a delta member other than type and text
		}
	}
	depth += nesting(obj[min(i, len(obj)):])
	// JSON with no name twice: handle decodes the others (the last of a
	// name given twice wins there).
	ok = typed && textDelta && haveText && index >= 0 && depth == 0 && jsontext.Value(obj).IsValid()
	return index, text, ok
}

// eventData returns the data of an event's first data line.
func eventData(ev []byte) []byte {
	for len(ev) > 0 {
		line, n, ok := sse.CutLine(ev)
		if !ok {
			line, n = ev, len(ev)
		}
		if d, ok := bytes.CutPrefix(line, dataField); ok {
			return bytes.TrimPrefix(d, []byte{' '})
		}
		ev = ev[n:]
	}
	return nil
}

// renumbered passes a block event of the backend with the client's index
// for its block; start says it starts the block.
func (f *MessagesTextCalls) renumbered(dst, ev, ending, data []byte, index int, start bool) []byte {
	if start {
		for len(f.renum) <= index {
			f.renum = append(f.renum, -1)
		}
		if index >= 0 {
			f.renum[index] = f.next
		}
		f.next++
	}
	out := index
	if index >= 0 && index < len(f.renum) && f.renum[index] >= 0 {
		out = f.renum[index]
	}
	if out == index {
		return append(append(dst, ev...), ending...)
	}
	top, err := scanObject(data, false, func(name []byte) bool { return string(name) == "index" })
	m, ok := top.get("index")
	if err != nil || !ok {
		return append(append(dst, ev...), ending...)
	}
	off := cap(ev) - cap(data) // data is a slice of ev
	e := []edit{{off + m.start, off + m.end, strconv.AppendInt(nil, int64(out), 10)}}
	b := splice(ev, e)
	dst = append(append(dst, b...), ending...)
	bufpool.Put(b)
	return dst
}

// endText ends the text block being scanned: what the scanner held back,
// then the block the filter left open closed.
func (f *MessagesTextCalls) endText(dst []byte) []byte {
	if f.sc == nil {
		return dst
	}
	f.evs = f.sc.Close(f.evs[:0])
	dst = f.appendEvents(dst, f.evs)
	f.sc, f.textIdx = nil, -1
	return f.closeOpen(dst)
}

// appendEvents writes the scanner's events as blocks: text and thinking
// into an open block of their kind, a call as a whole tool_use block.
func (f *MessagesTextCalls) appendEvents(dst []byte, evs []textcall.Event) []byte {
	for _, ev := range evs {
		switch ev.Kind {
		case textcall.EventText, textcall.EventReasoning:
			if ev.Text == "" {
				continue
			}
			kind := laneText
			if ev.Kind == textcall.EventReasoning {
				kind = laneThinking
			}
			if !f.opened || f.open != kind {
				dst = f.closeOpen(dst)
				dst = f.startBlock(dst, kind, "", "")
			}
			dst = appendBlockDelta(dst, f.next-1, kind, ev.Text)
		case textcall.EventCall:
			f.calls = append(f.calls, ev.Call.Family)
			dst = f.closeOpen(dst)
			dst = f.startBlock(dst, laneTool, f.ids.next(), ev.Call.Name)
			dst = appendBlockDelta(dst, f.next-1, laneTool, ev.Call.Arguments)
			dst = f.closeOpen(dst)
		}
	}
	return dst
}

func (f *MessagesTextCalls) startBlock(dst []byte, kind laneKind, id, name string) []byte {
	f.open, f.opened = kind, true
	f.next++
	return appendBlockStart(dst, f.next-1, kind, id, name)
}

func (f *MessagesTextCalls) closeOpen(dst []byte) []byte {
	if !f.opened {
		return dst
	}
	f.opened = false
	return appendBlockStop(dst, f.next-1)
}

// ChatTextResponse recovers the reasoning and calls written in the
// content of a non-stream Chat answer's choice 0: its content becomes
// the text left (null when none is), reasoning_content the reasoning,
// tool_calls the calls (fresh ids from idPrefix), finish_reason "stop"
// "tool_calls". It returns the body itself when nothing was recovered,
// and the family of each call it recovered.
func ChatTextResponse(body []byte, o *textcall.Options, idPrefix string) ([]byte, []textcall.Family) {
	sp, ok := quickSpots(body) // most answers; chunkSpots reads the others
	if !ok {
		sp, ok = chunkSpots(body)
	}
	if !ok || sp.cStart < 0 || sp.toolIndex > 0 {
		return body, nil
	}
	r := textcall.Parse(sp.content, o)
	if r.Text == sp.content && len(r.Calls) == 0 {
		return body, nil
	}
	ids := TextCallIDs{Prefix: idPrefix}
	var repl []byte
	if r.Text == "" && len(r.Calls) > 0 {
		repl = append(repl, "null"...)
	} else {
		repl = jsonquote.Append(repl, r.Text)
	}
	if r.Reasoning != "" {
		repl = append(repl, `,"reasoning_content":`...)
		repl = jsonquote.Append(repl, r.Reasoning)
	}
	var fams []textcall.Family
	if len(r.Calls) > 0 {
		repl = append(repl, `,"tool_calls":[`...)
		for i, c := range r.Calls {
			if i > 0 {
				repl = append(repl, ',')
			}
			fams = append(fams, c.Family)
			repl = append(repl, `{"id":`...)
			repl = jsonquote.Append(repl, ids.next())
			repl = append(repl, `,"type":"function","function":{"name":`...)
			repl = jsonquote.Append(repl, c.Name)
			repl = append(repl, `,"arguments":`...)
			repl = jsonquote.Append(repl, c.Arguments)
			repl = append(repl, `}}`...)
		}
		repl = append(repl, ']')
	}
	edits := []edit{{sp.cStart, sp.cEnd, repl}}
	if sp.fStart >= 0 && sp.finish == "stop" && len(r.Calls) > 0 {
		e := edit{sp.fStart, sp.fEnd, []byte(`"tool_calls"`)}
		if e.start < sp.cStart {
			edits = []edit{e, edits[0]}
		} else {
			edits = append(edits, e)
		}
	}
	return splice(body, edits), fams
}

// MessagesTextResponse recovers the reasoning and calls written in the
// text blocks of a non-stream Messages answer: each such block becomes a
// thinking block, the text left, and a tool_use block per call (fresh
// ids from idPrefix); stop_reason "end_turn" becomes "tool_use". It
// returns the body itself when nothing was recovered, and the family of
// each call it recovered.
func MessagesTextResponse(body []byte, o *textcall.Options, idPrefix string) ([]byte, []textcall.Family) {
	top, err := scanObject(body, false, func(name []byte) bool { return string(name) == "content" || string(name) == "stop_reason" })
	if err != nil {
		return body, nil
	}
	content, ok := top.get("content")
	if !ok || content.value.Kind() != '[' {
		return body, nil
	}
	var blocks []jsontext.Value
	if json.Unmarshal(content.value, &blocks, decodeOpts, aliasRaw) != nil {
		return body, nil
	}
	ids := TextCallIDs{Prefix: idPrefix}
	var out []byte
	var fams []textcall.Family
	changed := false
	out = append(out, '[')
	for _, raw := range blocks {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		var r textcall.Result
		recovered := false
		if json.Unmarshal(raw, &b, decodeOpts) == nil && b.Type == "text" {
			r = textcall.Parse(b.Text, o)
			recovered = r.Text != b.Text || len(r.Calls) > 0
		}
		if !recovered {
			out = appendBlockSep(out)
			out = append(out, raw...)
			continue
		}
		changed = true
		if r.Reasoning != "" {
			out = appendBlockSep(out)
			out = append(out, `{"type":"thinking","thinking":`...)
			out = jsonquote.Append(out, r.Reasoning)
			out = append(out, `,"signature":""}`...)
		}
		if r.Text != "" {
			out = appendBlockSep(out)
			out = append(out, `{"type":"text","text":`...)
			out = jsonquote.Append(out, r.Text)
			out = append(out, '}')
		}
		for _, c := range r.Calls {
			fams = append(fams, c.Family)
			out = appendBlockSep(out)
			out = append(out, `{"type":"tool_use","id":`...)
			out = jsonquote.Append(out, ids.next())
			out = append(out, `,"name":`...)
			out = jsonquote.Append(out, c.Name)
			out = append(out, `,"input":`...)
			out = append(out, ToolInput(c.Arguments)...)
			out = append(out, '}')
		}
	}
	if !changed {
		return body, nil
	}
	out = append(out, ']')
	edits := []edit{{content.start, content.end, out}}
	if sr, ok := top.get("stop_reason"); ok && len(fams) > 0 && string(sr.value) == `"end_turn"` {
		e := edit{sr.start, sr.end, []byte(`"tool_use"`)}
		if e.start < content.start {
			edits = []edit{e, edits[0]}
		} else {
			edits = append(edits, e)
		}
	}
	return splice(body, edits), fams
}

func appendBlockSep(out []byte) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	return out
}
