package jsonscan

// What the wire packages' quick request decoders (their ScanRequest) read
// with a Scanner: each value the way jsonv2 decodes it into a Go value of
// its type (null as the zero value), or ErrLeft where the decoder leaves
// the body to jsonv2: malformed JSON, a kind jsonv2 refuses there, a name
// given twice or written with an escape, a Go string with an escape, a
// number that is not an int64. FuzzScanRequestMatchesJSON (translate)
// checks that the two decodings agree.

import (
	"bytes"
	"errors"
	"strconv"
)

// ErrLeft ends a quick decoder's scan: the body holds something it leaves
// to jsonv2, which decodes it again from the start and words any error.
var ErrLeft = errors.New("jsonscan: left to jsonv2")

// Decode runs read, a quick decoder, over b with rc its Recall (nil:
// none), and reports whether it read one object, the whole of b, without
// leaving it to jsonv2.
func Decode(b []byte, rc Recall, read func(*Scanner) error) bool {
	s := NewRecalling(b, rc)
	return s.Peek() == '{' && read(&s) == nil && s.AtEnd()
}

// Unknown is what an Object member function returns for a member its
// decoder does not read.
const Unknown = -1

// Object reads the object next. member reads the value of each member
// into the field it picks by name (raw: quoted, as written) and returns
// the field's index below 64, or Unknown for a name it does not know,
// whose value Object skips. A field read twice (a name given twice, which
// jsonv2 merges) and a name written with an escape (which jsonv2 matches
// unescaped) are ErrLeft. null reads as no member.
func (s *Scanner) Object(member func(name []byte) (field int, err error)) error {
	if s.Null() {
		return nil
	}
	var seen uint64
	return s.Members(func(name []byte) error {
		if bytes.IndexByte(name, '\\') >= 0 {
			return ErrLeft
		}
		i, err := member(name)
		switch {
		case err != nil:
			return err
		case i == Unknown:
			return s.Skip()
		case seen&(1<<i) != 0:
			return ErrLeft
		}
		seen |= 1 << i
		return nil
	})
}

// List reads the array next into *dst, each element with elem: an empty
// array is an empty list, not nil; null leaves *dst nil. A null element,
// which jsonv2 reads as a zero one, is ErrLeft.
func List[T any](s *Scanner, dst *[]T, elem func(*T) error) error {
	if s.Null() {
		return nil
	}
	*dst = []T{}
	return s.Elements(func(int) error {
		if s.Peek() == 'n' {
			return ErrLeft
		}
		var zero T
		*dst = append(*dst, zero)
		return elem(&(*dst)[len(*dst)-1])
	})
}

// Pointer reads the value next into a new T with read; null leaves *dst
// nil.
func Pointer[T any](s *Scanner, dst **T, read func(*T) error) error {
	if s.Null() {
		return nil
	}
	*dst = new(T)
	return read(*dst)
}

// Recall remembers objects, arrays and long strings a Scanner validated,
// by their bytes: Raw asks it before it validates one, and tells it of
// each it validated. (translate's holds the facts in the memo of the
// client's connection and key: a coding client sends the same tool
// schemas, system prompt and past turns with every request.)
type Recall interface {
	// Known returns the length of the value known valid that b[at:]
	// starts with, or 0.
	Known(b []byte, at int) int
	// Validated is told of a value Raw validated, b[start:end].
	Validated(b []byte, start, end int)
}

// recallString is the length from which Raw asks Recall of a string: a
// shorter one costs less to validate than to look up.
const recallString = 256

// recalls reports whether Raw asks the Scanner's Recall of the value
// next: an object or an array, or a string with no quote in its first
// recallString bytes.
func (s *Scanner) recalls() bool {
	if s.recall == nil || s.depth > recallDepth {
		return false
	}
	switch s.ws() {
	case '{', '[':
		return true
	case '"':
		return bytes.IndexByte(s.b[s.i+1:min(len(s.b), s.i+1+recallString)], '"') < 0
	}
	return false
}

// recallDepth bounds the nesting of the values Raw asks Recall of and
// tells it of, at most recallDepth deep and inside as many: a value
// skipped as known never takes the scan past jsontext's maxDepth.
const recallDepth = 64

// Raw reads the value next as it is written: a slice of the input. An
// object, an array or a long string the Scanner's Recall knows valid is
// not validated again.
func Raw[T ~[]byte](s *Scanner, dst *T) error {
	if !s.recalls() {
		v, err := s.value()
		*dst = v
		return err
	}
	start := s.i
	if n := s.recall.Known(s.b, start); n > 0 && n <= len(s.b)-start {
		s.i += n
		*dst = s.b[start:s.i]
		return nil
	}
	peak := s.peak
	s.peak = s.depth
	v, err := s.value()
	*dst = v
	if err == nil && s.peak-s.depth <= recallDepth {
		s.recall.Validated(s.b, start, s.i)
	}
	s.peak = max(peak, s.peak)
	return err
}

// String reads a string that holds no escape.
func (s *Scanner) String(dst *string) error {
	v, err := s.value()
	switch {
	case err != nil:
		return err
	case v[0] == '"' && bytes.IndexByte(v, '\\') < 0:
		*dst = string(v[1 : len(v)-1])
	case v[0] != 'n':
		return ErrLeft
	}
	return nil
}

// Int reads an integer that fits an int64.
func (s *Scanner) Int(dst *int64) error {
	v, err := s.value()
	if err != nil || v[0] == 'n' {
		return err
	}
	if *dst, err = strconv.ParseInt(string(v), 10, 64); err != nil {
		return ErrLeft
	}
	return nil
}

// Bool reads true or false.
func (s *Scanner) Bool(dst *bool) error {
	v, err := s.value()
	switch {
	case err != nil:
		return err
	case v[0] == 't' || v[0] == 'f':
		*dst = v[0] == 't'
	case v[0] != 'n':
		return ErrLeft
	}
	return nil
}

// Skip consumes the value next.
func (s *Scanner) Skip() error {
	_, err := s.value()
	return err
}

// Null consumes a null next and reports whether there was one.
func (s *Scanner) Null() bool {
	if s.ws() != 'n' {
		return false
	}
	return s.literal("null") == nil
}
