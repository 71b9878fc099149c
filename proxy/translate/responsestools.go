package translate

// The tools of recent Responses requests, decoded, by their bytes.

import (
	"bytes"
	"sync"

	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// toolsEntry is a request's tools list as it stood in the body (a copy of
// its bytes) and decoded from that copy.
type toolsEntry struct {
	raw   []byte
	tools []responses.Tool // its raw values alias raw; never written
	// canonical: decoding raw found nothing that sets the scanner's odd
	// flag (an odd escape, parameters not as jsonv2 writes them).
	canonical bool
}

// recentTools keeps the tools lists of the last few requests the deferred
// translation decoded. A coding client sends the same tools, byte for
// byte, in every request of a session (Codex: 17 KB of a 43 KB request,
// a dozen schemas of short strings), and decoding them was most of what
// the translation did: a list found here is not decoded again. Only the
// deferred decoding (scanner.trustText) reads and fills it: the text of
// an entry's strings was not validated, and its request's Check validates
// the whole body.
var recentTools struct {
	mu      sync.Mutex
	entries [4]*toolsEntry
	next    int // the slot the next entry takes
}

// maxCachedTools bounds the bytes of a list kept in recentTools.
const maxCachedTools = 256 << 10

// cachedTools returns the entry whose bytes begin b, or nil.
func cachedTools(b []byte) *toolsEntry {
	recentTools.mu.Lock()
	entries := recentTools.entries
	recentTools.mu.Unlock()
	for _, e := range entries {
		if e != nil && bytes.HasPrefix(b, e.raw) {
			return e
		}
	}
	return nil
}

// keepTools decodes a copy of raw, the tools list of a request decoded
// at the top level of its body (raw valid there), and keeps it in
// recentTools.
func keepTools(raw []byte) {
	if len(raw) > maxCachedTools {
		return
	}
	e := &toolsEntry{raw: bytes.Clone(raw)}
	// depth 1: the list's own nesting as it was in the body, so that the
	// scanner's limit on depth falls where it fell there.
	d := fastDecoder{sc: scanner{b: e.raw, depth: 1, trustText: true}}
	if !d.responsesTools(&e.tools, 16) || d.sc.i != len(e.raw) {
		return
	}
	e.canonical = !d.sc.odd
	recentTools.mu.Lock()
	recentTools.entries[recentTools.next] = e
	recentTools.next = (recentTools.next + 1) % len(recentTools.entries)
	recentTools.mu.Unlock()
}

// requestTools reads a request's tools list (the top-level member, its
// '[' next). The deferred decoding takes a list of recentTools whose
// bytes are those at the scanner as they are, and keeps one it decodes.
func (d *fastDecoder) requestTools(dst *[]responses.Tool) bool {
	if !d.sc.trustText {
		return d.responsesTools(dst, 16)
	}
	start := d.sc.i
	if e := cachedTools(d.sc.b[start:]); e != nil {
		*dst = e.tools
		d.sc.i += len(e.raw)
		d.sc.odd = d.sc.odd || !e.canonical
		return true
	}
	if !d.responsesTools(dst, 16) {
		return false
	}
	keepTools(d.sc.b[start:d.sc.i])
	return true
}
