package textcall

import (
	"strings"
	"unicode/utf8"
)

// state is where the Scanner is in the answer.
type state uint8

const (
	// stStart: nothing given out yet; the answer may open with reasoning.
	stStart state = iota
	// stReasoning: inside reasoning, until rEnd.
	stReasoning
	// stText: answer text, scanned for the first byte of a marker.
	stText
	// stHeld: the held text starts with a whole opening marker of the
	// families in fams; it is held until it is certain whether it is
	// calls that end the answer.
	stHeld
	// stDone: calls were given out; the answer has ended.
	stDone
)

// Scanner recognizes the reasoning and tool calls of one streamed answer.
// Feed it the content deltas in order, then Close it. A Scanner is not
// safe for concurrent use.
//
// Feed and Close return Events as soon as they are certain: text is held
// back only while it could still be the start of a marker (at most the
// longest marker's length, plus the bytes of a UTF-8 character the delta
// cut), so ordinary text streams as it arrives. From a whole opening
// marker on, the text is held until it is certain it is not calls at the
// answer's end (it is then given out as text) or until Close; for the
// families whose calls are the whole answer (Llama 3 JSON, pythonic) the
// opening marker is the answer's first byte, `{` or `[`.
type Scanner struct {
	opts   *Options
	tools  toolset
	active Set // the families tried: none when the request offered no tools

	st state
	// The bytes fed and not yet given out: the short end of the last
	// delta in tail (text that could begin a marker, a cut character), a
	// held region, or a longer wait, in pend.
	pend strings.Builder
	tail string

	rEnd string // stReasoning: the marker that ends the reasoning
	// atStart: no answer text given out yet, only whitespace: the
	// whole-answer families may still start.
	atStart bool
	// trimLead: drop the whitespace between the reasoning and the answer.
	trimLead bool

	fams      Set // stHeld: the families whose marker starts the held text
	nextCheck int // stHeld: the held length at which to try them again
	released  int // how many held regions turned out text
}

// NewScanner returns a Scanner for one answer.
func NewScanner(o *Options) *Scanner {
	if o == nil {
		o = &Options{}
	}
	s := &Scanner{opts: o, atStart: true}
	if len(o.Tools) > 0 {
		s.active = o.Families & All
		s.tools.tools = o.Tools
	}
	return s
}

// Feed takes the next piece of the content and appends to dst the events
// it made certain.
func (s *Scanner) Feed(dst []Event, delta string) []Event {
	if delta == "" {
		return dst
	}
	var data string
	switch {
	case s.tail != "" && s.st == stText && !s.continues(delta):
		// The usual end of a hold: the bytes that could have begun a
		// marker do not, and are text, given out without copying them
		// up to the next byte that could begin one.
		t := s.tail
		j := 1
		for j < len(t) && firstByte[t[j]]&s.active == 0 {
			j++
		}
		dst = s.emit(dst, EventText, t[:j])
		s.tail, s.atStart = "", false
		data = delta
		if j < len(t) {
			data = t[j:] + delta
		}
	case s.tail != "":
		data = s.tail + delta
		s.tail = ""
	case s.pend.Len() > 0:
		s.pend.WriteString(delta)
		data = s.pend.String()
		dst, rest := s.run(dst, data, false)
		if rest > 0 {
			// A new Builder: the events given out may share the old
			// one's bytes, which a Builder never rewrites.
			s.pend = strings.Builder{}
			s.keep(data[rest:])
		}
		return dst
	default:
		data = delta
	}
	dst, rest := s.run(dst, data, false)
	s.keep(data[rest:])
	return dst
}

// Passes reports whether Feed(text) would give text back whole as text
// and leave the Scanner as it was: the answer's text is being scanned
// with nothing held, no byte of text could begin a marker, and its last
// character is whole. The caller may then pass text on as it came
// without feeding it (a stream's plain chunks, which then cost no copy).
func (s *Scanner) Passes(text []byte) bool {
	if s.st != stText || s.atStart || s.trimLead || s.tail != "" || s.pend.Len() > 0 {
		return false
	}
	for pos, b := range text {
		if firstByte[b]&s.active == 0 {
			continue
		}
		if pos+1 == len(text) {
			return false // may begin a marker the next delta ends
		}
		if c := text[pos+1]; secondByte[b][c>>6]&(1<<(c&63)) != 0 {
			return false // Feed tells
		}
	}
	if len(text) > 0 && text[len(text)-1] >= utf8.RuneSelf {
		if r, n := utf8.DecodeLastRune(text); r == utf8.RuneError && n <= 1 {
			return false // a character cut (or not UTF-8): Feed tells
		}
	}
	return true
}

// keep holds the bytes run could not give out yet.
func (s *Scanner) keep(rest string) {
	if rest == "" {
		return
	}
	if s.st != stHeld && len(rest) <= 64 {
		s.tail = rest
		return
	}
	s.pend.WriteString(rest)
}

// continues reports whether the held tail, which begins a marker of the
// text state, could go on into delta as one.
func (s *Scanner) continues(delta string) bool {
	t := s.tail
	if cutRune(t) > 0 {
		return true // a cut character: joined to be given out whole
	}
	for _, m := range markersByFirst[t[0]] {
		if !s.active.Has(m.family) || m.whole && !s.atStart || !strings.HasPrefix(m.text, t) {
			continue
		}
		more := m.text[len(t):]
		if more == "" || strings.HasPrefix(delta, more) || strings.HasPrefix(more, delta) {
			return true
		}
	}
	return false
}

// Close ends the answer: it appends what was held back, as calls where it
// was one, else as the text it was.
func (s *Scanner) Close(dst []Event) []Event {
	data := s.pend.String()
	if s.tail != "" {
		data, s.tail = s.tail, ""
	}
	s.pend = strings.Builder{}
	dst, _ = s.run(dst, data, true)
	return dst
}

// emit appends text or reasoning (none when t is empty).
func (s *Scanner) emit(dst []Event, k EventKind, t string) []Event {
	if t == "" {
		return dst
	}
	return append(dst, Event{Kind: k, Text: t})
}

// run gives out what data (the pending bytes and the new delta) makes
// certain and returns the index from which data stays pending; with final
// it gives out everything.
func (s *Scanner) run(dst []Event, data string, final bool) ([]Event, int) {
	pos := 0
	for pos < len(data) {
		switch s.st {
		case stStart:
			var hold bool
			pos, hold = s.start(data, pos, final)
			if hold {
				return dst, pos
			}
		case stReasoning:
			i := strings.Index(data[pos:], s.rEnd)
			if i >= 0 {
				dst = s.emit(dst, EventReasoning, data[pos:pos+i])
				pos += i + len(s.rEnd)
				s.st, s.trimLead = stText, true
				continue
			}
			end := len(data)
			if !final {
				end -= heldTail(data[pos:], s.rEnd)
			}
			dst = s.emit(dst, EventReasoning, data[pos:end])
			return dst, end
		case stText:
			var hold bool
			dst, pos, hold = s.text(dst, data, pos, final)
			if hold {
				return dst, pos
			}
		case stHeld:
			calls, v := s.check(data[pos:], final)
			switch v {
			case vMore:
				return dst, pos
			case vNot:
				// Not calls: the marker's first byte is text, and the
				// scan goes on after it (a later marker may still open
				// calls that end the answer).
				dst = s.emit(dst, EventText, data[pos:pos+1])
				pos++
				s.st, s.atStart = stText, false
				if s.released++; s.released == maxReleases {
					s.active = 0 // see maxReleases
				}
			case vCalls:
				for _, c := range calls {
					dst = append(dst, Event{Kind: EventCall, Call: c})
				}
				s.st = stDone
				return dst, len(data)
			}
		case stDone:
			// Calls end the answer: nothing can follow them (check
			// gave them out only at the end).
			return s.emit(dst, EventText, data[pos:]), len(data)
		}
	}
	return dst, pos
}

// maxReleases bounds the held regions an answer may have that turn out
// text: each is parsed again from its marker, and a block left open (a
// JSON string never closed) is parsed to the answer's end, so an answer
// full of markers would cost its length times their number. After that
// many, the rest of the answer is text. The regions tried are the same
// however the answer is cut, so the bound keeps Feed and Parse agreeing.
const maxReleases = 64

// text scans answer text from pos for the first byte of an opening
// marker, giving out the text before it. hold reports that data[pos:]
// must wait for more.
func (s *Scanner) text(dst []Event, data string, pos int, final bool) ([]Event, int, bool) {
	if s.trimLead || s.atStart {
		i := skipSpace(data, pos)
		if !s.trimLead {
			dst = s.emit(dst, EventText, data[pos:i])
		}
		pos = i
		if pos == len(data) {
			return dst, pos, false
		}
		s.trimLead = false
	}
	start := pos
	active := s.active
	if s.atStart {
		// The answer's first byte: where the whole-answer families start.
		if firstByte[data[pos]]&active != 0 {
			if fams, partial := match(data[pos:], active, true); partial && !final {
				return dst, pos, true
			} else if fams != 0 {
				s.st, s.fams, s.nextCheck = stHeld, fams, 0
				return dst, pos, false
			}
		}
		s.atStart = false
		pos++
	}
	for ; pos < len(data); pos++ {
		b := data[pos]
		if firstByte[b]&active == 0 {
			continue
		}
		if pos+1 < len(data) {
			if c := data[pos+1]; secondByte[b][c>>6]&(1<<(c&63)) == 0 {
				continue
			}
		}
		fams, partial := match(data[pos:], active, false)
		if partial && !final {
			return s.emit(dst, EventText, data[start:pos]), pos, true
		}
		if fams != 0 {
			dst = s.emit(dst, EventText, data[start:pos])
			s.st, s.fams, s.nextCheck = stHeld, fams, 0
			return dst, pos, false
		}
	}
	end := len(data)
	if !final {
		end -= cutRune(data[start:])
	}
	return s.emit(dst, EventText, data[start:end]), end, end < len(data)
}

// match reports the families with an opening marker at the start of s,
// and whether s could still become another's (it is a proper prefix of a
// marker).
func match(s string, active Set, atStart bool) (fams Set, partial bool) {
	for _, m := range markersByFirst[s[0]] {
		if !active.Has(m.family) || m.whole && !atStart {
			continue
		}
		if strings.HasPrefix(s, m.text) {
			fams |= 1 << m.family
		} else if len(s) < len(m.text) && strings.HasPrefix(m.text, s) {
			partial = true
		}
	}
	return fams, partial
}

// check tries the held families on the held text h. Before the answer's
// end it tries them again only when h has doubled since the last try, so
// that holding costs linear time however small the deltas.
func (s *Scanner) check(h string, final bool) ([]Call, verdict) {
	if !final && len(h) < s.nextCheck {
		return nil, vMore
	}
	s.nextCheck = 2 * len(h)
	more := false
	for f := range numFamilies {
		if !s.fams.Has(f) {
			continue
		}
		calls, v := recognizers[f].run(h, &s.tools, final)
		switch v {
		case vCalls:
			for i := range calls {
				calls[i].Family = f
			}
			return calls, vCalls
		case vMore:
			more = true
		case vNot:
			s.fams &^= 1 << f
		}
	}
	if more {
		return nil, vMore
	}
	return nil, vNot
}

// heldTail is how many bytes at the end of s must wait: the longest end
// of s that begins the marker m, or a UTF-8 character cut short.
func heldTail(s, m string) int {
	n := min(len(s), len(m)-1)
	for ; n > 0; n-- {
		if strings.HasPrefix(m, s[len(s)-n:]) {
			break
		}
	}
	return max(n, cutRune(s))
}

// cutRune is the length of the UTF-8 character s ends in the middle of,
// or 0, so that no event splits a character.
func cutRune(s string) int {
	for n := 1; n <= utf8.UTFMax-1 && n <= len(s); n++ {
		b := s[len(s)-n]
		if b < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(b) {
			if utf8.FullRuneInString(s[len(s)-n:]) {
				return 0
			}
			return n
		}
	}
	return 0
}
