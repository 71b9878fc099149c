package translate

import (
	"hash/maphash"
	"sync"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// Memo remembers what the translations computed of the bytes a client
// sends again with every request: the estimate of each long text and JSON
// value (a coding client re-sends its system prompt, its tools and the
// whole conversation each turn), and the tools textcall reads of a
// request. Estimating them again was half of what translating a coding
// client's request cost.
//
// The server keeps one Memo for each client connection (Target.Memo), so
// that what one connection sent never shapes the work done for another. A
// fact is found by a 64-bit hash of the bytes it was computed from, with a
// seed of the memo's own; what it gives is what computing it again gives.
// A nil *Memo remembers nothing: every fact is computed.
type Memo struct {
	mu     sync.Mutex
	seed   maphash.Seed
	tokens map[uint64]int
	tools  map[uint64][]textcall.Tool
}

// memoSize bounds what one memo holds (per map); when full it starts
// over. A coding session's texts and tools are some hundreds.
const memoSize = 1024

// memoMin is the least length of a text or JSON value whose estimate is
// remembered: below it, hashing costs about what estimating does.
const memoMin = 256

// NewMemo returns an empty memo (its maps are made when first
// written: a connection that sends no tools costs little more than the
// pointer).
func NewMemo() *Memo {
	return &Memo{seed: maphash.MakeSeed()}
}

// Kinds of fact, hashed first, so that facts of the same bytes differ.
const (
	memoText        byte = 't' // a raw JSON string's estimate (promptEstimate.text)
	memoJSON        byte = 'j' // a JSON value's estimate (promptEstimate.json)
	memoSchema      byte = 's' // one schema's compact parameter types
	memoRawMessages byte = 'm' // rawTools of a Messages tools array
	memoRawChat     byte = 'h' // rawTools of a Chat tools array
)

// key hashes a fact's kind and the bytes it is computed from; 0 for a nil
// memo, which looks nothing up.
func (m *Memo) key(kind byte, b []byte) uint64 {
	if m == nil {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteByte(kind)
	h.Write(b)
	return h.Sum64()
}

// estimate is the count compute gives for the fact k, remembered.
func (m *Memo) estimate(k uint64, compute func() int) int {
	if m == nil {
		return compute()
	}
	m.mu.Lock()
	n, ok := m.tokens[k]
	m.mu.Unlock()
	if ok {
		return n
	}
	n = compute()
	m.mu.Lock()
	if m.tokens == nil {
		m.tokens = make(map[uint64]int)
	}
	if len(m.tokens) >= memoSize {
		clear(m.tokens)
	}
	m.tokens[k] = n
	m.mu.Unlock()
	return n
}

// toolList is the list compute gives for the fact k, remembered. The list
// (and the schemas in it) is shared by the requests that find it: nothing
// may write to it.
func (m *Memo) toolList(k uint64, compute func() []textcall.Tool) []textcall.Tool {
	if m == nil {
		return compute()
	}
	m.mu.Lock()
	l, ok := m.tools[k]
	m.mu.Unlock()
	if ok {
		return l
	}
	l = compute()
	m.mu.Lock()
	if m.tools == nil {
		m.tools = make(map[uint64][]textcall.Tool)
	}
	if len(m.tools) >= memoSize {
		clear(m.tools)
	}
	m.tools[k] = l
	m.mu.Unlock()
	return l
}

// schema is compactSchema(schema), remembered.
func (m *Memo) schema(schema []byte) []byte {
	if m == nil {
		return compactSchema(schema)
	}
	l := m.toolList(m.key(memoSchema, schema), func() []textcall.Tool {
		return []textcall.Tool{{Parameters: compactSchema(schema)}}
	})
	return l[0].Parameters
}
