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
			h := v[i+2 : i+6]
			if h[0] != '0' || h[1] != '0' || h[2] > '1' || h[3] >= 'A' && h[3] <= 'F' {
				return false
			}
			switch string(h) {
			case "0008", "0009", "000a", "000c", "000d":
				return false
			}
			i += 6
			continue
		}
		return false // \/
	}
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
	c := canonicalScan{b: v}
	if c.value() && c.i == len(v) {
		return append(w, v...), nil
	}
	return jsontext.AppendFormat(w, v, jsontext.AllowInvalidUTF8(true))
}

// canonicalScan walks a valid JSON value and reports false at the first
// sign that jsonv2 would write it otherwise: whitespace, a string not in
// canonical form, a repeated member name.
type canonicalScan struct {
	b []byte
	i int
}

func (c *canonicalScan) value() bool {
	if c.i >= len(c.b) {
		return false
	}
	switch c.b[c.i] {
	case '"':
		return c.str()
	case '{':
		return c.object()
	case '[':
		c.i++
		if c.i < len(c.b) && c.b[c.i] == ']' {
			c.i++
			return true
		}
		for {
			if !c.value() {
				return false
			}
			if done, ok := c.next(']'); done || !ok {
				return ok
			}
		}
	}
	// A number or a literal: jsonv2 copies them as they are.
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ',', ']', '}':
			return true
		case ' ', '\t', '\n', '\r':
			return false
		}
		c.i++
	}
	return true
}

// str consumes a string (the scanner has validated it: its end is the
// first quote not escaped).
func (c *canonicalScan) str() bool {
	start := c.i
	j := c.i + 1
	for {
		q := bytes.IndexByte(c.b[j:], '"')
		if q < 0 {
			return false
		}
		j += q
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for k := j - 1; c.b[k] == '\\'; k-- {
			n++
		}
		j++
		if n%2 == 0 {
			break
		}
	}
	c.i = j
	return canonicalString(c.b[start:j])
}

func (c *canonicalScan) object() bool {
	c.i++
	if c.i < len(c.b) && c.b[c.i] == '}' {
		c.i++
		return true
	}
	// Canonical names are equal when their bytes are: a few are compared
	// one by one, more go in a set.
	var few [16][]byte
	names := few[:0]
	var set map[string]struct{}
	for {
		if c.i >= len(c.b) || c.b[c.i] != '"' {
			return false
		}
		start := c.i
		if !c.str() {
			return false
		}
		name := c.b[start:c.i]
		if set == nil {
			for _, n := range names {
				if bytes.Equal(n, name) {
					return false
				}
			}
			if len(names) < len(few) {
				names = append(names, name)
			} else {
				set = make(map[string]struct{}, 2*len(few))
				for _, n := range names {
					set[string(n)] = struct{}{}
				}
			}
		}
		if set != nil {
			if _, dup := set[string(name)]; dup {
				return false
			}
			set[string(name)] = struct{}{}
		}
		if c.i >= len(c.b) || c.b[c.i] != ':' {
			return false
		}
		c.i++
		if !c.value() {
			return false
		}
		if done, ok := c.next('}'); done || !ok {
			return ok
		}
	}
}

// next reads what follows a member or an element: ',' before the next
// one, or end (done); ok is false for anything else.
func (c *canonicalScan) next(end byte) (done, ok bool) {
	if c.i >= len(c.b) {
		return false, false
	}
	switch c.b[c.i] {
	case ',':
		c.i++
		return false, true
	case end:
		c.i++
		return true, true
	}
	return false, false
}
