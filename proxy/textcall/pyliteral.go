package textcall

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyValue reads the Python literal at s[i:] — a string, a number, True,
// False, None, a list, a tuple or a dict — and returns it as JSON, with
// its end; incomplete when s ends inside it.
func pyValue(s string, i int) (string, int, status) {
	var b strings.Builder
	n, st := pyValueTo(&b, s, i, 0)
	return b.String(), n, st
}

// maxPyDepth bounds the nesting of a literal, like JSON's decoders.
const maxPyDepth = 200

func pyValueTo(b *strings.Builder, s string, i, depth int) (int, status) {
	if i == len(s) {
		return i, incomplete
	}
	if depth > maxPyDepth {
		return i, bad
	}
	switch c := s[i]; {
	case c == '\'' || c == '"':
		str, n, st := pyString(s, i)
		if st == complete {
			b.WriteString(jsonString(str))
		}
		return n, st
	case c == '-' || c == '+' || c == '.' || '0' <= c && c <= '9':
		return pyNumber(b, s, i)
	case c == '[' || c == '(':
		end := byte(']')
		if c == '(' {
			end = ')'
		}
		b.WriteByte('[')
		n, st := pySeq(b, s, i+1, end, depth, false)
		b.WriteByte(']')
		return n, st
	case c == '{':
		b.WriteByte('{')
		n, st := pySeq(b, s, i+1, '}', depth, true)
		b.WriteByte('}')
		return n, st
	}
	for _, w := range [...][2]string{{"True", "true"}, {"False", "false"}, {"None", "null"}, {"true", "true"}, {"false", "false"}, {"null", "null"}} {
		n, st := expect(s, i, w[0])
		if st == incomplete {
			return i, incomplete
		}
		if st == complete {
			if n == len(s) {
				return n, incomplete // it could go on: Truex
			}
			if isIdentByte(s[n]) {
				return i, bad
			}
			b.WriteString(w[1])
			return n, complete
		}
	}
	return i, bad
}

// pySeq reads the elements of a list, tuple or dict (dict: key: value
// pairs) up to end, after the opening bracket at i-1.
func pySeq(b *strings.Builder, s string, i int, end byte, depth int, dict bool) (int, status) {
	first := true
	for {
		i = skipSpace(s, i)
		if i == len(s) {
			return i, incomplete
		}
		if s[i] == end {
			return i + 1, complete
		}
		if !first {
			if s[i] != ',' {
				return i, bad
			}
			i = skipSpace(s, i+1)
			if i == len(s) {
				return i, incomplete
			}
			if s[i] == end { // a trailing comma
				return i + 1, complete
			}
			b.WriteByte(',')
		}
		first = false
		if dict {
			var key strings.Builder
			n, st := pyValueTo(&key, s, i, depth+1)
			if st != complete {
				return n, st
			}
			k := key.String()
			if k == "" || k[0] != '"' {
				k = jsonString(k) // 1: 'x' → "1": "x"
			}
			b.WriteString(k)
			i = skipSpace(s, n)
			if i == len(s) {
				return i, incomplete
			}
			if s[i] != ':' {
				return i, bad
			}
			b.WriteByte(':')
			i = skipSpace(s, i+1)
		}
		n, st := pyValueTo(b, s, i, depth+1)
		if st != complete {
			return n, st
		}
		i = n
	}
}

// pyString reads a quoted Python string at s[i:] (its escapes included).
func pyString(s string, i int) (string, int, status) {
	q := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); {
		c := s[j]
		switch {
		case c == q:
			return b.String(), j + 1, complete
		case c == '\n':
			return "", j, bad // a one-quoted string does not span lines
		case c != '\\':
			k := j + 1
			for k < len(s) && s[k] != q && s[k] != '\\' && s[k] != '\n' {
				k++
			}
			b.WriteString(s[j:k])
			j = k
			continue
		}
		if j+1 == len(s) {
			return "", j, incomplete
		}
		e := s[j+1]
		j += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0':
			b.WriteByte(0)
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if j+n > len(s) {
				return "", j, incomplete
			}
			r, err := strconv.ParseUint(s[j:j+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(r)) {
				return "", j, bad
			}
			b.WriteRune(rune(r))
			j += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", len(s), incomplete
}

// pyNumber reads a Python number at s[i:] and writes it as JSON.
func pyNumber(b *strings.Builder, s string, i int) (int, status) {
	j := i
	for j < len(s) && (s[j] == '-' || s[j] == '+' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == '_' || '0' <= s[j] && s[j] <= '9') {
		j++
	}
	if j == len(s) {
		return j, incomplete
	}
	w := strings.ReplaceAll(s[i:j], "_", "")
	f, err := strconv.ParseFloat(w, 64)
	if err != nil { // 1e999 too: no JSON reader takes it
		return i, bad
	}
	if json.Valid([]byte(w)) {
		b.WriteString(w)
		return j, complete
	}
	out, err := json.Marshal(f)
	if err != nil {
		return i, bad
	}
	b.Write(out)
	return j, complete
}

func isIdentByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
