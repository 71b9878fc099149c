package translate

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestOneEstimateOnEveryPath: the same user text is the same prompt
// estimate through count_tokens (CountTokens), MessagesOnChatRequest,
// ChatOnChatRequest, MessagesOnChatResponse and ResponsesOnChatRequest, and long runs of one
// character cost what cl100k_base makes of them (js-tiktoken 1.0.21,
// getEncoding("cl100k_base")): 24,000 spaces are 188 tokens, where the
// Chat path's byte count said 5,722 and count_tokens 9.
func TestOneEstimateOnEveryPath(t *testing.T) {
	const frame = 2 * messageOverhead // the user message and the reply's start
	for _, c := range []struct {
		name   string
		text   string
		cl100k int // of the text alone
	}{
		{"24,000 spaces", strings.Repeat(" ", 24000), 188},
		{"2,000 spaces", strings.Repeat(" ", 2000), 16},
		{"2,000 newlines", strings.Repeat("\n", 2000), 63},
		{"2,000 tabs", strings.Repeat("\t", 2000), 125},
		{"2,000 dashes", strings.Repeat("-", 2000), 31},
		{"x, 300 spaces, y", "x" + strings.Repeat(" ", 300) + "y", 5},
		{"prose", "Hello, world! The quick brown fox jumps over the lazy dog.", 14},
	} {
		q := strconv.Quote(c.text)
		count, err := CountTokens([]byte(`{"model":"m","messages":[{"role":"user","content":` + q + `}]}`))
		if err != nil {
			t.Fatal(err)
		}
		window := func(string) (Target, error) {
			return Target{BackendModel: "m", SupportsSystemMessage: true, ContextWindow: 1 << 20}, nil
		}
		m2c, err := MessagesOnChatRequest([]byte(`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":`+q+`}]}`), window)
		if err != nil {
			t.Fatal(err)
		}
		chatBody := []byte(`{"model":"m","max_tokens":16,"messages":[{"role":"user","content":` + q + `}]}`)
		c2c, err := ChatOnChatRequest(chatBody, window)
		if err != nil {
			t.Fatal(err)
		}
		c2m, err := ChatOnMessagesRequest(chatBody, window)
		if err != nil {
			t.Fatal(err)
		}
		r2c, _, err := ResponsesOnChatRequest([]byte(`{"model":"m","input":[{"role":"user","content":`+q+`}]}`), window)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-16s cl100k %4d+%d  count_tokens %4d  Messages→Chat %4d  Chat→Chat %4d  Chat→Messages %4d  Responses→Chat %4d",
			c.name, c.cl100k, frame, count, m2c.InputTokens, c2c.InputTokens, c2m.InputTokens, r2c.InputTokens)
		for path, n := range map[string]int{"Messages→Chat": m2c.InputTokens, "Chat→Chat": c2c.InputTokens, "Chat→Messages": c2m.InputTokens, "Responses→Chat": r2c.InputTokens} {
			if n != count {
				t.Errorf("%s: %s estimates %d, count_tokens %d", c.name, path, n, count)
			}
		}
		if want := c.cl100k + frame; count < want*85/100 || count > want*115/100+1 {
			t.Errorf("%s: estimate %d, cl100k_base %d (+%d for the message)", c.name, count, c.cl100k, frame)
		}
	}
}

// TestUnescapeSome: the inside of a JSON string reads back as jsontext
// unquotes the whole string, at once or a few bytes at a time.
func TestUnescapeSome(t *testing.T) {
	for _, s := range []string{"plain", "a\nb\tc\r\"q\" \\ /", "é 日本 😀", "\u2028\x01", "end\\"} {
		q, _ := jsontext.AppendQuote(nil, s)
		q = bytes.ReplaceAll(q, []byte("/"), []byte(`\/`)) // an escape jsontext never writes
		want, err := jsontext.AppendUnquote(nil, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1 << 20, 5, 3} {
			var got []byte
			for in := q[1 : len(q)-1]; len(in) > 0; {
				var part []byte
				part, in = unescapeSome(nil, in, limit)
				got = append(got, part...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%q, %d bytes at a time: %q, want %q", q, limit, got, want)
			}
		}
	}
	if got, rest := unescapeSome(nil, []byte(`\ud83d\ude00 \u00e9`), 100); string(got) != "😀 é" || len(rest) != 0 {
		t.Errorf("surrogates: %q", got)
	}
}
