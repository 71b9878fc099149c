package translate

import (
	"bytes"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// EstimateTokens (table-driven, tokens.go) must give the same integer as
// referenceEstimateTokens (byte by byte, tokens_reference_test.go) for every
// input: the estimate feeds golden files and usage numbers.

// fixtureTexts gives every text the tests' fixtures hold: each file under
// ../fixtures (the captured client requests, backend streams, kinds, …) and
// testdata (but the fuzz corpora) as its raw bytes, each JSON document in
// it (a whole .json file, each line of a stream) compacted, and every
// string in those documents unquoted, with the strings that are JSON
// themselves (tool arguments, stream data) opened in turn.
func fixtureTexts(t testing.TB) []string {
	t.Helper()
	var texts []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			texts = append(texts, s)
		}
	}
	var strs func(doc []byte, depth int)
	strs = func(doc []byte, depth int) {
		v := jsontext.Value(bytes.Clone(doc))
		if v.Compact() != nil {
			return
		}
		add(string(v))
		d := jsontext.NewDecoder(bytes.NewReader(v))
		for {
			tok, err := d.ReadToken()
			if err == io.EOF || err != nil {
				return
			}
			if tok.Kind() != '"' {
				continue
			}
			s := tok.String()
			add(s)
			if depth < 3 && (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) {
				strs([]byte(s), depth+1)
			}
		}
	}
	for _, root := range []string{filepath.Join("..", "fixtures"), "testdata"} {
		err := filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.IsDir() {
				if path == filepath.Join("testdata", "fuzz") {
					return filepath.SkipDir
				}
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			add(string(b))
			strs(b, 0)
			for _, line := range bytes.Split(b, []byte("\n")) {
				line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("data:")))
				if len(line) > 0 && (line[0] == '{' || line[0] == '[') {
					strs(line, 0)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(texts) < 1000 {
		t.Fatalf("only %d fixture texts: are the fixtures where this test looks?", len(texts))
	}
	return texts
}

// edgeTexts are inputs on the edges of the estimator's cases: non-Latin
// letters, marks, emoji, invalid UTF-8, long runs of each kind.
var edgeTexts = []string{
	"", " ", "\t", "\n", "\r\n", "a", "1", ".", "\x00", "\x7f", "\x80", "\xff",
	"日本語のテキストと中文和한국어", "こんにちは、世界！", "😀😀 👍🏽 🇫🇷 \u200d", "ﬁ ℃ ← → ∑ ≠",
	"naïve café résumé Ærøskøbing straße", "Привет, мир! Γειά σου Κόσμε",
	"e\u0301 a\u0308bc \u0301x n\u0303o \u20dd", "\u0915\u093f\u0924\u093e\u092c", // Devanagari with a vowel sign (Mc)
	"bad \xc3( \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf end", "a\xffb \xffa .\xff 1\xff",
	strings.Repeat(" ", 300), strings.Repeat("\t", 40), strings.Repeat("\n", 100), strings.Repeat("\r\n", 50),
	strings.Repeat(" \t", 200) + "x", strings.Repeat(" ", 129) + "\n", "x" + strings.Repeat("\t ", 20) + ".",
	strings.Repeat("-", 200), strings.Repeat("=", 64), strings.Repeat("=", 65), "-=-=-=-=-=", "!!!!!!!\n\n\r",
	" ......\n", " .......", " \x01...", "\x01\x01\x01", "\x01abc", ".abc", " .abc", "..abc", "\x7fabc",
	"123", "1234567890123", "v1.2.3 0x1F 3.14159 1e10 ٣٤٥ １２３", "a1b2c3",
	strings.Repeat("a", 15), strings.Repeat("a", 16), strings.Repeat("a", 40), " " + strings.Repeat("b", 31), "." + strings.Repeat("c", 20),
	" é", ".é", "\tñ", "  日本", "\u00a0word \u2003x \u3000y", "word\u00a0word", "x\u200by",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n", `{"type":"object","properties":{"a":{"type":"string"}}}`,
}

func TestEstimateTokensAgreesOnFixtures(t *testing.T) {
	texts := append(fixtureTexts(t), edgeTexts...)
	n := 0
	for _, s := range texts {
		n += len(s)
		if got, want := EstimateTokens(s), referenceEstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%.60q…, %d bytes) = %d, the byte-by-byte reference %d", s, len(s), got, want)
		}
	}
	t.Logf("%d texts, %d bytes", len(texts), n)
}

// TestEstimateTokensAgreesOnPieces compares the two on texts pieced
// together at random (seeded, so the same each run) from the fragments
// each case of the estimator turns on, at every length up to a few
// hundred bytes: words that cross the fast path's 64-byte blocks, end at
// the end of the text or on a non-ASCII byte, runs of every kind.
func TestEstimateTokensAgreesOnPieces(t *testing.T) {
	pieces := []string{
		"a", "b", "Z", "word", "omicron", "lambda", "pi", "abcdefghijklmno", "abcdefghijklmnop", "xyzxyzxyzxyzxyzxyzxyz",
		" ", " ", " ", "  ", "\t", "\t\t", " \t", "\n", "\r\n", "\n\n\n",
		".", ",", "(", ")", "\"", "{", "}", "-", "--", "==", "...", "\x00", "\x01", "\x7f", "@", "[", "`", "{",
		"1", "42", "12345",
		"é", "ñ", "日本", "😀", "\u0301", "\u00a0", "\u3000", "٣", "Ω", "\xff", "\xc3", "\xe2\x82",
	}
	rng := rand.New(rand.NewPCG(40, 38))
	var b strings.Builder
	for n := range 40000 {
		b.Reset()
		for b.Len() < n%400 {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := EstimateTokens(s), referenceEstimateTokens(s); got != want {
			t.Fatalf("EstimateTokens(%q) = %d, the byte-by-byte reference %d", s, got, want)
		}
	}
}

// FuzzEstimateTokensAgrees: its seeds are the fixture texts, cut to 4 KB
// pieces (as promptEstimate reads long texts, and small enough for the
// fuzzer to mutate quickly), and edgeTexts.
func FuzzEstimateTokensAgrees(f *testing.F) {
	for _, s := range fixtureTexts(f) {
		for len(s) > 4096 {
			f.Add(s[:4096])
			s = s[4096:]
		}
		f.Add(s)
	}
	for _, s := range edgeTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := EstimateTokens(s), referenceEstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%q) = %d, the byte-by-byte reference %d", s, got, want)
		}
	})
}
