package jsonscan

// What the wire packages' quick request decoders read with a Scanner:
// each value the way jsonv2 decodes it into a Go value of its type (null
// as the zero value), or ErrLeft where the decoder leaves the body to
// jsonv2 (an escape, a number that is not an int64, a kind jsonv2 refuses
// there, a name given twice).

import (
	"bytes"
	"errors"
	"strconv"
)

// ErrLeft ends a quick decoder's scan: the body holds something it leaves
// to jsonv2, which decodes it again from the start and words any error.
var ErrLeft = errors.New("jsonscan: left to jsonv2")

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

// Raw reads the value next as it is written: a slice of the input.
func Raw[T ~[]byte](s *Scanner, dst *T) error {
	v, err := s.value()
	*dst = v
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
