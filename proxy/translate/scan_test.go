package translate

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// The scanner accepts exactly what jsontext accepts (duplicate names
// allowed), and a value it accepts ends where jsontext's does.
func FuzzScannerMatchesJSONText(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `""`, `0`, `-0.5e+10`, `01`, `1.`, `-`, `1e`, `.5`, `tru`, `true`, `nul`, `null `,
		`{"a":1,"a":2}`, `{"a" : [1, 2 ,{"b":null}], "c":"\u00e9\ud83d\ude00"}`,
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud83d\ude00"`, `"\u12"`, `"\x"`, `"a\/b"`,
		"\"tab\there\"", "\"\xff\"", "\"\xe2\x82\"", "\"\xe2\x82\xac\"", "\"" + strings.Repeat("abcdefgh", 9) + "\x01\"",
		`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{,}`, `[,1]`, `{"a":1 "b":2}`, ` `, ``, `{"a":"b"} x`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("é x \\n ", 40) + `"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sc := scanner{b: b}
		_, err := sc.value()
		if err == nil && sc.ws() != 0 || err == nil && sc.i < len(b) {
			err = sc.errorf("data after the value")
		}
		want := jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true))
		if (err == nil) != want {
			t.Fatalf("%q: scanner error %v, jsontext valid %v", b, err, want)
		}
	})
}

// A 50 KB Chat request is mostly string text: the scanner skips it far
// faster than a byte-at-a-time tokenizer.
func BenchmarkScanChatRequest(b *testing.B) {
	body := chatBody(b)
	runBench(b, body, func(body []byte) {
		sc := scanner{b: body}
		if _, err := sc.value(); err != nil {
			b.Fatal(err)
		}
	})
}

// xorshift returns a repeatable pseudo-random source from seed: each call
// gives a number in [0, n).
func xorshift(seed uint64) func(n int) int {
	return func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
}

// Random short inputs over an alphabet of JSON's troublesome bytes, with a
// fixed seed: the scanner and jsontext agree on every one.
func TestScannerMatchesJSONTextRandom(t *testing.T) {
	alphabet := []string{`"`, `\`, `u`, `d8`, `dc`, `00`, `0`, `1`, `-`, `+`, `.`, `e`, `{`, `}`, `[`, `]`, `:`, `,`, ` `, "\n", "\t", "\x01", "\x7f", "\xc3\xa9", "\xe2\x82", "\xff", `true`, `null`, `a`, `"a"`, `"b":`, `\"`, `\n`, `\u00e9`, `\ud83d\ude00`}
	next := xorshift(7)
	for range 200000 {
		var sb strings.Builder
		if next(2) == 0 {
			sb.WriteString(`{"k":"`)
		}
		for range 1 + next(12) {
			sb.WriteString(alphabet[next(len(alphabet))])
		}
		b := []byte(sb.String())
		sc := scanner{b: b}
		_, err := sc.value()
		if err == nil && (sc.ws() != 0 || sc.i < len(b)) {
			err = sc.errorf("data after the value")
		}
		if want := jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true)); (err == nil) != want {
			t.Fatalf("%q: scanner error %v, jsontext valid %v", b, err, want)
		}
	}
}

// str stops at the first byte that is not plain text, sixteen bytes a
// turn, and goes a byte at a time near the end of the input: every kind of
// such byte, at every offset around its word boundaries, gives jsontext's
// verdict and end.
func TestScannerStringBoundaries(t *testing.T) {
	kinds := []string{`"`, `\n`, `\u00e9`, `\x`, "\x01", "\x7f", "é", "\xe2\x82\xac", "\xff", "\xe2\x82"}
	for at := 0; at <= 73; at++ {
		for _, k := range kinds {
			for _, tail := range []string{`"`, `abc"`, ``, `", 1`} {
				b := []byte(`"` + strings.Repeat("a", at) + k + tail)
				sc := scanner{b: b}
				raw, err := sc.value()
				want := jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true))
				if got := err == nil && sc.ws() == 0; got != want {
					t.Fatalf("%q: scanner error %v (rest %q), jsontext valid %v", b, err, b[sc.i:], want)
				}
				if err == nil && !jsontext.Value(raw).IsValid() {
					t.Fatalf("%q: the scanner's value %q is not a JSON string", b, raw)
				}
			}
		}
	}
}
