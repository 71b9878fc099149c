package translate

// The one writer of Chat request bodies: the Messages and the Responses
// translations build a chatBody and write it here, folding the system role
// into user text for a backend without one, so that no translated body is
// parsed again. The Responses translation hands over its turns as the
// client wrote them (raw JSON strings) and everything after is here:
// the prompt's estimate, the output limit, the bytes, and the tools offered
// for calls written as text.

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
)

// part is a content part of a Chat message: text, or an image by URL. Its
// value is the concatenation of segs, each the inside of a JSON string
// (escaped, without quotes).
type part struct {
	image bool
	segs  [][]byte
}

type toolCall struct {
	id, name string
	input    []byte // raw JSON
	// args, when set, is a JSON string whose text is the arguments (a
	// Responses function_call's): the writer reads it into input.
	args jsontext.Value
}

// chatMsg is a Chat message under construction. str says content goes out
// as one JSON string (parts then holds exactly one text part), otherwise as
// an array of parts. Assistant content is always a string (or null).
type chatMsg struct {
	role   string // system, user, assistant, tool
	str    bool
	parts  []part
	calls  []toolCall
	callID string // tool
}

// chatTool is a Chat function tool: its description a raw JSON string (nil:
// none), followed by a custom tool's grammar (a raw JSON string) after
// grammarNote when grammar is set; its parameters a JSON Schema object.
type chatTool struct {
	name        string
	desc        jsontext.Value
	grammarNote string
	grammar     jsontext.Value
	parameters  jsontext.Value
}

// chatBody is a Chat request ready to be written: strings and raw values
// are as the client wrote them. With foldSystem (the backend has no system
// role) each run of system and user messages goes out as one user message,
// the system texts wrapped in <system>…</system>.
type chatBody struct {
	model             string
	msgs              []chatMsg
	turns             []chatTurn // the Responses translation's, made msgs by request
	foldSystem        bool
	tools             []chatTool
	toolChoice        jsontext.Value // written only with tools
	toolChoiceName    string         // a function named as tool_choice, in place of toolChoice
	parallelToolCalls *bool          // written only with tools
	maxTokens         *int64
	temperature, topP jsontext.Value
	topK              jsontext.Value
	stop              []string
	user              jsontext.Value // a raw JSON string
	reasoningEffort   string
	responseFormat    jsontext.Value
	stream            bool
}

// chatTurn is a Chat message under construction.
type chatTurn struct {
	role   string // system, user, assistant, tool
	parts  []turnPart
	calls  []toolCall
	callID string
}

// turnPart is text, or an image (a URL or data URL) when image is set: v,
// a raw JSON string as the client escaped it (it goes on to the backend
// without being unquoted and quoted again), or else s, a decoded string
// (a refusal, an image's URL) for the writer to quote.
type turnPart struct {
	v     jsontext.Value
	s     string
	image bool
}

// inside is the part's value as the inside of a JSON string.
func (p *turnPart) inside() []byte {
	if p.v != nil {
		return inner(p.v)
	}
	return quoteInner(p.s)
}

// msg is the turn as the Chat message the Messages translation writes
// too: system and user texts joined with a blank line, assistant and tool
// texts joined as they are, and a list of parts when there are images.
func (t *chatTurn) msg() chatMsg {
	m := chatMsg{role: t.role, calls: t.calls, callID: t.callID}
	for i := range m.calls {
		if c := &m.calls[i]; c.args != nil {
			c.input = callInput(unquoted(c.args))
		}
	}
	images := false
	for _, p := range t.parts {
		images = images || p.image
	}
	if images {
		m.parts = make([]part, len(t.parts))
		for i, p := range t.parts {
			m.parts[i] = part{image: p.image, segs: [][]byte{p.inside()}}
		}
		return m
	}
	if t.role == "assistant" && len(t.parts) == 0 {
		return m // content null
	}
	var sep []byte
	if t.role != "assistant" && t.role != "tool" {
		sep = sepPara
	}
	segs := make([][]byte, 0, 2*len(t.parts))
	for i, p := range t.parts {
		if i > 0 && sep != nil {
			segs = append(segs, sep)
		}
		segs = append(segs, p.inside())
	}
	m.str, m.parts = true, []part{{segs: segs}}
	return m
}

// request is the Chat request the Responses translation hands over, ready
// for the backend's target: it estimates the prompt it writes (one walk
// feeding promptEstimate), fits max_tokens to the window when the client
// asked for a limit (asked; nil: none), writes the body into a pooled
// buffer of about size bytes, and then lists the tools offered for calls
// written as text.
func (o *chatBody) request(target Target, asked *int64, size int) (BackendRequest, error) {
	o.model, o.foldSystem = target.BackendModel, !target.SupportsSystemMessage
	if !target.SupportsReasoningEffort {
		o.reasoningEffort = ""
	}
	breq := BackendRequest{Target: target, Stream: o.stream, InputTokens: o.estimate(target.Memo)}
	if asked != nil {
		n, err := fitOutput(*asked, breq.InputTokens, target)
		if err != nil {
			return BackendRequest{}, err
		}
		o.maxTokens, breq.MaxTokens = &n, int(min(n, 1<<31))
	}
	w := bufpool.Get(size)
	o.msgs = make([]chatMsg, len(o.turns))
	for i := range o.turns {
		o.msgs[i] = o.turns[i].msg()
	}
	breq.Body = o.append(w)
	breq.Tools = offeredTools(target, o.tools, chatOutToolOf)
	return breq, nil
}

// estimate is the promptEstimate of the turns and tools request writes;
// m is the client's connection's memo (Target.Memo).
func (o *chatBody) estimate(m *memo.Memo) int {
	e := promptEstimate{memo: m}
	for i := range o.turns {
		t := &o.turns[i]
		e.message()
		for j := range t.parts {
			switch p := &t.parts[j]; {
			case p.image:
				e.image()
			case p.v != nil:
				e.text(p.v)
			default:
				e.n += EstimateTokens(p.s)
			}
		}
		for _, c := range t.calls {
			if c.args != nil {
				c.input, _ = e.u.text(c.args)
			}
			e.toolCall(c.name, callInput(c.input))
		}
	}
	for i := range o.tools {
		t := &o.tools[i]
		e.n += toolOverhead + EstimateTokens(t.name)
		e.text(t.desc)
		if t.grammar != nil {
			e.n += EstimateTokens(t.grammarNote)
			e.text(t.grammar)
		}
		e.json(t.parameters)
	}
	return e.total()
}

// callInput is a call's arguments as the backend gets them: an empty or
// blank text is the empty object.
func callInput(in []byte) []byte {
	if len(bytes.TrimSpace(in)) == 0 {
		return emptyObject
	}
	return in
}

// append writes the Chat request: members in this order, zero ones left
// out, raw values as the client wrote them.
func (o *chatBody) append(w []byte) []byte {
	w = append(w, `{"model":`...)
	w = jsonquote.Append(w, o.model)
	w = append(w, `,"messages":`...)
	w = appendMessages(w, o.msgs, o.foldSystem)
	if len(o.tools) > 0 {
		w = append(w, `,"tools":[`...)
		for i := range o.tools {
			t := &o.tools[i]
			if i > 0 {
				w = append(w, ',')
			}
			w = append(w, `{"type":"function","function":{"name":`...)
			w = jsonquote.Append(w, t.name)
			if t.desc != nil || t.grammar != nil {
				w = append(w, `,"description":"`...)
				w = append(w, inner(t.desc)...)
				if t.grammar != nil {
					w = append(append(w, quoteInner(t.grammarNote)...), inner(t.grammar)...)
				}
				w = append(w, '"')
			}
			w = append(w, `,"parameters":`...)
			w = append(w, t.parameters...)
			w = append(w, `}}`...)
		}
		w = append(w, ']')
		if o.toolChoiceName != "" {
			w = append(w, `,"tool_choice":{"type":"function","function":{"name":`...)
			w = append(jsonquote.Append(w, o.toolChoiceName), `}}`...)
		} else if o.toolChoice != nil {
			w = append(w, `,"tool_choice":`...)
			w = append(w, o.toolChoice...)
		}
		if o.parallelToolCalls != nil {
			w = append(w, `,"parallel_tool_calls":`...)
			w = strconv.AppendBool(w, *o.parallelToolCalls)
		}
	}
	if o.maxTokens != nil {
		w = append(w, `,"max_tokens":`...)
		w = strconv.AppendInt(w, *o.maxTokens, 10)
	}
	if o.temperature != nil {
		w = append(append(w, `,"temperature":`...), o.temperature...)
	}
	if o.topP != nil {
		w = append(append(w, `,"top_p":`...), o.topP...)
	}
	if o.topK != nil {
		w = append(append(w, `,"top_k":`...), o.topK...)
	}
	if len(o.stop) > 0 {
		w = append(w, `,"stop":[`...)
		for i, s := range o.stop {
			if i > 0 {
				w = append(w, ',')
			}
			w = jsonquote.Append(w, s)
		}
		w = append(w, ']')
	}
	if o.user != nil {
		w = append(append(w, `,"user":`...), o.user...)
	}
	if o.reasoningEffort != "" {
		w = jsonquote.Append(append(w, `,"reasoning_effort":`...), o.reasoningEffort)
	}
	if o.responseFormat != nil {
		w = append(append(w, `,"response_format":`...), o.responseFormat...)
	}
	if o.stream {
		w = append(w, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(w, '}')
}

// appendMessages writes msgs as a Chat messages array. With fold, each
// run of consecutive system and user messages that holds a system message
// is written as one user message (appendFolded); the others as they are.
func appendMessages(w []byte, msgs []chatMsg, fold bool) []byte {
	w = append(w, '[')
	n := 0 // messages written
	for i := 0; i < len(msgs); {
		j := i + 1
		if fold {
			hasSystem := false
			for j = i; j < len(msgs) && (msgs[j].role == "system" || msgs[j].role == "user"); j++ {
				hasSystem = hasSystem || msgs[j].role == "system"
			}
			if hasSystem {
				m, ok := folded(msgs[i:j])
				if ok {
					if n > 0 {
						w = append(w, ',')
					}
					w = m.append(w)
					n++
				}
				i = j
				continue
			}
			j = max(j, i+1)
		}
		for ; i < j; i++ {
			if n > 0 {
				w = append(w, ',')
			}
			w = msgs[i].append(w)
			n++
		}
	}
	return append(w, ']')
}

// folded is one user message holding the contents of run in order, system
// ones wrapped in <system>…</system>; empty contents are left out. Its
// content is a string when every content is a string (joined with a blank
// line), else a list of parts. ok is false for a run of empty system
// messages alone: nothing to write.
func folded(run []chatMsg) (m chatMsg, ok bool) {
	type piece struct {
		segs  [][]byte // a text, when !list
		parts []part   // a list content
		list  bool
	}
	pieces := make([]piece, 0, len(run))
	allStrings, user := true, false
	for i := range run {
		r := &run[i]
		system := r.role == "system"
		user = user || !system
		var p piece
		if r.str {
			for _, s := range r.parts[0].segs {
				if len(s) > 0 {
					p.segs = r.parts[0].segs
					break
				}
			}
			if p.segs == nil {
				continue
			}
			if system {
				p.segs = append(append(append(make([][]byte, 0, len(p.segs)+2), sysOpen), p.segs...), sysClose)
			}
		} else {
			if len(r.parts) == 0 {
				continue
			}
			p.list, p.parts, allStrings = true, r.parts, false
			if system {
				p.parts = append(append([]part{{segs: [][]byte{sysOpen}}}, p.parts...), part{segs: [][]byte{sysClose}})
			}
		}
		pieces = append(pieces, p)
	}
	if len(pieces) == 0 && !user {
		return chatMsg{}, false
	}
	m.role = "user"
	if allStrings {
		segs := make([][]byte, 0, 2*len(pieces))
		for i, p := range pieces {
			if i > 0 {
				segs = append(segs, sepPara)
			}
			segs = append(segs, p.segs...)
		}
		m.str, m.parts = true, []part{{segs: segs}}
		return m, true
	}
	for _, p := range pieces {
		if p.list {
			m.parts = append(m.parts, p.parts...)
		} else {
			m.parts = append(m.parts, part{segs: p.segs})
		}
	}
	return m, true
}

// append writes the message as a Chat message object.
func (m *chatMsg) append(w []byte) []byte {
	w = append(w, `{"role":"`...)
	w = append(w, m.role...)
	w = append(w, `","content":`...)
	switch {
	case m.role == "assistant":
		if len(m.parts) == 0 {
			w = append(w, "null"...)
		} else {
			w = append(w, '"')
			for k, p := range m.parts {
				if k > 0 {
					w = append(w, sepPara...)
				}
				for _, s := range p.segs {
					w = append(w, s...)
				}
			}
			w = append(w, '"')
		}
		if len(m.calls) > 0 {
			w = append(w, `,"tool_calls":[`...)
			for k, c := range m.calls {
				if k > 0 {
					w = append(w, ',')
				}
				w = append(w, `{"id":`...)
				w = jsonquote.Append(w, c.id)
				w = append(w, `,"type":"function","function":{"name":`...)
				w = jsonquote.Append(w, c.name)
				w = append(w, `,"arguments":`...)
				w = jsonquote.Append(w, c.input)
				w = append(w, `}}`...)
			}
			w = append(w, ']')
		}
	case m.str:
		w = appendString(w, m.parts[0].segs)
	default:
		w = append(w, '[')
		for k, p := range m.parts {
			if k > 0 {
				w = append(w, ',')
			}
			if p.image {
				w = append(w, `{"type":"image_url","image_url":{"url":`...)
				w = appendString(w, p.segs)
				w = append(w, `}}`...)
			} else {
				w = append(w, `{"type":"text","text":`...)
				w = appendString(w, p.segs)
				w = append(w, '}')
			}
		}
		w = append(w, ']')
	}
	if m.role == "tool" {
		w = append(w, `,"tool_call_id":`...)
		w = jsonquote.Append(w, m.callID)
	}
	return append(w, '}')
}

// Raw JSON strings: the writer copies the client's texts as the client
// escaped them (the inside of a raw string is a segment of a part), and
// the routes that build its messages read them with these.

// emptyObject is the JSON value {}, for a call with no arguments.
var emptyObject = []byte(`{}`)

// appendString writes segs, each the inside of a JSON string (escaped,
// without quotes), as one JSON string.
func appendString(w []byte, segs [][]byte) []byte {
	w = append(w, '"')
	for _, s := range segs {
		w = append(w, s...)
	}
	return append(w, '"')
}

// inner returns the inside of a raw JSON string: escaped, without quotes.
func inner(v []byte) []byte {
	if len(v) < 2 {
		return nil
	}
	return v[1 : len(v)-1]
}

// textOf returns the inside of a text block's raw string; an absent or
// null text is empty. ok is false when the text is not a string.
func textOf(v []byte) (in []byte, ok bool) {
	switch jsontext.Value(v).Kind() {
	case '"':
		return inner(v), true
	case 'n', jsontext.KindInvalid:
		return nil, true
	}
	return nil, false
}

// unquoted returns the text of the valid JSON string v (quoted): its
// inside when it has no escapes, else a copy unescaped.
func unquoted(v []byte) []byte {
	in := inner(v)
	if bytes.IndexByte(in, '\\') < 0 {
		return in
	}
	s, _ := jsontext.AppendUnquote(nil, v)
	return s
}

// quoteInner escapes s as the inside of a JSON string.
func quoteInner(s string) []byte {
	q := jsonquote.Append(nil, s) // s came from a validated string
	return q[1 : len(q)-1]
}

// rawHasPrefix reports whether the raw JSON string v starts with prefix
// once unescaped.
func rawHasPrefix(v []byte, prefix string) bool {
	in := inner(v)
	if len(in) >= len(prefix) && string(in[:len(prefix)]) == prefix {
		return true
	}
	if bytes.IndexByte(in, '\\') < 0 {
		return false
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return err == nil && strings.HasPrefix(string(s), prefix)
}
