package translate

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

var tgtNative = Target{BackendModel: "qwen3", SupportsSystemMessage: true, DropParams: "context_management,betas,cache_control"}

// TestMessagesToMessagesBytes checks, byte for byte, what a vendora/
// backend receives: the input with exactly the normalized pieces cut or
// replaced, every other byte as the client sent it.
func TestMessagesToMessagesBytes(t *testing.T) {
	billing := `{"type":"text","text":"x-anthropic-billing-header: cc_version=1; cc_entrypoint=cli;"}`
	cases := []struct {
		name      string
		in, want  string
		maxOutput int
	}{
		{"model only", `{"model":"a","max_tokens":5,"messages":[]}`, `{"model":"qwen3","max_tokens":5,"messages":[]}`, 0},
		{"spacing kept",
			"{ \"model\" : \"a\" ,\n \"messages\":[ {\"role\":\"user\" ,\"content\":\"q\"} ] , \"max_tokens\": 5 }",
			"{ \"model\" : \"qwen3\" ,\n \"messages\":[ {\"role\":\"user\" ,\"content\":\"q\"} ] , \"max_tokens\": 5 }", 0},
		{"drop first", `{"betas":["x"],"model":"a","max_tokens":5}`, `{"model":"qwen3","max_tokens":5}`, 0},
		{"drop middle", `{"model":"a","context_management":{"edits":[]},"max_tokens":5}`, `{"model":"qwen3","max_tokens":5}`, 0},
		{"drop last", `{"model":"a","max_tokens":5,"context_management":{}}`, `{"model":"qwen3","max_tokens":5}`, 0},
		{"drop last two", `{"model":"a","max_tokens":5,"betas":[] , "cache_control":{"type":"ephemeral","ttl":"1h"}}`, `{"model":"qwen3","max_tokens":5}`, 0},
		{"drop runs", `{"betas":1,"context_management":2,"model":"a","cache_control":3,"max_tokens":5,"betas":4}`, `{"model":"qwen3","max_tokens":5}`, 0},
		{"nested kept", `{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"qwen3","messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral"}}]}]}`, 0},
		{"billing dropped", `{"model":"a","system":[` + billing + `, {"type":"text","text":"You are"}],"max_tokens":5}`,
			`{"model":"qwen3","system":[{"type":"text","text":"You are"}],"max_tokens":5}`, 0},
		{"billing alone", `{"model":"a","system":[` + billing + `],"max_tokens":5}`, `{"model":"qwen3","max_tokens":5}`, 0},
		{"billing escaped", `{"model":"a","system":[{"type":"text","text":"x-anthropic-billing-header\u003a v"},{"type":"text","text":"S"}]}`,
			`{"model":"qwen3","system":[{"type":"text","text":"S"}]}`, 0},
		{"billing not first", `{"model":"a","system":[{"type":"text","text":"S"},` + billing + `]}`,
			`{"model":"qwen3","system":[{"type":"text","text":"S"},` + billing + `]}`, 0},
		{"system string", `{"model":"a","system":"x-anthropic-billing-header: v"}`, `{"model":"qwen3","system":"x-anthropic-billing-header: v"}`, 0},
		{"clamp", `{"model":"a","max_tokens":128000,"stream":true}`, `{"model":"qwen3","max_tokens":8192,"stream":true}`, 8192},
		{"under clamp", `{"model":"a","max_tokens":100}`, `{"model":"qwen3","max_tokens":100}`, 8192},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tgt := tgtNative
			tgt.MaxOutputTokens = tc.maxOutput
			br, err := MessagesOnMessagesRequest([]byte(tc.in), resolverFor(tgt))
			if err != nil {
				t.Fatal(err)
			}
			if string(br.Body) != tc.want {
				t.Errorf("got  %s\nwant %s", br.Body, tc.want)
			}
			if !jsontext.Value(br.Body).IsValid(jsontext.AllowDuplicateNames(true)) {
				t.Errorf("invalid JSON out: %s", br.Body)
			}
			if br.Target.Alias != "a" || br.Stream != strings.Contains(tc.in, `"stream":true`) {
				t.Errorf("target %+v stream %v", br.Target, br.Stream)
			}
		})
	}
}

// TestMessagesToMessagesClientFixtures: each captured client request
// reaches the backend with the billing block and context_management cut
// and the model replaced, and nothing else changed.
func TestMessagesToMessagesClientFixtures(t *testing.T) {
	for _, name := range fixtures.ClientRequests() {
		t.Run(name, func(t *testing.T) {
			body := clientBody(t, name)
			want := body
			cut := func(piece string, repl string) {
				t.Helper()
				if n := bytes.Count(want, []byte(piece)); n != 1 {
					t.Fatalf("%q occurs %d times in the fixture", piece, n)
				}
				want = bytes.Replace(want, []byte(piece), []byte(repl), 1)
			}
			var f struct {
				System []struct {
					Text string `json:"text"`
				} `json:"system"`
				ContextManagement jsontext.Value `json:"context_management"`
			}
			if err := json.Unmarshal(body, &f); err != nil {
				t.Fatal(err)
			}
			if len(f.System) < 2 || !strings.HasPrefix(f.System[0].Text, billingPrefix) || len(f.ContextManagement) == 0 {
				t.Fatal("the fixture lost its billing block or context_management")
			}
			billing, _ := json.Marshal(f.System[0].Text)
			cut(`"system":[{"type":"text","text":`+string(billing)+`},`, `"system":[`)
			cut(`,"context_management":`+string(f.ContextManagement), "")
			cut(`"model":"claude-opus-5-5"`, `"model":"qwen3"`)
			br, err := MessagesOnMessagesRequest(body, resolverFor(tgtNative))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(br.Body, want) {
				t.Errorf("body differs beyond the normalizations:\n got %.300s…\nwant %.300s…", br.Body, want)
			}
		})
	}
}

func TestMessagesToMessagesErrors(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"model":1}`, `{"max_tokens":1}`, `{"model":"a","stream":"yes"}`, `{"model":"a",}`,
		// Malformed past the members the pass-through edits.
		"{\"model\":\"a\",\"messages\":\"\x01\"}", `{"model":"a","x":"\q"}`, `{"model":"a","x":01}`, `{"model":"a","x":tru}`,
		`{"model":"a","x":{"a" "b"}}`, `{"model":"a","x":[1,]}`, `{"model":"a","x":{"a":1,}}`, `{"model":"a","x":-}`,
		"{\"model\":\"a\",\"x\":\"\xff\"}", `{"model":"a","x":"\ud800"}`, `{"model":"a","x":[}`, `{"model":"a","x":{]}`,
		`{"model":"a"} x`, `{"model":"a","x":"}`} {
		_, err := MessagesOnMessagesRequest([]byte(in), resolverFor(tgtNative))
		var re *RequestError
		if !errors.As(err, &re) {
			t.Errorf("%s: err = %v, want a *RequestError", in, err)
		}
	}
}

func FuzzMessagesToMessages(f *testing.F) {
	for _, name := range fixtures.ClientRequests() {
		f.Add(clientBody(f, name), 0)
	}
	for _, s := range fuzzMessagesSeeds {
		f.Add([]byte(s), 10)
	}
	f.Add([]byte(`{"betas":1,"model":"a","system":[{"type":"text","text":"x-anthropic-billing-header: v"}],"context_management":2}`), 0)
	f.Fuzz(func(t *testing.T, body []byte, maxOut int) {
		tgt := tgtNative
		tgt.MaxOutputTokens = maxOut
		br, err := MessagesOnMessagesRequest(body, resolverFor(tgt))
		var out map[string]jsontext.Value
		if !fuzzOutput(t, br, err, &out, jsontext.AllowDuplicateNames(true)) {
			return
		}
		for _, k := range strings.Split(tgt.DropParams, ",") {
			if _, ok := out[k]; ok {
				t.Fatalf("%s reached the backend:\n%s", k, br.Body)
			}
		}
		if string(out["model"]) != `"qwen3"` {
			t.Fatalf("model %s", out["model"])
		}
	})
}

// billingObject judges the client's billing block, in any member order
// or escaping, as the billing block, and nothing else.
func TestBillingObject(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1; cc_entrypoint=sdk-cli;"}`: true,
		`{"text":"x-anthropic-billing-header: v","type":"text"}`:                                      true,
		`{ "type" : "t\u0065xt" , "text" : "x-anthropic-billing-header\u003a v" }`:                    true,
		`{"type":"text","text":"You are a coding agent"}`:                                             false,
		`{"type":"image","text":"x-anthropic-billing-header: v"}`:                                     false,
		`{"type":"text"}`: false,
		`{}`:              false,
	} {
		if got := billingObject([]byte(raw)); got != want {
			t.Errorf("%s: %v, want %v", raw, got, want)
		}
	}
}

// listed reads Target.DropParams as strings.Split does.
func TestListed(t *testing.T) {
	for _, list := range []string{"", "betas", "context_management,betas,cache_control", ",betas,", "a,,b"} {
		for _, name := range []string{"", "betas", "cache_control", "context_management", "bet", "a", "b", "a,b"} {
			want := list != "" && slices.Contains(strings.Split(list, ","), name)
			if got := listed(list, name); got != want {
				t.Errorf("listed(%q, %q) = %v, want %v", list, name, got, want)
			}
		}
	}
}

// BenchmarkScanObject: the top-level members of the client's request
// found, the body validated.
func BenchmarkScanObject(b *testing.B) {
	runBench(b, benchBody(b), func(body []byte) {
		if _, err := scanObject(body, false, nil); err != nil {
			b.Fatal(err)
		}
	})
}
