package translate

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/sse"
)

// relayChat runs a Chat stream through a ChatOnChatStream in pieces cut at the
// given offsets.
func relayChat(t testing.TB, alias string, in []byte, cuts []int) ([]byte, *ChatOnChatStream) {
	t.Helper()
	c := NewChatOnChatStream(alias)
	var out []byte
	prev := 0
	for _, cut := range append(cuts, len(in)) {
		var err error
		if out, err = c.Feed(out, in[prev:cut]); err != nil {
			t.Fatalf("Feed: %v", err)
		}
		prev = cut
	}
	return out, c
}

// The fixtures write "model" once per chunk, at the top level, without
// spaces: a plain substitution says what the relay must send.
var fixtureModel = regexp.MustCompile(`"model":"[^"]*"`)

func TestChatStreamFixtures(t *testing.T) {
	const alias = "team-coder"
	r := rand.New(rand.NewPCG(3, 5))
	for _, name := range fixtures.BackendStreams() {
		t.Run(name, func(t *testing.T) {
			in := fixture(t, name)
			want := fixtureModel.ReplaceAll(in, []byte(`"model":"`+alias+`"`))
			got, c := relayChat(t, alias, in, nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("relay:\n%s\nwant:\n%s", got, want)
			}
			// Every chunk names the alias (the fixtures' empty first chunk too).
			var d sse.Decoder
			if err := d.Feed(got); err != nil {
				t.Fatal(err)
			}
			for ev, ok := d.End(); ok; ev, ok = d.End() {
				if string(ev.Data) == "[DONE]" {
					continue
				}
				var chunk chat.Chunk
				if err := json.Unmarshal(ev.Data, &chunk); err != nil {
					t.Fatal(err)
				}
				if chunk.Error == nil && chunk.Model != alias {
					t.Fatalf("chunk model %q in %s", chunk.Model, ev.Data)
				}
			}
			hasDone := bytes.Contains(in, []byte("data: [DONE]"))
			if c.Done() != hasDone || !bytes.Contains(got, []byte("data: [DONE]\n\n")) == hasDone {
				t.Fatalf("Done %v, [DONE] in the input %v", c.Done(), hasDone)
			}
			if name == "error-midstream.sse" {
				if e := c.BackendErr(); e == nil || e.Message != "CUDA out of memory" || e.Type != "server_error" {
					t.Fatalf("BackendErr = %+v", e)
				}
			} else if e := c.BackendErr(); e != nil {
				t.Fatalf("BackendErr = %+v", e)
			}
			var ones []int
			for i := 1; i < len(in); i++ {
				ones = append(ones, i)
			}
			if got, _ := relayChat(t, alias, in, ones); !bytes.Equal(got, want) {
				t.Fatalf("one byte at a time:\n%s", got)
			}
			for range 200 {
				cuts := randomCuts(r, len(in))
				if got, _ := relayChat(t, alias, in, cuts); !bytes.Equal(got, want) {
					t.Fatalf("cuts %v:\n%s", cuts, got)
				}
			}
		})
	}
}

func TestChatStreamRewrite(t *testing.T) {
	for _, tc := range []struct {
		name, alias, in, want string
	}{
		{"spaces", "a", `data: { "model" : "x" , "choices":[]}` + "\n\n", `data: { "model" : "a" , "choices":[]}` + "\n\n"},
		{"no space after data:", "a", `data:{"model":"x"}` + "\n\n", `data:{"model":"a"}` + "\n\n"},
		{"only the top level", "a", `data: {"choices":[{"model":"keep"}],"meta":{"model":"keep"},"model":"x"}` + "\n\n", `data: {"choices":[{"model":"keep"}],"meta":{"model":"keep"},"model":"a"}` + "\n\n"},
		{"not inside strings", "a", `data: {"choices":[{"delta":{"content":"\"model\":\"x\""}}],"model":"y"}` + "\n\n", `data: {"choices":[{"delta":{"content":"\"model\":\"x\""}}],"model":"a"}` + "\n\n"},
		{"model null", "a", `data: {"model":null}` + "\n\n", `data: {"model":"a"}` + "\n\n"},
		{"no model", "a", `data: {"id":"1","choices":[]}` + "\n\n", `data: {"id":"1","choices":[]}` + "\n\n"},
		{"alias escaped", `a"b\c`, `data: {"model":"x"}` + "\n\n", `data: {"model":"a\"b\\c"}` + "\n\n"},
		{"crlf kept", "a", "data: {\"model\":\"x\"}\r\n\r\ndata: [DONE]\r\n\r\n", "data: {\"model\":\"a\"}\r\n\r\ndata: [DONE]\r\n\r\n"},
		{"cr kept", "a", "data: {\"model\":\"x\"}\r\rdata: [DONE]\r\r", "data: {\"model\":\"a\"}\r\rdata: [DONE]\r\r"},
		{"other lines kept", "a", ": keep-alive\nevent: chunk\nid: 7\ndata: {\"model\":\"x\"}\n\n", ": keep-alive\nevent: chunk\nid: 7\ndata: {\"model\":\"a\"}\n\n"},
		{"invalid JSON kept", "a", `data: {"model":"x"` + "\n\n", `data: {"model":"x"` + "\n\n"},
		{"trailing garbage kept", "a", `data: {"model":"x"} {` + "\n\n", `data: {"model":"x"} {` + "\n\n"},
		{"multi-line JSON kept", "a", "data: {\"model\":\ndata: \"x\"}\n\n", "data: {\"model\":\ndata: \"x\"}\n\n"},
		{"escaped name kept", "a", `data: {"mod\u0065l":"x"}` + "\n\n", `data: {"mod\u0065l":"x"}` + "\n\n"},
		{"invalid UTF-8 elsewhere kept", "a", "data: {\"c\":\"\xff\",\"model\":\"x\"}\n\n", "data: {\"c\":\"\xff\",\"model\":\"a\"}\n\n"},
		{"unterminated last line held", "a", `data: {"model":"x"}`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := relayChat(t, tc.alias, []byte(tc.in), nil)
			if string(got) != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			for i := 0; i <= len(tc.in); i++ {
				if got, _ := relayChat(t, tc.alias, []byte(tc.in), []int{i}); string(got) != tc.want {
					t.Fatalf("split at %d: got %q", i, got)
				}
			}
		})
	}
}

func TestChatStreamErrorChunks(t *testing.T) {
	for _, line := range []string{
		`{"error":{"message":"boom","type":"server_error","code":500}}`,
		`{"error":"boom"}`,
	} {
		in := "data: " + line + "\n\n"
		got, c := relayChat(t, "a", []byte(in), nil)
		if string(got) != in {
			t.Fatalf("error chunk changed: %q", got)
		}
		if e := c.BackendErr(); e == nil || e.Message != "boom" {
			t.Fatalf("%s: BackendErr = %+v", line, e)
		}
	}
}

func TestChatStreamLineTooLong(t *testing.T) {
	c := NewChatOnChatStream("a")
	big := bytes.Repeat([]byte("x"), 1<<20)
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = c.Feed(nil, big)
	}
	if err == nil {
		t.Fatal("an endless line must fail the relay")
	}
	if _, err2 := c.Feed(nil, []byte("\n")); err2 == nil {
		t.Fatal("the error must stick")
	}
}

// FuzzChatStream: any bytes, split anywhere, relay the same; bytes without
// a "model" member relay unchanged.
func FuzzChatStream(f *testing.F) {
	for _, name := range fixtures.BackendStreams() {
		b := fixture(f, name)
		f.Add(b, uint16(len(b)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		c := int(cut) % (len(in) + 1)
		whole, _ := relayChat(t, "alias", in, nil)
		split, _ := relayChat(t, "alias", in, []int{c})
		if !bytes.Equal(whole, split) {
			t.Fatalf("split at %d differs:\n%q\n%q", c, whole, split)
		}
		// What the relay holds back is only an unterminated last line.
		complete := in
		if i := bytes.LastIndexAny(in, "\r\n"); i >= 0 {
			complete = in[:i+1]
		} else {
			complete = nil
		}
		if !strings.Contains(string(in), `"model"`) && !bytes.Equal(whole, complete) {
			t.Fatalf("without a model the relay must not change a byte:\n%q\n%q", whole, complete)
		}
	})
}

func BenchmarkChatStream(b *testing.B) {
	in := fixture(b, "text-with-usage.sse")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		c := NewChatOnChatStream("team-coder")
		dst, _ = c.Feed(dst[:0], in)
	}
}
