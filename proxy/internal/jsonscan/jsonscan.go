// Package jsonscan is the proxy's one hand-written JSON reader: a
// validating scanner over a byte slice for the paths that find a few
// members of a body and copy the rest as raw bytes (the pass-through
// translations), and for the wire packages' quick request decoders
// (values.go: strings without escapes, integers, booleans, objects of
// known members, lists; everything else is left to jsonv2). It accepts
// exactly what jsontext accepts with AllowDuplicateNames (string escapes
// and UTF-8, control characters, number grammar, literals, nesting up to
// jsontext's maximum depth), and a value ends where jsontext's does
// (FuzzValueMatchesJSONText, whose corpus is under testdata/fuzz). It
// skips over the text of strings with bytes.IndexByte and sixteen bytes at
// a time rather than byte by byte: a coding client's 50 KB of prompts and
// tool schemas are almost all string text.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// Scanner reads the JSON in one byte slice, from its start, one value or
// member at a time. Its methods report malformed input as a
// *SyntaxError. The zero Scanner reads an empty input.
type Scanner struct {
	b     []byte
	i     int
	depth int
	// peak is the deepest depth reached (Raw's, for the depth of the
	// values it tells recall of).
	peak   int
	recall Recall
}

// New returns a Scanner at the start of b.
func New(b []byte) Scanner { return Scanner{b: b} }

// NewRecalling returns a Scanner at the start of b whose Raw asks r for
// the objects, arrays and long strings it knows valid before validating
// one (nil r: New).
func NewRecalling(b []byte, r Recall) Scanner { return Scanner{b: b, recall: r} }

// SyntaxError is malformed JSON: what is wrong, and the byte offset in the
// scanner's input where it is.
type SyntaxError struct {
	Offset int
	What   string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte offset %d: %s", e.Offset, e.What)
}

// maxDepth is jsontext's limit on nesting.
const maxDepth = 10000

func (s *Scanner) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: s.i, What: fmt.Sprintf(format, args...)}
}

func (s *Scanner) eof() error {
	return &SyntaxError{Offset: len(s.b), What: "unexpected end of input"}
}

// Pos is the offset in the input of the next byte to read.
func (s *Scanner) Pos() int { return s.i }

// Peek skips whitespace and returns the next byte, 0 at the end of the
// input.
func (s *Scanner) Peek() byte { return s.ws() }

// AtEnd skips whitespace and reports whether the input ends there.
func (s *Scanner) AtEnd() bool {
	s.ws()
	return s.i == len(s.b)
}

// Value consumes one JSON value after whitespace, validating it, and
// returns its bytes.
func (s *Scanner) Value() ([]byte, error) { return s.value() }

// Expect consumes byte c after whitespace, or reports what is there
// instead.
func (s *Scanner) Expect(c byte) error { return s.expect(c) }

// Members reads the object next (after whitespace), calling f for each
// member with its name raw (quoted, escaped as in the input: a slice of
// it) once the ':' after the name is read; f consumes the member's value
// (Value, or Members or Elements on it). An error f returns ends the
// reading and is returned as it is.
func (s *Scanner) Members(f func(name []byte) error) error {
	if err := s.expectOpen('{'); err != nil {
		return err
	}
	return s.members(f)
}

// Elements reads the array next (after whitespace), calling f for each
// element with its index; f consumes the element. An error f returns
// ends the reading and is returned as it is.
func (s *Scanner) Elements(f func(i int) error) error {
	if err := s.expectOpen('['); err != nil {
		return err
	}
	return s.elements(f)
}

// expectOpen checks that the bracket open is next, after whitespace.
func (s *Scanner) expectOpen(open byte) error {
	switch c := s.ws(); {
	case c == open:
		return nil
	case s.i >= len(s.b):
		return s.eof()
	default:
		return s.errorf("invalid character %q, expecting %q", c, open)
	}
}

// ws skips whitespace and returns the next byte (0 at the end).
func (s *Scanner) ws() byte {
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return c
		}
	}
	return 0
}

// expect consumes byte c after whitespace.
func (s *Scanner) expect(c byte) error {
	if s.ws() != c {
		if s.i >= len(s.b) {
			return s.eof()
		}
		return s.errorf("invalid character %q, expecting %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// value consumes one JSON value after whitespace and returns its raw bytes.
func (s *Scanner) value() ([]byte, error) {
	c := s.ws()
	start := s.i
	var err error
	switch {
	case c == '"':
		err = s.str()
	case c == '{':
		err = s.object()
	case c == '[':
		err = s.array()
	case c == '-' || c >= '0' && c <= '9':
		err = s.number()
	case c == 't':
		err = s.literal("true")
	case c == 'f':
		err = s.literal("false")
	case c == 'n':
		err = s.literal("null")
	case s.i >= len(s.b):
		err = s.eof()
	default:
		err = s.errorf("invalid character %q at start of value", c)
	}
	return s.b[start:s.i], err
}

func (s *Scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		if len(s.b)-s.i < len(lit) && bytes.HasPrefix([]byte(lit), s.b[s.i:]) {
			return s.eof()
		}
		return s.errorf("invalid literal, expecting %s", lit)
	}
	s.i += len(lit)
	return nil
}

func (s *Scanner) enter() error {
	s.depth++
	s.peak = max(s.peak, s.depth)
	if s.depth > maxDepth {
		return s.errorf("exceeded max depth of %d", maxDepth)
	}
	return nil
}

func (s *Scanner) object() error {
	return s.members(func([]byte) error {
		_, err := s.value()
		return err
	})
}

func (s *Scanner) array() error {
	return s.elements(func(int) error {
		_, err := s.value()
		return err
	})
}

// members is Members with the object's '{' next.
func (s *Scanner) members(f func(name []byte) error) error {
	if done, err := s.open('}'); done || err != nil {
		return err
	}
	for {
		if s.ws() != '"' {
			if s.i >= len(s.b) {
				return s.eof()
			}
			return s.errorf("invalid character %q, expecting a member name", s.b[s.i])
		}
		start := s.i
		if err := s.str(); err != nil {
			return err
		}
		name := s.b[start:s.i]
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := f(name); err != nil {
			return err
		}
		if done, err := s.next('}', "object member"); done || err != nil {
			return err
		}
	}
}

// elements is Elements with the array's '[' next.
func (s *Scanner) elements(f func(i int) error) error {
	if done, err := s.open(']'); done || err != nil {
		return err
	}
	for i := 0; ; i++ {
		if err := f(i); err != nil {
			return err
		}
		if done, err := s.next(']', "array element"); done || err != nil {
			return err
		}
	}
}

// open enters the object or array whose first byte is next; done reports
// that end closed it at once.
func (s *Scanner) open(end byte) (done bool, err error) {
	if err := s.enter(); err != nil {
		return false, err
	}
	s.i++
	return s.close(end), nil
}

// close leaves the object or array if end is next.
func (s *Scanner) close(end byte) bool {
	if s.ws() != end {
		return false
	}
	s.i++
	s.depth--
	return true
}

// next reads what follows a member or an element (what): ',' before the
// next one, or end (done).
func (s *Scanner) next(end byte, what string) (done bool, err error) {
	if s.ws() == ',' {
		s.i++
		return false, nil
	}
	if s.close(end) {
		return true, nil
	}
	if s.i >= len(s.b) {
		return false, s.eof()
	}
	return false, s.errorf("invalid character %q after %s", s.b[s.i], what)
}

func (s *Scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *Scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return s.eof()
	case s.b[s.i] == '0':
		s.i++
	case s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return s.errorf("invalid character %q in number", s.b[s.i])
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			if s.i >= len(s.b) {
				return s.eof()
			}
			return s.errorf("invalid character %q in number", s.b[s.i])
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			if s.i >= len(s.b) {
				return s.eof()
			}
			return s.errorf("invalid character %q in number", s.b[s.i])
		}
	}
	return nil
}

// str consumes a string; s.b[s.i] is its opening quote. Most strings of
// a request are short (member names, schema keywords): a first pass,
// eight bytes a turn, finds the first byte that is not plain text
// (special) within shortString bytes, and a string that ends there is
// done. Longer text goes on from where it stopped: bytes.IndexByte finds
// its end and any backslash, and the text between is checked sixteen bytes
// a turn (checkText).
func (s *Scanner) str() error {
	b := s.b
	j := s.i + 1
	for end := min(len(b)-8, j+shortString); j <= end; j += 8 {
		if m := special(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			j += bits.TrailingZeros64(m) / 8
			if b[j] == '"' {
				s.i = j + 1
				return nil
			}
			break
		}
	}
	// q is the next quote at or after j: found once, and found again only
	// when an escape has gone past it (\"), so that text with many escapes
	// and few quotes is searched once, not once per escape.
	q := -1
	for {
		if q < j {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				if k := checkText(b[j:]); k >= 0 {
					return s.textError(j + k)
				}
				return s.eof()
			}
			q = j + k
		}
		seg := b[j:q]
		bs := bytes.IndexByte(seg, '\\')
		if bs >= 0 {
			seg = seg[:bs]
		}
		if k := checkText(seg); k >= 0 {
			return s.textError(j + k)
		}
		if bs < 0 {
			s.i = q + 1
			return nil
		}
		j += bs
		n, err := s.escape(j)
		if err != nil {
			return err
		}
		j += n
	}
}

// shortString is how far str's first pass looks.
const shortString = 32

// special marks, in the high bit of each byte, the bytes of x (eight bytes
// of string text, little-endian) that are not plain text: '"', '\\', a
// control character or a byte of a multi-byte character. A byte below a
// marked one is never marked wrongly (borrows only carry upwards), so the
// lowest mark is exact.
func special(x uint64) uint64 {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(lows*'"'), x^(lows*'\\')
	return ((x-lows*0x20)|(quote-lows)|(backslash-lows))&^x&highs | x&highs
}

// checkText checks unescaped string text: no control character, valid
// UTF-8. It returns the offset of the first bad byte, or -1.
func checkText(t []byte) int {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	// A byte below 0x20 borrows into its high bit; a byte of a multi-byte
	// character has it set; a borrow marks a byte only above a marked one,
	// so the lowest mark is exact. Sixteen bytes a turn, on a slice whose
	// length the compiler knows, so the loads need no bounds checks; a
	// multi-byte character is decoded where the marks say it starts, and
	// the turns go on after it. The last fifteen bytes go as one or two
	// words when plain, else one at a time.
	i := 0
	for {
		rest := t[i:]
		for len(rest) >= 16 {
			x := binary.LittleEndian.Uint64(rest)
			y := binary.LittleEndian.Uint64(rest[8:])
			if ((x-lows*0x20)|x|(y-lows*0x20)|y)&highs != 0 {
				if m := ((x - lows*0x20) | x) & highs; m != 0 {
					rest = rest[bits.TrailingZeros64(m)/8:]
				} else {
					rest = rest[8+bits.TrailingZeros64(((y-lows*0x20)|y)&highs)/8:]
				}
				break
			}
			rest = rest[16:]
		}
		i = len(t) - len(rest)
		if len(rest) >= 16 { // at a marked byte
			if rest[0] < 0x20 {
				return i
			}
			r, n := utf8.DecodeRune(rest)
			if r == utf8.RuneError && n == 1 {
				return i
			}
			i += n
			continue
		}
		// Fewer than sixteen bytes are left: the words of t that cover
		// them, read overlapping what went before, settle most at once.
		var x, y uint64
		switch {
		case len(rest) > 8:
			x, y = binary.LittleEndian.Uint64(rest), binary.LittleEndian.Uint64(rest[len(rest)-8:])
		case len(t) >= 8:
			x = binary.LittleEndian.Uint64(t[len(t)-8:])
			y = x
		default:
			x, y = highs, highs
		}
		if ((x-lows*0x20)|x|(y-lows*0x20)|y)&highs == 0 {
			return -1
		}
		for i < len(t) {
			c := t[i]
			switch {
			case c < 0x20:
				return i
			case c < utf8.RuneSelf:
				i++
			default:
				r, n := utf8.DecodeRune(t[i:])
				if r == utf8.RuneError && n == 1 {
					return i
				}
				i += n
			}
		}
		return -1
	}
}

// textError reports the bad byte of string text at b[at], in jsontext's
// words.
func (s *Scanner) textError(at int) error {
	s.i = at
	if s.b[at] < 0x20 {
		return s.errorf("invalid character %q within string (expecting non-control character)", s.b[at])
	}
	return s.errorf("invalid UTF-8 within string")
}

// escape checks the escape sequence at b[j] ('\\') and returns its length.
func (s *Scanner) escape(j int) (int, error) {
	b := s.b
	if j+1 >= len(b) {
		return 0, s.eof()
	}
	switch b[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		r, ok := hex4(b, j+2)
		if !ok {
			if len(b) < j+6 {
				return 0, s.eof()
			}
			s.i = j
			return 0, s.errorf("invalid escape sequence %q in string", b[j:j+6])
		}
		switch {
		case r >= 0xd800 && r < 0xdc00: // a high surrogate: a low one must follow
			if j+12 <= len(b) && b[j+6] == '\\' && b[j+7] == 'u' {
				if r2, ok := hex4(b, j+8); ok && r2 >= 0xdc00 && r2 < 0xe000 {
					return 12, nil
				}
			}
			s.i = j
			return 0, s.errorf("invalid surrogate pair in string")
		case r >= 0xdc00 && r < 0xe000:
			s.i = j
			return 0, s.errorf("invalid surrogate pair in string")
		}
		return 6, nil
	}
	s.i = j
	return 0, s.errorf("invalid escape sequence %q in string", b[j:j+2])
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
