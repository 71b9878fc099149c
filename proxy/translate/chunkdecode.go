package translate

// Decoding a backend's Chat chunk: the scanner reads the usual shape in
// one pass, jsonv2 the rest. A stream's every event is a chunk, and
// jsonv2's decoding of them was the larger part of what a stream
// translator costs per event.

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
)

// chunkDecodeOptions are chunkOptions with repeated member names allowed,
// as the scanner allows them in the members it skips (jsonv2 decodes each
// in turn; before, such a chunk was dropped as not a chunk).
var chunkDecodeOptions = json.JoinOptions(chunkOptions, jsontext.AllowDuplicateNames(true))

// decodeChunk decodes one chunk's data into ck with d (reused from chunk
// to chunk, as ck and its Choices' array are). The result is jsonv2's with
// chunkDecodeOptions: the scanner decodes the usual shape, and gives up on
// anything whose result it is not sure matches (an error object, a
// repeated member, an escaped member name, a member of an unexpected kind,
// text that is not valid UTF-8); jsonv2 then decodes it, and its error is
// returned.
func decodeChunk(d *fastDecoder, data []byte, ck *chat.Chunk) error {
	choices, id, model := ck.Choices[:0], ck.ID, ck.Model
	*ck = chat.Chunk{Choices: choices}
	*d = fastDecoder{sc: scanner{b: data}}
	if d.chunk(ck, id, model) && d.sc.ws() == 0 && d.sc.i == len(data) {
		return nil
	}
	*ck = chat.Chunk{Choices: choices}
	return json.Unmarshal(data, ck, chunkDecodeOptions)
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

// nullInt reads an integer, or null (leaving *dst as it is).
func (d *fastDecoder) nullInt(dst *int, k byte) bool {
	if k == 'n' {
		return d.skip()
	}
	var n int64
	if !d.integer(&n) || int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return true
}

// decodeChatResponse decodes a backend's non-stream Chat answer into resp
// (zero): the result is jsonv2's with decodeOpts. The scanner decodes the
// usual shape in one pass, and gives up, as decodeChunk's does, on
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
