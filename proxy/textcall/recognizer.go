package textcall

import "strings"

// status is what a family's block parser found at the start of the text
// it was given.
type status uint8

const (
	// incomplete: the text ended inside the block; more could make it a
	// call (or not).
	incomplete status = iota
	// complete: a whole block of calls ends at n.
	complete
	// bad: not a call of this family, whatever follows. A parser says so
	// only when no continuation of the text could make it one, so that a
	// stream's early verdict is the one its whole answer gets.
	bad
)

// block is one block of calls a family's parser read.
type block struct {
	calls []Call
	n     int // complete: the block's length, closing marker included
	st    status
	// cutOK (with st incomplete): every call in calls is whole and only
	// the block's closing marker(s) are missing, as when max_tokens cut
	// the answer there; such a block is recovered at the answer's end.
	cutOK bool
}

func badBlock() block        { return block{st: bad} }
func incompleteBlock() block { return block{st: incomplete} }

// marker is an opening marker of a family.
type marker struct {
	text   string
	family Family
	// whole: the marker opens a call only at the answer's start (the
	// families whose calls are the whole answer: Llama 3 JSON's `{`,
	// pythonic's `[`).
	whole bool
}

// recognizer is one family: its opening markers and its block parser.
type recognizer struct {
	markers []marker
	// parse reads one block of calls from s, which starts with one of
	// the family's markers.
	parse func(s string, t *toolset) block
}

// recognizers, by family; each family's file fills in its own.
var recognizers [numFamilies]recognizer

// markersByFirst lists the opening markers by their first byte, and
// firstByte the families with a marker starting with that byte: the one
// table the text scan looks at, so that no family slows the others.
var (
	markersByFirst [256][]marker
	firstByte      [256]Set
	// secondByte[b] is the set of bytes that follow b in a marker of two
	// bytes or more: most `<` and `f` of prose fail on it.
	secondByte [256][4]uint64
)

func register(f Family, parse func(string, *toolset) block, markers ...marker) {
	for i := range markers {
		markers[i].family = f
		b := markers[i].text[0]
		markersByFirst[b] = append(markersByFirst[b], markers[i])
		firstByte[b] |= 1 << f
		if t := markers[i].text; len(t) > 1 {
			secondByte[b][t[1]>>6] |= 1 << (t[1] & 63)
		}
	}
	recognizers[f] = recognizer{markers: markers, parse: parse}
}

// verdict is what the scanner learns of a held region.
type verdict uint8

const (
	vMore  verdict = iota // could still be calls: keep holding
	vNot                  // certainly not calls at the answer's end: text
	vCalls                // calls (only at the answer's end)
)

// run tries family f on s, which starts with one of its markers: one or
// more blocks, separated by whitespace, that end the answer.
func (r *recognizer) run(s string, t *toolset, final bool) ([]Call, verdict) {
	var calls []Call
	pos := 0
	for {
		b := r.parse(s[pos:], t)
		switch b.st {
		case bad:
			return nil, vNot
		case incomplete:
			if !final {
				return nil, vMore
			}
			if !b.cutOK || len(b.calls) == 0 {
				return nil, vNot
			}
			return append(calls, b.calls...), vCalls
		}
		calls = append(calls, b.calls...)
		pos = skipSpace(s, pos+b.n)
		var partial bool
		if pos, partial = skipStops(s, pos); partial && !final {
			return nil, vMore
		}
		if pos == len(s) {
			if !final {
				return nil, vMore
			}
			return calls, vCalls
		}
		full, partial := r.matchOwn(s[pos:])
		if !full {
			if partial && !final {
				return nil, vMore
			}
			return nil, vNot
		}
	}
}

// stopTokens end a turn; a server that does not strip them leaves them
// after the calls (Ollama's DeepSeek template test shows one).
var stopTokens = [...]string{
	"<|end▁of▁sentence|>", "<｜end▁of▁sentence｜>", "<|im_end|>", "<|eot_id|>",
	"<|eom_id|>", "<|endoftext|>", "<|return|>", "<|end|>", "</s>",
}

// skipStops skips the stop tokens and whitespace at s[i:]; partial reports
// that s ends inside what could be one.
func skipStops(s string, i int) (int, bool) {
	for {
		skipped := false
		for _, t := range stopTokens {
			if j, st := expect(s, i, t); st == complete {
				i, skipped = skipSpace(s, j), true
			} else if st == incomplete && i < len(s) {
				return i, true
			}
		}
		if !skipped {
			return i, false
		}
	}
}

// matchOwn reports whether s starts with one of the family's markers, or
// could (s is a proper prefix of one).
func (r *recognizer) matchOwn(s string) (full, partial bool) {
	for _, m := range r.markers {
		if strings.HasPrefix(s, m.text) {
			return true, false
		}
		if len(s) < len(m.text) && strings.HasPrefix(m.text, s) {
			partial = true
		}
	}
	return false, partial
}

// isSpace is JSON's and the templates' whitespace.
func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// expect reads lit at s[i:]: complete with the index after it, incomplete
// when s ends inside it, bad when s holds something else.
func expect(s string, i int, lit string) (int, status) {
	rest := s[i:]
	if strings.HasPrefix(rest, lit) {
		return i + len(lit), complete
	}
	if len(rest) < len(lit) && strings.HasPrefix(lit, rest) {
		return i, incomplete
	}
	return i, bad
}

// closeCall reads, after whitespace, the marker that closes one call of a
// section of calls (DeepSeek's, Kimi's): the index after it, or the block
// to return, the calls so far cut there or bad.
func closeCall(s string, i int, end string, calls []Call) (int, block, bool) {
	k, st := expect(s, skipSpace(s, i), end)
	switch st {
	case incomplete:
		return 0, block{calls: calls, st: incomplete, cutOK: true}, false
	case bad:
		return 0, badBlock(), false
	}
	return k, block{}, true
}

// closeBefore finds, from i, the first closing tag `end` that is followed
// (after whitespace) by one of next, so that a value holding the closing
// tag's text does not cut it. It returns the tag's index, or incomplete
// when s ends before it is certain.
func closeBefore(s string, i int, end string, next ...string) (int, status) {
	for {
		j := strings.Index(s[i:], end)
		if j < 0 {
			return 0, incomplete
		}
		j += i
		after := skipSpace(s, j+len(end))
		if after == len(s) {
			return 0, incomplete
		}
		for _, n := range next {
			if _, st := expect(s, after, n); st == complete {
				return j, complete
			} else if st == incomplete {
				return 0, incomplete
			}
		}
		i = j + 1
	}
}
