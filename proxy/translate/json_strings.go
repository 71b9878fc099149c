package translate

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
)

// JSON strings as the translations copy them: raw, as the client escaped
// them. Every route's writer uses these.

// emptyObject is the JSON value {}, for a call with no arguments.
var emptyObject = []byte(`{}`)

// appendQuoted appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, so
// whatever bytes a backend or caller sends, the JSON stays valid.
func appendQuoted[T ~string | ~[]byte](dst []byte, s T) []byte {
	return jsonquote.Append(dst, s)
}

// appendString writes segs, each the inside of a JSON string (escaped,
// without quotes), as one JSON string.
func appendString(w []byte, segs [][]byte) []byte {
	w = append(w, '"')
	for _, s := range segs {
		w = append(w, s...)
	}
	return append(w, '"')
}

// inner returns the inside of a raw JSON string: escaped, without quotes.
func inner(v []byte) []byte {
	if len(v) < 2 {
		return nil
	}
	return v[1 : len(v)-1]
}

// textOf returns the inside of a text block's raw string; an absent or
// null text is empty. ok is false when the text is not a string.
func textOf(v []byte) (in []byte, ok bool) {
	switch jsontext.Value(v).Kind() {
	case '"':
		return inner(v), true
	case 'n', jsontext.KindInvalid:
		return nil, true
	}
	return nil, false
}

// unquoted returns the text of the valid JSON string v (quoted): its
// inside when it has no escapes, else a copy unescaped.
func unquoted(v []byte) []byte {
	in := inner(v)
	if bytes.IndexByte(in, '\\') < 0 {
		return in
	}
	s, _ := jsontext.AppendUnquote(nil, v)
	return s
}

// quoteInner escapes s as the inside of a JSON string.
func quoteInner(s string) []byte {
	q := appendQuoted(nil, s) // s came from a validated string
	return q[1 : len(q)-1]
}

// rawHasPrefix reports whether the raw JSON string v starts with prefix
// once unescaped.
func rawHasPrefix(v []byte, prefix string) bool {
	in := inner(v)
	if len(in) >= len(prefix) && string(in[:len(prefix)]) == prefix {
		return true
	}
	if bytes.IndexByte(in, '\\') < 0 {
		return false
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return err == nil && strings.HasPrefix(string(s), prefix)
}
