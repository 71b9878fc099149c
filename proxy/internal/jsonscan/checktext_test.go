package jsonscan

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// checkTextReference is what checkText computes, a rune at a time: the
// offset of the first control character or invalid UTF-8, or -1.
func checkTextReference(t []byte) int {
	for i := 0; i < len(t); {
		r, n := utf8.DecodeRune(t[i:])
		if r < 0x20 || r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// textPieces are what string text is made of, for the differential tests:
// plain runs of several lengths (across the sixteen-byte turns and the
// eight-byte tail word), control characters, multi-byte characters whole
// and cut, invalid UTF-8.
var textPieces = []string{
	"a", "plain text", "0123456789abcdef", "0123456789abcdefghijklmnopqrstu",
	`"`, `\`, `\n`, "\x00", "\x01", "\x1f", "\x7f", "\n", "é", "€", "😀",
	"\xe2\x82", "\xff", "\x80", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
}

func randomText(r *rand.Rand) []byte {
	var b []byte
	for range r.IntN(24) {
		b = append(b, textPieces[r.IntN(len(textPieces))]...)
	}
	return b
}

// TestCheckTextMatchesReference: checkText and checkTextReference agree
// on 200,000 texts of textPieces, every byte at every offset of a turn, and
// every text's every suffix of the first hundred (every alignment).
func TestCheckTextMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	for n := range 200000 {
		b := randomText(r)
		for k := 0; k < len(b) && (n < 100 || k == 0); k++ {
			if got, want := checkText(b[k:]), checkTextReference(b[k:]); got != want {
				t.Fatalf("%q: checkText %d, reference %d", b[k:], got, want)
			}
		}
	}
	for c := range 256 {
		for at := range 40 {
			b := []byte("0123456789abcdef0123456789abcdef0123456789")
			b[at] = byte(c)
			if got, want := checkText(b), checkTextReference(b); got != want {
				t.Fatalf("%q: checkText %d, reference %d", b, got, want)
			}
		}
	}
}

// FuzzCheckText is TestCheckTextMatchesReference on the fuzzer's bytes.
func FuzzCheckText(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 14))
	for range 32 {
		f.Add(randomText(r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := checkText(b), checkTextReference(b); got != want {
			t.Fatalf("%q: checkText %d, reference %d", b, got, want)
		}
	})
}
