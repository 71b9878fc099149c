package translate

// Raw JSON written as jsonv2 would marshal it: a translation that copies
// the client's strings and schemas as raw bytes writes the same body as
// one that decodes and marshals them, as long as those bytes are already
// in jsonv2's form (they nearly always are); the rest is reformatted.

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// canonicalString reports whether the valid JSON string v (quoted) is
// escaped as jsonv2 escapes (RFC 8785): only \" \\ \b \f \n \r \t, and
// \u00xx in lower case for the other control characters.
func canonicalString(v []byte) bool {
	for i := 0; ; {
		k := bytes.IndexByte(v[i:], '\\')
		if k < 0 {
			return true
		}
		i += k
		switch v[i+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			i += 2
			continue
		case 'u':
			if !canonicalEscape(v[i : i+6]) {
				return false
			}
			i += 6
			continue
		}
		return false // \/
	}
}

// canonicalEscape reports whether the valid \uXXXX escape u (six bytes)
// is one jsonv2 writes: a control character without a short escape, its
// hex digits in lower case.
func canonicalEscape(u []byte) bool {
	h := u[2:6]
	if h[0] != '0' || h[1] != '0' || h[2] > '1' || h[3] >= 'A' && h[3] <= 'F' {
		return false
	}
	switch string(h) {
	case "0008", "0009", "000a", "000c", "000d":
		return false
	}
	return true
}

// canonicalInner returns the inside of the valid JSON string v (quoted)
// escaped as jsonv2 escapes: v's own bytes when they are, else v
// unquoted and quoted again. A nil or empty v gives nil.
func canonicalInner(v []byte) []byte {
	if len(v) < 2 {
		return nil
	}
	if canonicalString(v) {
		return v[1 : len(v)-1]
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return v[1 : len(v)-1] // not reached: v was validated
	}
	return quoteInner(string(s))
}

// unquoted returns the text of the valid JSON string v (quoted): its
// inside when it has no escapes, else a copy unescaped.
func unquoted(v []byte) []byte {
	if len(v) < 2 {
		return nil
	}
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return in
	}
	s, _ := jsontext.AppendUnquote(nil, v)
	return s
}

// appendCanonical appends the valid JSON value v as jsonv2 marshals a
// jsontext.Value: compact, strings canonical, and refused (an error) when
// an object repeats a member name.
func appendCanonical(w []byte, v jsontext.Value) ([]byte, error) {
	s := scanner{b: v}
	if s.compact() && !s.odd && s.i == len(v) {
		return append(w, v...), nil
	}
	return jsontext.AppendFormat(w, v, jsontext.AllowInvalidUTF8(true))
}

// canonValue consumes one JSON value at the scanner, as value does after
// its whitespace and validating it as strictly, and also reports whether
// jsonv2 would write its bytes as they are (appendCanonical would copy
// them): no whitespace, no repeated member name, and no escape that sets
// s.odd. One pass in the usual case; a value found not canonical is
// scanned again from its start by value, which words any error.
func (s *scanner) canonValue() (v []byte, canonical bool, err error) {
	start, depth, odd := s.i, s.depth, s.odd
	s.odd = false
	if s.compact() && !s.odd {
		s.odd = odd
		return s.b[start:s.i], true, nil
	}
	s.i, s.depth, s.odd = start, depth, odd
	v, err = s.value()
	return v, false, err
}

// compact consumes a valid value written as jsonv2 writes it, reporting
// false (s.i anywhere) at whitespace, a repeated member name or anything
// invalid.
func (s *scanner) compact() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str() == nil
	case c == '{':
		return s.compactObject()
	case c == '[':
		if done, ok := s.compactOpen(']'); done || !ok {
			return ok
		}
		for {
			if !s.compact() {
				return false
			}
			if done, ok := s.compactNext(']'); done || !ok {
				return ok
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return s.number() == nil
	case c == 't':
		return s.literal("true") == nil
	case c == 'f':
		return s.literal("false") == nil
	case c == 'n':
		return s.literal("null") == nil
	}
	return false
}

func (s *scanner) compactObject() bool {
	if done, ok := s.compactOpen('}'); done || !ok {
		return ok
	}
	// Names in canonical form are equal when their bytes are (a name with
	// an odd escape makes the value not canonical anyway).
	var names nameSet
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		start := s.i
		if s.str() != nil {
			return false
		}
		if !names.add(s.b[start:s.i]) {
			return false
		}
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !s.compact() {
			return false
		}
		if done, ok := s.compactNext('}'); done || !ok {
			return ok
		}
	}
}

// compactOpen enters the object or array whose first byte is next; done
// reports that end closed it at once.
func (s *scanner) compactOpen(end byte) (done, ok bool) {
	if s.enter() != nil {
		return false, false
	}
	s.i++
	if s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		s.depth--
		return true, true
	}
	return false, true
}

// compactNext reads what follows a member or an element with no
// whitespace: ',' before the next one, or end (done, the level left).
func (s *scanner) compactNext(end byte) (done, ok bool) {
	if s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, true
	case end:
		s.i++
		s.depth--
		return true, true
	}
	return false, false
}

// nameSet holds the member names of an object read so far: a few
// compared one by one, more in a map.
type nameSet struct {
	few [16][]byte
	n   int
	set map[string]struct{}
}

// add adds name and reports false when it is there already.
func (ns *nameSet) add(name []byte) bool {
	if ns.set == nil {
		for _, n := range ns.few[:ns.n] {
			if bytes.Equal(n, name) {
				return false
			}
		}
		if ns.n < len(ns.few) {
			ns.few[ns.n] = name
			ns.n++
			return true
		}
		ns.set = make(map[string]struct{}, 2*len(ns.few))
		for _, n := range ns.few {
			ns.set[string(n)] = struct{}{}
		}
	}
	if _, dup := ns.set[string(name)]; dup {
		return false
	}
	ns.set[string(name)] = struct{}{}
	return true
}
