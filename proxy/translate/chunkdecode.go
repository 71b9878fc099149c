package translate

// Decoding a backend's Chat chunk: the scanner reads the usual shape in
// one pass, jsonv2 the rest. A stream's every event is a chunk, and
// jsonv2's decoding of them was the larger part of what a stream
// translator costs per event.

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
)

// chunkDecodeOptions are chunkOptions with repeated member names allowed,
// as the scanner allows them in the members it skips (jsonv2 decodes each
// in turn; before, such a chunk was dropped as not a chunk).
var chunkDecodeOptions = json.JoinOptions(chunkOptions, jsontext.AllowDuplicateNames(true))

// chunkDecoder decodes the chunks of one stream, one after another, into
// one chat.Chunk it is given each time (the caller's, reused from chunk to
// chunk, as its Choices' array is).
//
// In a stream of text, a chunk differs from the one before it only in the
// text its delta carries: the decoder keeps a copy of the last chunk the
// quick path read (memo) and where its delta's text string stands. A
// chunk whose bytes before and after that string are memo's, and which
// has one whole JSON string in its place, decodes to the chunk before
// with that string's text: only the string is read. JSON's grammar makes
// it so: the same bytes before it read the same way; the string ends
// where the scanner says; the same bytes after it then read as they did.
type chunkDecoder struct {
	fastDecoder
	// The delta text the quick path read last (of choice 0, the only
	// one): the string data[textAt:textEnd], for field textField (0: none).
	textAt, textEnd int
	textField       deltaField

	memo           []byte // the chunk last decoded, if it was memo's kind; else empty
	memoAt, memoTo int    // memo[memoAt:memoTo] is its text string
	memoField      deltaField
}

// deltaField names a text member of a chunk's delta.
type deltaField uint8

const (
	noText deltaField = iota
	textContent
	textReasoningContent
	textReasoning
	textRefusal
)

// deltaText returns the field of dl that f names.
func deltaText(dl *chat.Delta, f deltaField) *string {
	switch f {
	case textContent:
		return &dl.Content
	case textReasoningContent:
		return &dl.ReasoningContent
	case textReasoning:
		return &dl.Reasoning
	}
	return &dl.Refusal
}

// decode decodes one chunk's data into ck, which holds the chunk decode
// decoded before, unchanged (or a zero chunk). The result is jsonv2's
// with chunkDecodeOptions: the scanner decodes the usual shape, and gives
// up on anything whose result it is not sure matches (an error object, a
// repeated member, an escaped member name, a member of an unexpected kind,
// text that is not valid UTF-8); jsonv2 then decodes it, and its error is
// returned.
func (cd *chunkDecoder) decode(data []byte, ck *chat.Chunk) error {
	if cd.again(data, ck) {
		return nil
	}
	cd.memo = cd.memo[:0]
	// After a chunk with tool calls, whose fragments come one chunk after
	// another, the quick path, which leaves them to chunk, is not tried.
	tools := len(ck.Choices) > 0 && len(ck.Choices[0].Delta.ToolCalls) > 0
	choices, id, model := ck.Choices[:0], ck.ID, ck.Model
	*ck = chat.Chunk{Choices: choices}
	cd.fastDecoder = fastDecoder{sc: scanner{b: data}}
	cd.textField = noText
	if !tools && cd.quickChunk(ck, id, model) && cd.sc.ws() == 0 && cd.sc.i == len(data) {
		if cd.textField != noText && len(ck.Choices) == 1 && ck.Choices[0].StopReason == nil {
			// (A stop_reason's raw value would be memo's, not data's.)
			cd.memo = append(cd.memo, data...)
			cd.memoAt, cd.memoTo, cd.memoField = cd.textAt, cd.textEnd, cd.textField
		}
		return nil
	}
	*ck = chat.Chunk{Choices: choices}
	cd.fastDecoder = fastDecoder{sc: scanner{b: data}}
	if cd.chunk(ck, id, model) && cd.sc.ws() == 0 && cd.sc.i == len(data) {
		return nil
	}
	*ck = chat.Chunk{Choices: choices}
	return json.Unmarshal(data, ck, chunkDecodeOptions)
}

// again decodes data into ck, memo's chunk, when data is memo with
// another text string (one whole JSON string, read as the quick path
// reads it): it sets that text and reports true; else it changes nothing.
func (cd *chunkDecoder) again(data []byte, ck *chat.Chunk) bool {
	m := cd.memo
	if len(m) == 0 || len(data) < len(m)-(cd.memoTo-cd.memoAt)+2 || data[cd.memoAt] != '"' || !bytes.Equal(data[:cd.memoAt], m[:cd.memoAt]) {
		return false
	}
	cd.fastDecoder = fastDecoder{sc: scanner{b: data, i: cd.memoAt}}
	var text string
	if !cd.str(&text) || !bytes.Equal(data[cd.sc.i:], m[cd.memoTo:]) {
		return false
	}
	*deltaText(&ck.Choices[0].Delta, cd.memoField) = text
	return true
}

// quickChunk reads the chunk of a text or reasoning stream, nearly every
// chunk of one, as chunk does, to the same result, with one closure a
// member where chunk has three (the usual chunk of a stream is read
// again, not with this: chunkDecoder). It gives up (false) on what it
// leaves to chunk: a tool call, a usage object, an error, a member name
// that is not plain ASCII; the caller then decodes the chunk again from
// its start.
func (d *chunkDecoder) quickChunk(ck *chat.Chunk, id, model string) bool {
	return d.quickObject(func(name []byte, k byte, mask *uint32) bool {
		switch string(name) {
		case "id":
			return seen(mask, 0) && d.nullStrAs(&ck.ID, k, id)
		case "model":
			return seen(mask, 1) && d.nullStrAs(&ck.Model, k, model)
		case "choices":
			return seen(mask, 2) && (k == 'n' && d.skip() || k == '[' && d.quickChoices(&ck.Choices))
		case "usage":
			return seen(mask, 3) && k == 'n' && d.skip()
		case "error":
			return false
		}
		return d.skip()
	})
}

// quickChoices appends the choices of the array at the scanner (its '['
// next) to *dst, as chunkChoices does.
func (d *chunkDecoder) quickChoices(dst *[]chat.ChunkChoice) bool {
	done, err := d.sc.open(']')
	for !done && err == nil {
		*dst = append(*dst, chat.ChunkChoice{})
		if !d.quickChoice(&(*dst)[len(*dst)-1]) {
			return false
		}
		done, err = d.sc.next(']', "array element")
	}
	return err == nil
}

func (d *chunkDecoder) quickChoice(ch *chat.ChunkChoice) bool {
	return d.quickObject(func(name []byte, k byte, mask *uint32) bool {
		if string(name) == "delta" {
			return seen(mask, 1) && (k == 'n' && d.skip() || k != 'n' && d.quickDelta(&ch.Delta))
		}
		if known, ok := d.choiceMember(name, k, mask, &ch.Index, &ch.FinishReason, &ch.StopReason); known {
			return ok
		}
		return d.skip()
	})
}

// quickDelta reads a delta as delta does, but for its tool calls (only
// null), and notes where its text string is.
func (d *chunkDecoder) quickDelta(dl *chat.Delta) bool {
	return d.quickObject(func(name []byte, k byte, mask *uint32) bool {
		at := d.sc.i
		var field deltaField
		switch string(name) {
		case "content":
			if !seen(mask, 1) || !d.nullStr(&dl.Content, k) {
				return false
			}
			field = textContent
		case "tool_calls":
			return seen(mask, 5) && k == 'n' && d.skip()
		default:
			known, ok := d.assistantMember(name, k, mask, &dl.Role, &dl.ReasoningContent, &dl.Reasoning, &dl.Refusal)
			if !known {
				return d.skip()
			}
			if !ok {
				return false
			}
			switch string(name) {
			case "reasoning_content":
				field = textReasoningContent
			case "reasoning":
				field = textReasoning
			case "refusal":
				field = textRefusal
			}
		}
		if field != noText && k == '"' {
			d.textAt, d.textEnd, d.textField = at, d.sc.i, field
		}
		return true
	})
}

// quickObject reads the object at the scanner: member is given each
// member's name (plain ASCII), the kind of its value and the object's
// seen mask, and reads the value (false: give up).
func (d *chunkDecoder) quickObject(member func(name []byte, k byte, mask *uint32) bool) bool {
	if d.sc.ws() != '{' {
		return false
	}
	mask := d.enter()
	done, err := d.sc.open('}')
	for !done && err == nil {
		if name, k, ok := d.quickName(); !ok || !member(name, k, mask) {
			err = errGiveUp
			break
		}
		done, err = d.sc.next('}', "object member")
	}
	d.depth--
	return err == nil
}

// quickName reads a member's name, plain ASCII, and the ':' after it, and
// returns the kind of its value (its first byte). The name is found eight
// bytes a turn (special), as scanner.str finds a short string's end.
func (d *fastDecoder) quickName() (name []byte, k byte, ok bool) {
	s := &d.sc
	if s.ws() != '"' {
		return nil, 0, false
	}
	b, start := s.b, s.i+1
	j := start
	for ; len(b)-j >= 8; j += 8 {
		if m := special(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			j += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for j < len(b) && b[j] >= 0x20 && b[j] < 0x80 && b[j] != '"' && b[j] != '\\' {
		j++
	}
	if j >= len(b) || b[j] != '"' {
		return nil, 0, false
	}
	s.i = j + 1
	if s.ws() != ':' {
		return nil, 0, false
	}
	s.i++
	return b[start:j], s.ws(), true
}

// A member whose value is null is left zero, as jsonv2 leaves it.

// chunk reads a chunk; id and model are the previous chunk's, whose
// strings are kept when they come again (they do in every chunk).
func (d *fastDecoder) chunk(ck *chat.Chunk, id, model string) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "id":
			return true, seen(mask, 0) && d.nullStrAs(&ck.ID, k, id)
		case "model":
			return true, seen(mask, 1) && d.nullStrAs(&ck.Model, k, model)
		case "choices":
			if read, ok := d.present(mask, 2, k); !read {
				return true, ok
			}
			return true, k == '[' && d.chunkChoices(&ck.Choices)
		case "usage":
			if read, ok := d.present(mask, 3, k); !read {
				return true, ok
			}
			ck.Usage = new(chat.Usage)
			return true, k == '{' && d.small(ck.Usage)
		case "error":
			return true, false // jsonv2 reads error objects
		}
		return false, false
	})
}

// chunkChoices appends the choices to *dst, each decoded into a zero
// ChunkChoice.
func (d *fastDecoder) chunkChoices(dst *[]chat.ChunkChoice) bool {
	return d.elements(func() bool {
		*dst = append(*dst, chat.ChunkChoice{})
		ch := &(*dst)[len(*dst)-1]
		return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
			if string(name) == "delta" {
				if read, ok := d.present(mask, 1, k); !read {
					return true, ok
				}
				return true, d.delta(&ch.Delta)
			}
			return d.choiceMember(name, k, mask, &ch.Index, &ch.FinishReason, &ch.StopReason)
		})
	})
}

// choiceMember reads the members a choice and a chunk's choice share
// (mask bits 0, 2 and 3; the message or delta, bit 1, is the caller's):
// known is false for another name.
func (d *fastDecoder) choiceMember(name []byte, k byte, mask *uint32, index *int, finishReason *string, stopReason *jsontext.Value) (known, ok bool) {
	switch string(name) {
	case "index":
		return true, seen(mask, 0) && d.nullInt(index, k)
	case "finish_reason":
		return true, seen(mask, 2) && d.nullStrAs(finishReason, k, "stop")
	case "stop_reason":
		return true, d.rawMember(stopReason, mask, 3)
	}
	return false, false
}

func (d *fastDecoder) delta(dl *chat.Delta) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "content":
			return true, seen(mask, 1) && d.nullStr(&dl.Content, k)
		case "tool_calls":
			if read, ok := d.present(mask, 5, k); !read {
				return true, ok
			}
			return true, k == '[' && list(d, &dl.ToolCalls, 1, d.toolCallDelta)
		}
		return d.assistantMember(name, k, mask, &dl.Role, &dl.ReasoningContent, &dl.Reasoning, &dl.Refusal)
	})
}

// assistantMember reads the members a message and a chunk's delta share
// (mask bits 0, 2, 3 and 4; content and tool_calls, bits 1 and 5, are the
// caller's): known is false for another name.
func (d *fastDecoder) assistantMember(name []byte, k byte, mask *uint32, role, reasoningContent, reasoning, refusal *string) (known, ok bool) {
	switch string(name) {
	case "role":
		return true, seen(mask, 0) && d.nullStrAs(role, k, "assistant")
	case "reasoning_content":
		return true, seen(mask, 2) && d.nullStr(reasoningContent, k)
	case "reasoning":
		return true, seen(mask, 3) && d.nullStr(reasoning, k)
	case "refusal":
		return true, seen(mask, 4) && d.nullStr(refusal, k)
	}
	return false, false
}

func (d *fastDecoder) toolCallDelta(tc *chat.ToolCallDelta) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "index":
			return true, seen(mask, 0) && d.nullInt(&tc.Index, k)
		case "id":
			return true, seen(mask, 1) && d.nullStr(&tc.ID, k)
		case "type":
			return true, seen(mask, 2) && d.nullStrAs(&tc.Type, k, "function")
		case "function":
			if read, ok := d.present(mask, 3, k); !read {
				return true, ok
			}
			return true, d.function(&tc.Function.Name, &tc.Function.Arguments)
		}
		return false, false
	})
}

// function reads a tool call's function object: its name and arguments.
func (d *fastDecoder) function(name, arguments *string) bool {
	return d.objectNulls(true, func(member []byte, k byte, mask *uint32) (bool, bool) {
		switch string(member) {
		case "name":
			return true, seen(mask, 0) && d.nullStr(name, k)
		case "arguments":
			return true, seen(mask, 1) && d.nullStr(arguments, k)
		}
		return false, false
	})
}

// present notes member bit of an object and reports whether its value is
// to be read: not when it is null (skipped, ok) or the member repeats (not
// ok).
func (d *fastDecoder) present(mask *uint32, bit uint, k byte) (read, ok bool) {
	if !seen(mask, bit) {
		return false, false
	}
	if k == 'n' {
		return false, d.skip()
	}
	return true, true
}

// nullStr reads a string, or null (leaving *dst as it is).
func (d *fastDecoder) nullStr(dst *string, k byte) bool {
	if k == 'n' {
		return d.skip()
	}
	return k == '"' && d.str(dst)
}

// nullStrAs reads a string, or null, as nullStr does; a string without
// escapes whose text is usual's takes usual, allocating nothing.
func (d *fastDecoder) nullStrAs(dst *string, k byte, usual string) bool {
	if k == '"' && d.sc.i+len(usual)+1 < len(d.sc.b) && d.sc.b[d.sc.i+len(usual)+1] == '"' && string(d.sc.b[d.sc.i+1:d.sc.i+len(usual)+1]) == usual {
		_, ok := d.raw()
		*dst = usual
		return ok
	}
	return d.nullStr(dst, k)
}

// nullInt reads an integer, or null (leaving *dst as it is). A single
// digit, a choice's index, is read at once.
func (d *fastDecoder) nullInt(dst *int, k byte) bool {
	if k == 'n' {
		return d.skip()
	}
	if b, i := d.sc.b, d.sc.i; k >= '0' && k <= '9' && i+1 < len(b) && !numberGoesOn(b[i+1]) {
		*dst = int(k - '0')
		d.sc.i++
		return true
	}
	var n int64
	if !d.integer(&n) || int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return true
}

// numberGoesOn reports whether c, after a number's first digit, is more
// of the number (or makes it malformed: "01").
func numberGoesOn(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' }

// decodeChatResponse decodes a backend's non-stream Chat answer into resp
// (zero): the result is jsonv2's with decodeOpts. The scanner decodes the
// usual shape in one pass, and gives up, as chunkDecoder.decode does, on
// anything whose result it is not sure matches; jsonv2 then decodes it,
// and its error is returned. jsonv2's set-up alone cost more than the
// rest of a short answer's translation.
func decodeChatResponse(body []byte, resp *chat.Response) error {
	d := fastDecoder{sc: scanner{b: body}}
	if d.chatResponse(resp) && d.sc.ws() == 0 && d.sc.i == len(body) {
		return nil
	}
	*resp = chat.Response{}
	return json.Unmarshal(body, resp, decodeOpts)
}

func (d *fastDecoder) chatResponse(r *chat.Response) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "id":
			return true, seen(mask, 0) && d.nullStr(&r.ID, k)
		case "object":
			return true, seen(mask, 1) && d.nullStrAs(&r.Object, k, "chat.completion")
		case "created":
			if read, ok := d.present(mask, 2, k); !read {
				return true, ok
			}
			return true, d.integer(&r.Created)
		case "model":
			return true, seen(mask, 3) && d.nullStr(&r.Model, k)
		case "choices":
			if read, ok := d.present(mask, 4, k); !read {
				return true, ok
			}
			return true, k == '[' && list(d, &r.Choices, 1, d.chatChoice)
		case "usage":
			if read, ok := d.present(mask, 5, k); !read {
				return true, ok
			}
			r.Usage = new(chat.Usage)
			return true, k == '{' && d.usage(r.Usage)
		}
		return false, false
	})
}

func (d *fastDecoder) chatChoice(ch *chat.Choice) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		if string(name) == "message" {
			if read, ok := d.present(mask, 1, k); !read {
				return true, ok
			}
			return true, d.chatMessage(&ch.Message)
		}
		return d.choiceMember(name, k, mask, &ch.Index, &ch.FinishReason, &ch.StopReason)
	})
}

func (d *fastDecoder) chatMessage(m *chat.Message) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "content":
			if read, ok := d.present(mask, 1, k); !read {
				return true, ok
			}
			m.Content = new(string)
			return true, k == '"' && d.str(m.Content)
		case "tool_calls":
			if read, ok := d.present(mask, 5, k); !read {
				return true, ok
			}
			return true, k == '[' && list(d, &m.ToolCalls, 1, d.chatToolCall)
		}
		return d.assistantMember(name, k, mask, &m.Role, &m.ReasoningContent, &m.Reasoning, &m.Refusal)
	})
}

func (d *fastDecoder) chatToolCall(tc *chat.ToolCall) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "id":
			return true, seen(mask, 0) && d.nullStr(&tc.ID, k)
		case "type":
			return true, seen(mask, 1) && d.nullStrAs(&tc.Type, k, "function")
		case "function":
			if read, ok := d.present(mask, 2, k); !read {
				return true, ok
			}
			return true, d.function(&tc.Function.Name, &tc.Function.Arguments)
		}
		return false, false
	})
}

// usage reads a usage object into u (zero).
func (d *fastDecoder) usage(u *chat.Usage) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "prompt_tokens":
			return true, seen(mask, 0) && d.nullInt(&u.PromptTokens, k)
		case "completion_tokens":
			return true, seen(mask, 1) && d.nullInt(&u.CompletionTokens, k)
		case "total_tokens":
			return true, seen(mask, 2) && d.nullInt(&u.TotalTokens, k)
		case "prompt_tokens_details":
			if read, ok := d.present(mask, 3, k); !read {
				return true, ok
			}
			p := new(chat.PromptTokensDetails)
			u.PromptTokensDetails = p
			return true, d.oneInt(&p.CachedTokens, "cached_tokens")
		case "completion_tokens_details":
			if read, ok := d.present(mask, 4, k); !read {
				return true, ok
			}
			c := new(chat.CompletionTokensDetails)
			u.CompletionTokensDetails = c
			return true, d.oneInt(&c.ReasoningTokens, "reasoning_tokens")
		}
		return false, false
	})
}

// oneInt reads an object of which only the integer member field is
// kept.
func (d *fastDecoder) oneInt(dst *int, field string) bool {
	return d.objectNulls(true, func(name []byte, k byte, mask *uint32) (bool, bool) {
		if string(name) != field {
			return false, false
		}
		return true, seen(mask, 0) && d.nullInt(dst, k)
	})
}
