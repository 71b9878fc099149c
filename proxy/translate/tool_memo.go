package translate

import (
	"hash/maphash"
	"sync"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// ToolMemo remembers what the translations derive from the tool
// definitions a client sends again with every request: each tool's share
// of the prompt's estimate, and the parameter types textcall reads of its
// schema. A coding client's twelve tools are some 30 KB of a 54 KB
// request, the same bytes each time; reading them again was a third of
// what translating the request cost.
//
// The server keeps one ToolMemo for each client connection
// (Target.Memo), so that what one connection sent never shapes the work
// done for another. A fact is found by a 64-bit hash of the bytes it was
// computed from, with a seed of the memo's own; what it gives is what
// computing it again gives. A nil *ToolMemo remembers nothing: every fact
// is computed.
type ToolMemo struct {
	mu     sync.Mutex
	seed   maphash.Seed
	tokens map[uint64]int
	tools  map[uint64][]textcall.Tool
}

// toolMemoSize bounds what one memo holds (per map); when full it starts
// over. A client's tool list is tens of entries.
const toolMemoSize = 512

// NewToolMemo returns an empty memo (its maps are made when first
// written: a connection that sends no tools costs little more than the
// pointer).
func NewToolMemo() *ToolMemo {
	return &ToolMemo{seed: maphash.MakeSeed()}
}

// Kinds of fact, hashed first, so that facts of the same bytes differ.
const (
	memoToolTokens  byte = 't' // a tool definition's estimate (promptEstimate.tool)
	memoChatTokens  byte = 'c' // a Chat tools array's estimate (estimateChat)
	memoSchema      byte = 's' // one schema's compact parameter types
	memoRawMessages byte = 'm' // rawTools of a Messages tools array
	memoRawChat     byte = 'h' // rawTools of a Chat tools array
)

// key hashes a fact's kind, strings and byte strings (each with its
// length, so that no two lists hash alike by where they are cut); 0 for a
// nil memo, which looks nothing up.
func (m *ToolMemo) key(kind byte, name, note string, parts ...[]byte) uint64 {
	if m == nil {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteByte(kind)
	for _, s := range [2]string{name, note} {
		writeLen(&h, len(s))
		h.WriteString(s)
	}
	for _, p := range parts {
		writeLen(&h, len(p))
		h.Write(p)
	}
	return h.Sum64()
}

func writeLen(h *maphash.Hash, n int) {
	var b [8]byte
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	h.Write(b[:])
}

// estimate is the count compute gives for the fact k, remembered.
func (m *ToolMemo) estimate(k uint64, compute func() int) int {
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
	if len(m.tokens) >= toolMemoSize {
		clear(m.tokens)
	}
	m.tokens[k] = n
	m.mu.Unlock()
	return n
}

// toolList is the list compute gives for the fact k, remembered. The list
// (and the schemas in it) is shared by the requests that find it: nothing
// may write to it.
func (m *ToolMemo) toolList(k uint64, compute func() []textcall.Tool) []textcall.Tool {
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
	if len(m.tools) >= toolMemoSize {
		clear(m.tools)
	}
	m.tools[k] = l
	m.mu.Unlock()
	return l
}

// schema is compactSchema(schema), remembered.
func (m *ToolMemo) schema(schema []byte) []byte {
	if m == nil {
		return compactSchema(schema)
	}
	l := m.toolList(m.key(memoSchema, "", "", schema), func() []textcall.Tool {
		return []textcall.Tool{{Parameters: compactSchema(schema)}}
	})
	return l[0].Parameters
}
