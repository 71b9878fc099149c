package translate

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// decodeRequestFast decodes the usual shape of a Messages request with the
// scanner, which validates the body in one pass and skips over string text
// far faster than jsonv2's tokenizer: profiles of the proxy put jsonv2's
// decoding of a coding client's 50 KB request at a quarter of its CPU.
// The big members (messages, system, tools) are read here; the small ones
// are handed to jsonv2 as raw slices. It gives up, reporting false, on
// anything whose result it is not sure matches jsonv2's exactly: a
// malformed body, a member of an unexpected kind, null, a repeated member,
// an escaped member name. (Like jsonv2, it matches member names exactly:
// "Model" is an unknown member, skipped.)
// The caller then decodes with jsonv2, which also words the error.
// Raw values alias body, as with decodeRequest.
func decodeRequestFast(body []byte, req *messages.Request) bool {
	d := fastDecoder{sc: scanner{b: body}}
	if !d.request(req) {
		*req = messages.Request{}
		return false
	}
	return true
}

type fastDecoder struct {
	sc scanner
	// masks are the seen masks of the objects being read, one per level
	// of nesting: object hands f a pointer to one, which would otherwise
	// be allocated for every object read.
	masks [8]uint32
	depth int
}

// errGiveUp stops the scanner's loops when the fast decoder gives up.
var errGiveUp = errors.New("translate: the fast decoder gives up")

// members calls f for each member of the object at the scanner (its '{'
// next), with the member's name and the kind of its value; f consumes the
// value. Escaped names give up.
func (d *fastDecoder) members(f func(name []byte, kind byte) bool) bool {
	if d.sc.ws() != '{' {
		return false
	}
	return d.sc.members(func(raw []byte) error {
		if bytes.IndexByte(raw, '\\') >= 0 || !f(raw[1:len(raw)-1], d.sc.ws()) {
			return errGiveUp
		}
		return nil
	}) == nil
}

// elements calls f for each element of the array at the scanner (its '['
// next).
func (d *fastDecoder) elements(f func() bool) bool {
	if d.sc.ws() != '[' {
		return false
	}
	return d.sc.elements(func(int) error {
		if !f() {
			return errGiveUp
		}
		return nil
	}) == nil
}

func (d *fastDecoder) raw() (jsontext.Value, bool) {
	v, err := d.sc.value()
	return v, err == nil
}

// str reads a string value.
func (d *fastDecoder) str(dst *string) bool {
	v, ok := d.raw()
	if !ok || len(v) < 2 || v[0] != '"' {
		return false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		*dst = knownName(v[1 : len(v)-1])
		return true
	}
	// The scanner validated v: unquoting it gives what jsonv2 would.
	var buf [128]byte
	text, err := jsontext.AppendUnquote(buf[:0], v)
	*dst = string(text)
	return err == nil
}

// small decodes a member with jsonv2, as decodeRequest would.
func (d *fastDecoder) small(dst any) bool {
	v, ok := d.raw()
	return ok && json.Unmarshal(v, dst, decodeOpts, aliasRaw) == nil
}

// seen notes a member; a repeated one gives up (jsonv2 merges some).
func seen(mask *uint32, bit uint) bool {
	if *mask&(1<<bit) != 0 {
		return false
	}
	*mask |= 1 << bit
	return true
}

func (d *fastDecoder) request(req *messages.Request) bool {
	ok := d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "model":
			return true, d.strMember(&req.Model, k, mask, 0)
		case "messages":
			return true, seen(mask, 1) && k == '[' && d.messageList(&req.Messages)
		case "system":
			return true, seen(mask, 2) && d.content(&req.System, k)
		case "max_tokens":
			var n int64
			if !seen(mask, 3) || !d.integer(&n) {
				return true, false
			}
			req.MaxTokens = &n
			return true, true
		case "tools":
			return true, seen(mask, 4) && k == '[' && d.toolList(&req.Tools)
		case "tool_choice":
			req.ToolChoice = new(messages.ToolChoice)
			return true, seen(mask, 5) && d.toolChoice(req.ToolChoice)
		case "stop_sequences":
			return true, seen(mask, 6) && k == '[' && d.strings(&req.StopSequences)
		case "temperature":
			return true, d.rawMember(&req.Temperature, mask, 7)
		case "top_p":
			return true, d.rawMember(&req.TopP, mask, 8)
		case "top_k":
			return true, d.rawMember(&req.TopK, mask, 9)
		case "metadata":
			req.Metadata = new(messages.Metadata)
			return true, seen(mask, 10) && d.metadata(req.Metadata)
		case "stream":
			return true, seen(mask, 11) && d.boolean(&req.Stream, k)
		case "thinking":
			req.Thinking = new(messages.Thinking)
			return true, seen(mask, 12) && d.thinking(req.Thinking)
		case "output_config":
			req.OutputConfig = new(messages.OutputConfig)
			return true, seen(mask, 13) && d.outputConfig(req.OutputConfig)
		}
		return false, false
	})
	// Only whitespace may follow.
	return ok && d.sc.ws() == 0 && d.sc.i == len(d.sc.b)
}

// strMember reads a member of kind k that must be a string.
func (d *fastDecoder) strMember(dst *string, k byte, mask *uint32, bit uint) bool {
	return seen(mask, bit) && k == '"' && d.str(dst)
}

// rawMember keeps a member's value as it stands in the body.
func (d *fastDecoder) rawMember(dst *jsontext.Value, mask *uint32, bit uint) bool {
	v, ok := d.raw()
	*dst = v
	return ok && seen(mask, bit)
}

// boolean reads a member of kind k that must be true or false.
func (d *fastDecoder) boolean(dst *bool, k byte) bool {
	if k != 't' && k != 'f' {
		return false
	}
	*dst = k == 't'
	return d.skip()
}

// list reads the array at the scanner (its '[' next) into *dst, each
// element with f, in place; size is the capacity the usual request needs.
// On false the list is left part-read (the caller gives up on it all).
func list[T any](d *fastDecoder, dst *[]T, size int, f func(*T) bool) bool {
	out := make([]T, 0, size)
	ok := d.elements(func() bool {
		var zero T
		out = append(out, zero)
		return f(&out[len(out)-1])
	})
	*dst = out
	return ok
}

// integer reads a number written as an integer.
func (d *fastDecoder) integer(dst *int64) bool {
	v, ok := d.raw()
	if !ok || len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9') || bytes.ContainsAny(v, ".eE") {
		return false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	*dst = n
	return err == nil
}

func (d *fastDecoder) strings(dst *[]string) bool {
	return list(d, dst, 0, func(s *string) bool {
		return d.sc.ws() == '"' && d.str(s)
	})
}

// object reads a small object whose members f knows by name: f reports
// false for a name it does not know, and that member is skipped (jsonv2
// matches names exactly, as the fast decoder does).
func (d *fastDecoder) object(f func(name []byte, k byte, mask *uint32) (known, ok bool)) bool {
	return d.objectNulls(false, f)
}

// objectNulls reads an object as object does; with nulls, f is also given
// the members whose value is null (k 'n'), else null gives up.
func (d *fastDecoder) objectNulls(nulls bool, f func(name []byte, k byte, mask *uint32) (known, ok bool)) bool {
	if d.sc.ws() != '{' {
		return false
	}
	mask := d.enter()
	ok := d.members(func(name []byte, k byte) bool {
		if k == 'n' && !nulls {
			return false
		}
		if known, ok := f(name, k, mask); known {
			return ok
		}
		return d.skip()
	})
	d.depth--
	return ok
}

// enter gives an object being read its seen mask, zero (its reader
// decrements d.depth when it is done).
func (d *fastDecoder) enter() *uint32 {
	var mask *uint32
	if d.depth < len(d.masks) {
		mask = &d.masks[d.depth]
		*mask = 0
	} else {
		mask = new(uint32)
	}
	d.depth++
	return mask
}

func (d *fastDecoder) toolChoice(tc *messages.ToolChoice) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "type":
			return true, d.strMember(&tc.Type, k, mask, 0)
		case "name":
			return true, d.strMember(&tc.Name, k, mask, 1)
		case "disable_parallel_tool_use":
			return true, seen(mask, 2) && d.boolean(&tc.DisableParallelToolUse, k)
		}
		return false, false
	})
}

func (d *fastDecoder) metadata(m *messages.Metadata) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		if string(name) != "user_id" {
			return false, false
		}
		return true, d.rawMember(&m.UserID, mask, 0)
	})
}

func (d *fastDecoder) thinking(t *messages.Thinking) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		switch string(name) {
		case "type":
			return true, d.strMember(&t.Type, k, mask, 0)
		case "budget_tokens":
			return true, seen(mask, 1) && d.integer(&t.BudgetTokens)
		}
		return false, false
	})
}

func (d *fastDecoder) outputConfig(o *messages.OutputConfig) bool {
	return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
		if string(name) != "effort" {
			return false, false
		}
		return true, d.strMember(&o.Effort, k, mask, 0)
	})
}

func (d *fastDecoder) messageList(dst *[]messages.Message) bool {
	return list(d, dst, 8, func(m *messages.Message) bool {
		return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
			switch string(name) {
			case "role":
				return true, d.strMember(&m.Role, k, mask, 0)
			case "content":
				return true, seen(mask, 1) && d.content(&m.Content, k)
			}
			return false, false
		})
	})
}

// content reads a string or a list of blocks (messages.Content).
func (d *fastDecoder) content(c *messages.Content, k byte) bool {
	*c = messages.Content{}
	switch k {
	case '"':
		v, ok := d.raw()
		c.Text = v
		return ok
	case '[':
		return list(d, &c.Blocks, 0, d.block)
	}
	return false
}

// block reads a content block as messages.Block.UnmarshalJSONFrom does:
// a member of an unexpected kind is skipped, its field left zero.
func (d *fastDecoder) block(b *messages.Block) bool {
	if d.sc.ws() != '{' {
		return false
	}
	var mask uint32
	return d.members(func(name []byte, k byte) bool {
		switch string(name) {
		case "type":
			return seen(&mask, 0) && d.strOrSkip(&b.Type, k)
		case "text":
			return k != 'n' && d.rawMember(&b.Text, &mask, 1)
		case "input":
			return k != 'n' && d.rawMember(&b.Input, &mask, 2)
		case "source":
			if !seen(&mask, 3) {
				return false
			}
			if k == '{' {
				return d.small(&b.Source)
			}
			return d.skip()
		case "content":
			if !seen(&mask, 4) {
				return false
			}
			if k == '"' || k == '[' {
				b.Content = new(messages.Content)
				return d.content(b.Content, k)
			}
			return d.skip()
		case "id":
			return seen(&mask, 5) && d.strOrSkip(&b.ID, k)
		case "name":
			return seen(&mask, 6) && d.strOrSkip(&b.Name, k)
		case "tool_use_id":
			return seen(&mask, 7) && d.strOrSkip(&b.ToolUseID, k)
		case "is_error":
			if !seen(&mask, 8) {
				return false
			}
			if k == 't' || k == 'f' {
				b.IsError = k == 't'
			}
			return d.skip()
		}
		return d.skip()
	})
}

// strOrSkip reads a member of kind k into dst when it is a string, and
// skips it otherwise (dst left as it is).
func (d *fastDecoder) strOrSkip(dst *string, k byte) bool {
	if k == '"' {
		return d.str(dst)
	}
	return d.skip()
}

// skip reads past a value the decoder does not keep.
func (d *fastDecoder) skip() bool {
	_, ok := d.raw()
	return ok
}

func (d *fastDecoder) toolList(dst *[]messages.Tool) bool {
	return list(d, dst, 16, func(t *messages.Tool) bool {
		return d.object(func(name []byte, k byte, mask *uint32) (bool, bool) {
			switch string(name) {
			case "type":
				return true, d.strMember(&t.Type, k, mask, 0)
			case "name":
				return true, d.strMember(&t.Name, k, mask, 1)
			case "description":
				return true, d.rawMember(&t.Description, mask, 2)
			case "input_schema":
				return true, d.rawMember(&t.InputSchema, mask, 3)
			}
			return false, false
		})
	})
}
