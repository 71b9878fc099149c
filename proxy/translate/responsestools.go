package translate

// The tools lists and system prompts of recent Responses requests,
// decoded, by their bytes.

import (
	"bytes"
	"sync"

	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// keptValue is a value of a request as it stood in the body (a copy of
// its bytes) and decoded from that copy.
type keptValue[T any] struct {
	raw []byte
	v   T // its raw values alias raw; never written
	// canonical: decoding raw found nothing that sets the scanner's odd
	// flag (an odd escape, parameters not as jsonv2 writes them).
	canonical bool
}

// recent keeps the last few values of one kind that the deferred
// translation decoded, for a request that holds one of them again byte for
// byte. A coding client sends the same tools and the same system prompt
// in every request of a session (Codex: 17 KB of tools, a dozen schemas of
// short strings, and 20 KB of developer messages, of a 43 KB request), and
// decoding them was most of what the translation did: a value found here
// is not decoded again. Only the deferred decoding (scanner.trustText)
// reads and fills it: the text of a kept value's strings was not
// validated, and its request's Check validates the whole body.
type recent[T any] struct {
	mu      sync.Mutex
	entries [4]*keptValue[T]
	next    int // the slot the next entry takes
	depth   int // the nesting of such a value in a body
}

var (
	recentTools   = recent[[]responses.Tool]{depth: 1} // the top-level tools member
	recentPrompts = recent[responses.Item]{depth: 2}   // system and developer messages of input
)

// maxKept bounds the bytes of a value kept in recent; minKeptPrompt is
// the least size of a kept message (one that costs more to decode than to
// look up).
const (
	maxKept       = 256 << 10
	minKeptPrompt = 1 << 10
)

// find returns the entry whose bytes begin b, or nil.
func (r *recent[T]) find(b []byte) *keptValue[T] {
	r.mu.Lock()
	entries := r.entries
	r.mu.Unlock()
	for _, e := range entries {
		if e != nil && bytes.HasPrefix(b, e.raw) {
			return e
		}
	}
	return nil
}

// keep decodes a copy of raw, a value decoded at r's depth of its body
// (valid there), with decode, and keeps it.
func (r *recent[T]) keep(raw []byte, decode func(d *fastDecoder, v *T) bool) {
	if len(raw) > maxKept {
		return
	}
	e := &keptValue[T]{raw: bytes.Clone(raw)}
	// The value's own nesting as it was in the body, so that the scanner's
	// limit on depth falls where it fell there.
	d := fastDecoder{sc: scanner{b: e.raw, depth: r.depth, trustText: true}}
	if !decode(&d, &e.v) || d.sc.i != len(e.raw) {
		return
	}
	e.canonical = !d.sc.odd
	r.mu.Lock()
	r.entries[r.next] = e
	r.next = (r.next + 1) % len(r.entries)
	r.mu.Unlock()
}

// decodeKept reads the value at the scanner into dst with decode. The
// deferred decoding takes an entry of r whose bytes are those at the
// scanner as they are, and keeps a value it decodes when worth keeping.
func decodeKept[T any](d *fastDecoder, r *recent[T], dst *T, decode func(d *fastDecoder, v *T) bool, worth func(raw []byte, v *T) bool) bool {
	if !d.sc.trustText {
		return decode(d, dst)
	}
	d.sc.ws()
	start := d.sc.i
	if e := r.find(d.sc.b[start:]); e != nil {
		*dst = e.v
		d.sc.i += len(e.raw)
		d.sc.odd = d.sc.odd || !e.canonical
		return true
	}
	if !decode(d, dst) {
		return false
	}
	if raw := d.sc.b[start:d.sc.i]; worth(raw, dst) {
		r.keep(raw, decode)
	}
	return true
}

// requestTools reads a request's tools list (the top-level member).
func (d *fastDecoder) requestTools(dst *[]responses.Tool) bool {
	return decodeKept(d, &recentTools, dst, decodeTools, func([]byte, *[]responses.Tool) bool { return true })
}

func decodeTools(d *fastDecoder, v *[]responses.Tool) bool { return d.responsesTools(v, 16) }

// requestItem reads an item of a request's input; a system or developer
// message of some size is kept.
func (d *fastDecoder) requestItem(it *responses.Item) bool {
	return decodeKept(d, &recentPrompts, it, decodeItem, func(raw []byte, it *responses.Item) bool {
		return len(raw) >= minKeptPrompt && (it.Type == "" || it.Type == responses.ItemMessage) && (it.Role == "developer" || it.Role == "system")
	})
}

func decodeItem(d *fastDecoder, it *responses.Item) bool { return d.responsesItem(it) }
