// Package jsonquote writes a string as a JSON string exactly as jsonv2
// (jsontext.AppendQuote) writes it, faster for the common case: text of
// plain ASCII (no control character, quote, backslash or byte at or above
// 0x80: ids, names, most of a stream's deltas) is written as it is,
// between quotes, without jsonv2's copy of a string into a byte slice and
// its byte-at-a-time look; any other text goes to jsonv2 (escapes, and
// invalid UTF-8 becomes U+FFFD). Unquote reads a raw JSON string back.
package jsonquote

import (
	"github.com/go-json-experiment/json/jsontext"
)

// Append appends s to dst as a JSON string.
func Append[T ~string | ~[]byte](dst []byte, s T) []byte {
	if Plain(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	dst, _ = jsontext.AppendQuote(dst, s)
	return dst
}

// Plain reports that s is plain ASCII: its JSON string is s between
// quotes. Eight bytes a turn: in a word x of eight bytes, a byte below
// 0x20, or one that is '"' or '\\' once xor-ed with it (zero), borrows
// into its high bit; a byte at or above 0x80 has it set. The last bytes
// of a string of eight or more are its last word, read overlapping the
// one before.
func Plain[T ~string | ~[]byte](s T) bool {
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		if !plainWord(s[i : i+8]) {
			return false
		}
	}
	if i == len(s) {
		return true
	}
	if i > 0 {
		return plainWord(s[len(s)-8:])
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// plainWord is Plain for the eight bytes of t.
func plainWord[T ~string | ~[]byte](t T) bool {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	x := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
	return (x|(x-lows*0x20)|(x^(lows*'"')-lows)|(x^(lows*'\\')-lows))&highs == 0
}

// Unquote is the text of the raw JSON string v; "" for anything else
// (absent, null, another kind, malformed).
func Unquote(v jsontext.Value) string {
	if v.Kind() != '"' {
		return ""
	}
	b, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return ""
	}
	return string(b)
}
