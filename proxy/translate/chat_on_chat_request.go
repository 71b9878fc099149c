package translate

import (
	"bytes"
	"math"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
)

// ChatOnChatRequest prepares a Chat Completions request for pass-through. Only
// what must change is rewritten, in place; every other byte of the body
// reaches the backend as the client sent it:
//   - model becomes Target.BackendModel;
//   - max_tokens and max_completion_tokens are clamped to
//     Target.MaxOutputTokens when it is set, else to what a known
//     Target.ContextWindow leaves beside the estimated prompt; a prompt
//     that cannot fit is a *ContextOverflowError;
//   - when !Target.SupportsSystemMessage, each system or developer message
//     becomes user text wrapped in <system>…</system>, merged with the user
//     messages next to it (a leading system prompt so lands at the top of
//     the first user turn). Content may be a string or a list of parts: a
//     list stays a list (strings join it as text parts), never a string.
//
// BackendRequest.Stream is the request's stream flag.
func ChatOnChatRequest(body []byte, resolve Resolver) (BackendRequest, error) {
	top, err := scanObject(body, true, func(name []byte) bool {
		switch string(name) {
		case "model", "messages", "max_tokens", "max_completion_tokens", "stream", "tools":
			return true
		}
		return false
	})
	if err != nil {
		return BackendRequest{}, err
	}
	target, stream, rename, err := passThroughTarget(top, resolve)
	if err != nil {
		return BackendRequest{}, err
	}
	msgs, ok := top.get("messages")
	if !ok || msgs.value.Kind() != '[' {
		return BackendRequest{}, invalidf("messages: required (an array of messages)")
	}
	if len(top.msgs) == 0 {
		return BackendRequest{}, invalidf("messages: must not be empty")
	}

	edits := []edit{rename}
	prompt := 0
	if target.ContextWindow > 0 {
		tools, _ := top.get("tools")
		prompt = estimateChat(top.msgs, tools.value, target.Memo)
		if _, err := fitOutput(0, prompt, target); err != nil {
			return BackendRequest{}, err
		}
	}
	maxTokens := 0
	for _, name := range [...]string{"max_tokens", "max_completion_tokens"} {
		v, ok := top.get(name)
		if !ok {
			continue
		}
		switch v.value.Kind() {
		case 'n':
			continue
		case '0':
		default:
			return BackendRequest{}, invalidf("%s: must be a number, got %s", name, kindName(v.value.Kind()))
		}
		n, err := strconv.ParseFloat(string(v.value), 64)
		if err != nil {
			return BackendRequest{}, invalidf("%s: must be a number", name)
		}
		if n != math.Trunc(n) {
			return BackendRequest{}, invalidf("%s: must be a whole number of tokens, got %s", name, v.value)
		}
		if n < 1 {
			return BackendRequest{}, invalidf("%s: must be at least 1, got %s", name, v.value)
		}
		if fit, _ := fitOutput(int64(min(n, 1<<53)), prompt, target); float64(fit) < n {
			edits = append(edits, edit{v.start, v.end, strconv.AppendInt(nil, fit, 10)})
			n = float64(fit)
		}
		maxTokens = int(min(n, 1<<31))
	}
	if !target.SupportsSystemMessage {
		out, changed, err := foldSystemMessages(top.msgs, len(msgs.value))
		if err != nil {
			return BackendRequest{}, err
		}
		if changed {
			edits = append(edits, edit{msgs.start, msgs.end, out})
		}
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	return BackendRequest{Body: splice(body, edits), Target: target, Stream: stream, InputTokens: prompt, MaxTokens: maxTokens, Tools: rawTools(target, &top, false)}, nil
}

// chatMessage is one element of a Chat messages array, as scanned: its
// raw bytes, role, content, and its other members (name and value, raw).
type chatMessage struct {
	raw     []byte
	role    string
	content jsontext.Value
	rest    [][2][]byte
	system  bool // a system or developer message, turned into user text
}

// foldSystemMessages rewrites a messages array, scanned into msgs, so no
// system or developer role remains. changed is false (and out nil) when
// there was none. size is the array's length in bytes.
func foldSystemMessages(msgs []chatMessage, size int) (out []byte, changed bool, err error) {
	for i := range msgs {
		if msgs[i].role == "system" || msgs[i].role == "developer" {
			msgs[i].system = true
			changed = true
		}
	}
	if !changed {
		return nil, false, nil
	}
	w := make([]byte, 0, size+64)
	w = append(w, '[')
	n := 0 // messages written
	for i := 0; i < len(msgs); {
		// A group: consecutive user messages with at least one that was a
		// system message; anything else is copied as it came.
		j := i
		hasSystem := false
		for j < len(msgs) && (msgs[j].system || msgs[j].role == "user") {
			hasSystem = hasSystem || msgs[j].system
			j++
		}
		if j > i && hasSystem {
			mark := len(w)
			if n > 0 {
				w = append(w, ',')
			}
			var wrote bool
			w, wrote, err = appendMergedUser(w, msgs[i:j])
			if err != nil {
				return nil, false, err
			}
			if wrote {
				n++
			} else {
				w = w[:mark]
			}
			i = j
			continue
		}
		if j == i {
			j = i + 1
		}
		for k := i; k < j; k++ {
			if n > 0 {
				w = append(w, ',')
			}
			w = append(w, msgs[k].raw...)
			n++
		}
		i = j
	}
	return append(w, ']'), true, nil
}

// scanMessages reads the messages array next at the scanner, in body, in
// the same pass that validates it. Raw bytes are slices of body.
func scanMessages(sc *jsonscan.Scanner, body []byte) ([]chatMessage, error) {
	var msgs []chatMessage
	err := sc.Elements(func(i int) error {
		start := sc.Pos()
		if sc.Peek() != '{' {
			if _, err := sc.Value(); err != nil {
				return err
			}
			return invalidf("messages.%d: must be an object", i)
		}
		var m chatMessage
		err := sc.Members(func(name []byte) error {
			val, err := sc.Value()
			if err != nil {
				return err
			}
			switch string(name) {
			case `"role"`:
				if jsontext.Value(val).Kind() != '"' || json.Unmarshal(val, &m.role) != nil {
					return invalidf("messages.%d.role: must be a string", i)
				}
			case `"content"`:
				m.content = val
			default:
				m.rest = append(m.rest, [2][]byte{name, val})
			}
			return nil
		})
		if err != nil {
			return err
		}
		m.raw = bytes.TrimLeft(body[start:sc.Pos()], " \t\r\n,")
		msgs = append(msgs, m)
		return nil
	})
	return msgs, err
}

// appendMergedUser writes one user message holding the contents of msgs
// in order, system ones wrapped in <system>…</system>. The content is a
// string when every content is a string (joined with a blank line), else
// a list of parts. Members other than role and content come from the first
// user message of the group. Nothing is written (wrote false) for a group
// of empty system messages alone.
func appendMergedUser(w []byte, msgs []chatMessage) (_ []byte, wrote bool, _ error) {
	type piece struct {
		segs  [][]byte // a text, escaped, when !list
		parts [][]byte // raw elements of a list content
		list  bool
	}
	pieces := make([]piece, 0, len(msgs))
	allStrings := true
	var rest [][2][]byte
	restSet := false
	for i := range msgs {
		m := &msgs[i]
		if !m.system && !restSet {
			rest, restSet = m.rest, true
		}
		var p piece
		switch m.content.Kind() {
		case '"':
			if len(m.content) > 2 {
				p.segs = [][]byte{inner(m.content)}
			}
		case '[':
			parts, texts, allText, err := scanParts(m.content, m.system)
			if err != nil {
				return nil, false, err
			}
			if m.system && allText {
				p.segs = texts
			} else {
				p.list, p.parts = true, parts
				allStrings = false
			}
		case 'n', jsontext.KindInvalid:
		default:
			return nil, false, invalidf("messages: content must be a string, an array of parts or null")
		}
		if m.system && (p.segs != nil || p.list) {
			if p.list {
				p.parts = append(append([][]byte{textPart([][]byte{sysOpen})}, p.parts...), textPart([][]byte{sysClose}))
			} else {
				p.segs = append(append([][]byte{sysOpen}, p.segs...), sysClose)
			}
		}
		if p.segs != nil || len(p.parts) > 0 {
			pieces = append(pieces, p)
		}
	}
	if len(pieces) == 0 && !restSet {
		return w, false, nil
	}
	w = append(w, `{"role":"user","content":`...)
	if allStrings {
		w = append(w, '"')
		for i, p := range pieces {
			if i > 0 {
				w = append(w, sepPara...)
			}
			for _, s := range p.segs {
				w = append(w, s...)
			}
		}
		w = append(w, '"')
	} else {
		w = append(w, '[')
		n := 0
		for _, p := range pieces {
			elems := p.parts
			if !p.list {
				elems = [][]byte{textPart(p.segs)}
			}
			for _, e := range elems {
				if n > 0 {
					w = append(w, ',')
				}
				n++
				w = append(w, e...)
			}
		}
		w = append(w, ']')
	}
	for _, kv := range rest {
		w = append(w, ',')
		w = append(w, kv[0]...)
		w = append(w, ':')
		w = append(w, kv[1]...)
	}
	return append(w, '}'), true, nil
}

// scanParts reads a list content: its raw elements, and when texts is set
// the texts of its text parts (escaped, joined with blank lines), with
// allText reporting whether every part is a text part.
func scanParts(list jsontext.Value, texts bool) (parts, joined [][]byte, allText bool, err error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(list), decodeOpts)
	if _, err := dec.ReadToken(); err != nil {
		return nil, nil, false, decodeError(err)
	}
	allText = texts
	for dec.PeekKind() != ']' {
		e, err := dec.ReadValue()
		if err != nil {
			return nil, nil, false, decodeError(err)
		}
		parts = append(parts, e)
		if !allText {
			continue
		}
		var p struct {
			Type string         `json:"type"`
			Text jsontext.Value `json:"text"`
		}
		if e.Kind() != '{' || json.Unmarshal(e, &p, decodeOpts, aliasRaw) != nil || p.Type != "text" || p.Text.Kind() != '"' {
			allText = false
			continue
		}
		if len(joined) > 0 {
			joined = append(joined, sepPara)
		}
		joined = append(joined, inner(p.Text))
	}
	if len(joined) == 0 {
		allText = false
	}
	return parts, joined, allText, nil
}

func textPart(segs [][]byte) []byte {
	b := []byte(`{"type":"text","text":"`)
	for _, s := range segs {
		b = append(b, s...)
	}
	return append(b, `"}`...)
}
