// Package memo remembers what was computed of byte strings: one value for
// each kind of fact and the bytes it was computed from, found by a 64-bit
// hash with a seed of the memo's own. The proxy keeps one Memo for each
// client connection and key (server.ConnContext), for what translate computes of
// the bytes a coding client sends again with every request (the estimate
// of its long texts, the tools text calls read); a fact found gives what
// computing it again gives. A nil *Memo remembers nothing.
package memo

import (
	"hash/maphash"
	"sync"
)

// Memo is safe for concurrent use (the requests of one HTTP/2 connection
// share it).
type Memo struct {
	mu    sync.Mutex
	seed  maphash.Seed
	facts map[uint64]any
}

// Size bounds what one memo holds; when full it starts over. A coding
// session's texts and tools are some hundreds.
const Size = 1024

// New returns an empty memo (its map is made when first written: a
// connection that sends nothing worth remembering costs little more than
// the pointer).
func New() *Memo { return &Memo{seed: maphash.MakeSeed()} }

// Get returns the value compute gives for the fact of this kind of b: the
// one remembered when there is one, else compute's, remembered. Values are
// shared by every caller that finds them: nothing may write to one. With
// a nil m, Get is compute().
func Get[V any](m *Memo, kind byte, b []byte, compute func() V) V {
	if m == nil {
		return compute()
	}
	k := m.key(kind, b) // once: b may be long
	if v, ok := find[V](m, k); ok {
		return v
	}
	v := compute()
	m.put(k, v)
	return v
}

// Find returns the value remembered for the fact of this kind of b, if
// there is one (with a nil m, none).
func Find[V any](m *Memo, kind byte, b []byte) (V, bool) {
	if m == nil {
		var zero V
		return zero, false
	}
	return find[V](m, m.key(kind, b))
}

// Put remembers v as the fact of this kind of b (with a nil m, nothing).
func Put[V any](m *Memo, kind byte, b []byte, v V) {
	if m != nil {
		m.put(m.key(kind, b), v)
	}
}

func find[V any](m *Memo, k uint64) (V, bool) {
	m.mu.Lock()
	v, ok := m.facts[k].(V)
	m.mu.Unlock()
	return v, ok
}

func (m *Memo) put(k uint64, v any) {
	m.mu.Lock()
	if m.facts == nil {
		m.facts = make(map[uint64]any)
	}
	if len(m.facts) >= Size {
		clear(m.facts)
	}
	m.facts[k] = v
	m.mu.Unlock()
}

// Sum is the 64-bit hash m finds the fact of this kind of b by: a fact
// may hold the sum of other bytes, to know them again without a fact of
// their own (with a nil m, 0).
func (m *Memo) Sum(kind byte, b []byte) uint64 {
	if m == nil {
		return 0
	}
	return m.key(kind, b)
}

func (m *Memo) key(kind byte, b []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteByte(kind)
	h.Write(b)
	return h.Sum64()
}

// Len is how many facts m holds.
func (m *Memo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.facts)
}
