package jsonscan

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

var dupNames = jsontext.AllowDuplicateNames(true)

// valueSeeds are JSON's edge cases, valid and not; the committed corpus
// (testdata/fuzz) holds these and what fuzzing found beside them.
var valueSeeds = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+10`, `01`, `1.`, `-`, `1e`, `.5`, `tru`, `true`, `nul`, `null `, `1x`, `{} x`,
	`{"a":1,"a":2}`, `{"a" : [1, 2 ,{"b":null}], "c":"\u00e9\ud83d\ude00"}`,
	`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud83d\ude00"`, `"\u12"`, `"\x"`, `"a\/b"`,
	"\"tab\there\"", "\"\xff\"", "\"\xe2\x82\"", "\"\xe2\x82\xac\"", "\"" + strings.Repeat("abcdefgh", 9) + "\x01\"",
	`{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `{,}`, `[,1]`, `{"a":1 "b":2}`, ` `, ``, `{"a":"b"} x`,
	`{"model":"a","x":tru}`, `{"model":"a","x":{"a" "b"}}`, `{"model":"a","x":[}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("é x \\n ", 40) + `"}]}`,
}

// checkValue: Value accepts what jsontext accepts, and where jsontext's
// decoder reads a first value the scanner reads the same bytes, to the
// same offset.
func checkValue(t *testing.T, b []byte) {
	t.Helper()
	sc := New(b)
	raw, err := sc.Value()
	end := sc.Pos()
	var se *SyntaxError
	if err != nil && !errors.As(err, &se) {
		t.Fatalf("%q: error %v is not a *SyntaxError", b, err)
	}
	whole := err == nil && sc.AtEnd()
	if want := jsontext.Value(b).IsValid(dupNames); whole != want {
		t.Fatalf("%q: scanner error %v (whole %v), jsontext valid %v", b, err, whole, want)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b), dupNames)
	if v, derr := dec.ReadValue(); derr == nil {
		if err != nil || !bytes.Equal(raw, v) || int64(end) != dec.InputOffset() {
			t.Fatalf("%q: scanner read %q to %d (%v), jsontext %q to %d", b, raw, end, err, v, dec.InputOffset())
		}
	}
}

func TestValueMatchesJSONTextSeeds(t *testing.T) {
	for _, s := range valueSeeds {
		checkValue(t, []byte(s))
	}
	for _, name := range fixtures.ClientRequests() {
		b, err := fixtures.ClientRequest(name)
		if err != nil {
			t.Fatal(err)
		}
		checkValue(t, b)
	}
}

// FuzzValueMatchesJSONText is checkValue on the fuzzer's bytes.
func FuzzValueMatchesJSONText(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkValue)
}

// checkMembers: on a valid object, Members gives the names and values
// jsontext's tokens give, in order, repeats included.
func checkMembers(t *testing.T, b []byte) {
	t.Helper()
	if !jsontext.Value(b).IsValid(dupNames) || jsontext.Value(b).Kind() != '{' {
		return
	}
	type member struct{ name, value string }
	var got []member
	sc := New(b)
	err := sc.Members(func(name []byte) error {
		v, err := sc.Value()
		got = append(got, member{string(name), string(v)})
		return err
	})
	if err != nil || !sc.AtEnd() {
		t.Fatalf("%q: Members refused a valid object: %v", b, err)
	}
	var want []member
	dec := jsontext.NewDecoder(bytes.NewReader(b), dupNames)
	if _, err := dec.ReadToken(); err != nil {
		t.Fatal(err)
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		n := string(name)
		v, err := dec.ReadValue()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, member{n, string(v)})
	}
	if len(got) != len(want) {
		t.Fatalf("%q: Members %q, jsontext %q", b, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%q: member %d: Members %q, jsontext %q", b, i, got[i], want[i])
		}
	}
}

func FuzzMembersMatchJSONText(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{ "a" : [1, {"b":"}"}] , "\u0063":"\\\"" }`, `{"model":"m","stream":true,"messages":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkMembers)
}

// Elements gives an array's elements as jsontext reads them, and stops at
// an error its callback returns, which it returns as it is.
func TestElements(t *testing.T) {
	b := []byte(` [1, "two" ,{"three":[3]}, null] `)
	var got []string
	sc := New(b)
	if err := sc.Elements(func(i int) error {
		v, err := sc.Value()
		got = append(got, string(v))
		return err
	}); err != nil || !sc.AtEnd() {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != `1|"two"|{"three":[3]}|null` {
		t.Fatalf("elements %q", got)
	}
	sc = New(b)
	if err := sc.Elements(func(i int) error { return io.EOF }); err != io.EOF {
		t.Fatalf("the callback's error came back as %v", err)
	}
	sc = New([]byte(`{"a":1}`))
	var se *SyntaxError
	if err := sc.Elements(func(int) error { return nil }); !errors.As(err, &se) || se.Offset != 0 {
		t.Fatalf("an object read as an array: %v", err)
	}
}

// A SyntaxError says where, as the proxy's errors word it.
func TestSyntaxErrorWording(t *testing.T) {
	sc := New([]byte(`{"model":"a","x":tru}`))
	_, err := sc.Value()
	if err == nil || err.Error() != `malformed JSON at byte offset 17: invalid literal, expecting true` {
		t.Fatalf("error %v", err)
	}
	sc = New([]byte(`{"a":`))
	if _, err := sc.Value(); err == nil || err.Error() != `malformed JSON at byte offset 5: unexpected end of input` {
		t.Fatalf("error %v", err)
	}
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
func TestValueMatchesJSONTextRandom(t *testing.T) {
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
		checkValue(t, []byte(sb.String()))
	}
}

// str stops at the first byte that is not plain text, sixteen bytes a
// turn, and goes a byte at a time near the end of the input: every kind of
// such byte, at every offset around its word boundaries, gives jsontext's
// verdict and end.
func TestStringBoundaries(t *testing.T) {
	kinds := []string{`"`, `\n`, `\u00e9`, `\x`, "\x01", "\x7f", "é", "\xe2\x82\xac", "\xff", "\xe2\x82"}
	for at := 0; at <= 73; at++ {
		for _, k := range kinds {
			for _, tail := range []string{`"`, `abc"`, ``, `", 1`} {
				checkValue(t, []byte(`"`+strings.Repeat("a", at)+k+tail))
			}
		}
	}
}

// BenchmarkValue scans the captured 49 KB client request: mostly string
// text, which the scanner skips far faster than a byte-at-a-time
// tokenizer.
func BenchmarkValue(b *testing.B) {
	body, err := fixtures.ClientRequest("01-text-turn.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		sc := New(body)
		if _, err := sc.Value(); err != nil {
			b.Fatal(err)
		}
	}
}
