package jsonquote

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// check: Append writes what jsontext.AppendQuote writes, for a string and
// a byte slice, and Plain says whether that is s between quotes.
func check(t *testing.T, s []byte) {
	want, _ := jsontext.AppendQuote([]byte("x"), s)
	if got := Append([]byte("x"), s); !bytes.Equal(got, want) {
		t.Fatalf("%q: Append([]byte) %q, jsontext %q", s, got, want)
	}
	if got := Append([]byte("x"), string(s)); !bytes.Equal(got, want) {
		t.Fatalf("%q: Append(string) %q, jsontext %q", s, got, want)
	}
	verbatim := bytes.Equal(want, append(append([]byte(`x"`), s...), '"'))
	plain := verbatim && bytes.IndexFunc(s, func(r rune) bool { return r >= 0x80 }) < 0
	if Plain(s) != plain || Plain(string(s)) != plain {
		t.Fatalf("%q: Plain %v, want %v", s, Plain(s), plain)
	}
}

// TestAppendMatchesJSONText: every byte at every offset of a word and its
// tail, and 100,000 random strings of bytes drawn mostly from around the
// ones that are not plain.
func TestAppendMatchesJSONText(t *testing.T) {
	for c := range 256 {
		for at := range 17 {
			s := bytes.Repeat([]byte("a"), 17)
			s[at] = byte(c)
			check(t, s)
			check(t, s[:at+1])
		}
	}
	check(t, nil)
	near := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"' - 1, '"', '"' + 1, '\\' - 1, '\\', '\\' + 1, 0x7e, 0x7f, 0x80, 0xc3, 0xa9, 0xe2, 0xff, '<', '&'}
	r := rand.New(rand.NewPCG(14, 5))
	for range 100000 {
		s := make([]byte, r.IntN(40))
		for i := range s {
			if r.IntN(8) == 0 {
				s[i] = near[r.IntN(len(near))]
			} else {
				s[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		check(t, s)
	}
}

// FuzzAppend is TestAppendMatchesJSONText on the fuzzer's bytes.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "resp_0123456789abcdef", "word1 ", `a"b`, "0123456\\", "\x7f", "é", "\xff", "<&>", "\u2028", "0123456789abcdef\x1f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(check)
}

func TestUnquote(t *testing.T) {
	for v, want := range map[string]string{`"a\nb"`: "a\nb", `"\u00e9"`: "é", `null`: "", ``: "", `1`: "", `"bad`: "", `"\x"`: ""} {
		if got := Unquote(jsontext.Value(v)); got != want {
			t.Errorf("Unquote(%s) = %q, want %q", v, got, want)
		}
	}
}
