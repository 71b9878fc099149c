package translate

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// strReference is str with checkText as they were before checkText went
// on sixteen bytes a turn after a multi-byte character (session 5),
// kept as the reference TestStrMatchesReference and FuzzStrMatchesReference
// compare with. It consumes a string; s.b[s.i] is its opening quote. Most strings of
// a request are short (member names, schema keywords): a first pass,
// eight bytes a turn, finds the first byte that is not plain text
// (special) within shortStringReference bytes, and a string that ends there is
// done. Longer text goes on from where it stopped: bytes.IndexByte finds
// its end and any backslash, and the text between is checked sixteen bytes
// a turn (checkText).
func (s *scanner) strReference() error {
	b := s.b
	j := s.i + 1
	for end := min(len(b)-8, j+shortStringReference); j <= end; j += 8 {
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
				if k := checkTextReference(b[j:]); k >= 0 {
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
		if k := checkTextReference(seg); k >= 0 {
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

// shortStringReference is how far strReference's first pass looks.
const shortStringReference = 32

// checkTextReference checks unescaped string text: no control character, valid
// UTF-8. It returns the offset of the first bad byte, or -1.
func checkTextReference(t []byte) int {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	// A byte below 0x20 borrows into its high bit; a byte of a multi-byte
	// character has it set. Sixteen bytes a turn, on a slice whose length
	// the compiler knows, so the loads need no bounds checks.
	rest := t
	for len(rest) >= 16 {
		x := binary.LittleEndian.Uint64(rest)
		y := binary.LittleEndian.Uint64(rest[8:])
		if ((x-lows*0x20)|x|(y-lows*0x20)|y)&highs != 0 {
			break
		}
		rest = rest[16:]
	}
	i := len(t) - len(rest)
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

// strOutcome is what str leaves: its error's words, where it stopped and
// whether it noted an odd escape.
type strOutcome struct {
	err string
	i   int
	odd bool
}

func strOutcomes(b []byte) (got, want strOutcome) {
	run := func(f func(*scanner) error) strOutcome {
		sc := scanner{b: b}
		var o strOutcome
		if err := f(&sc); err != nil {
			o.err = err.Error()
		}
		o.i, o.odd = sc.i, sc.odd && o.err == "" // odd means nothing after an error
		return o
	}
	return run((*scanner).str), run((*scanner).strReference)
}

// strPieces are what a string's text is made of, for the differential
// tests: plain runs of several lengths, every kind of special byte, every
// kind of escape (canonical, odd, invalid, cut short), multi-byte
// characters whole and cut, invalid UTF-8.
var strPieces = []string{
	"a", "plain text", "0123456789abcdef", "0123456789abcdefghijklmnopqrstu",
	`"`, `\`, `\n`, `\"`, `\\`, `\/`, `\u00e9`, `\u001f`, `\u001F`, `\ud83d\ude00`, `\ud83d`, `\ude00`,
	`\x`, `\u12`, `\`, "\x01", "\x1f", "\x7f", "\n", "é", "€", "😀", "\xe2\x82", "\xff", "\xc0\x80", "\xed\xa0\x80",
}

// randomStr builds a string (its opening quote first) from strPieces.
func randomStr(r *rand.Rand) []byte {
	b := []byte{'"'}
	for range r.IntN(24) {
		b = append(b, strPieces[r.IntN(len(strPieces))]...)
	}
	switch r.IntN(3) {
	case 0:
		b = append(b, '"')
	case 1:
		b = append(b, `", "next": 1}`...)
	}
	return b
}

// TestStrMatchesReference: str and strReference, the loop it replaced,
// give the same verdict, the same error, stop at the same byte and note
// the same odd escapes, on 200,000 strings of pieces that exercise every
// branch at every alignment.
func TestStrMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	for range 200000 {
		b := randomStr(r)
		if got, want := strOutcomes(b); got != want {
			t.Fatalf("%q: str %+v, reference %+v", b, got, want)
		}
	}
}

// FuzzStrMatchesReference is TestStrMatchesReference on the fuzzer's
// input, read as a string's text.
func FuzzStrMatchesReference(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 14))
	for range 32 {
		f.Add(randomStr(r)[1:])
	}
	f.Add([]byte("0123456789abcdef\u00e9€0123456789abcdef\""))
	f.Fuzz(func(t *testing.T, text []byte) {
		b := append([]byte{'"'}, text...)
		if got, want := strOutcomes(b); got != want {
			t.Fatalf("%q: str %+v, reference %+v", b, got, want)
		}
	})
}
