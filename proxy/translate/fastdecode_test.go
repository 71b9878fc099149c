package translate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// checkFastDecode decodes body both ways: when the fast decoder takes it,
// jsonv2 must take it too, with the same result.
func checkFastDecode(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	return checkFast(t, body, decodeRequestFast)
}

// checkFast decodes body with the fast decoder fast and with jsonv2: when
// fast takes it, jsonv2 must take it too, with the same result; when it
// gives up, it leaves nothing.
func checkFast[T any](t *testing.T, body []byte, fast func([]byte, *T) bool) (took bool) {
	t.Helper()
	var got, want, zero T
	took = fast(body, &got)
	err := json.Unmarshal(body, &want, decodeOpts, aliasRaw)
	if !took {
		if !reflect.DeepEqual(got, zero) {
			t.Fatalf("%q: the fast decoder gave up but left %+v", body, got)
		}
		return false
	}
	if err != nil {
		t.Fatalf("%q: the fast decoder took a body jsonv2 refuses (%v)", body, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: fast decoding differs:\n got %+v\nwant %+v", body, got, want)
	}
	return true
}

// usualShapes: the first samples, which the fast decoder takes.
const usualShapes = 11

var fastDecodeSamples = []string{
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","max_tokens":10,"messages":[]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[]}],"tools":[]}`,
	`{"model":"m\u00e9","max_tokens":-3,"stream":false,"messages":[{"role":"user","content":[{"type":"text","text":"a\nb"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}],"is_error":true}]}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":"yes"}]}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"search_result","source":"https://x","content":{"a":1},"id":5,"name":null}]}]}`,
	`{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"x"}]}`,
	`{"model":"m","max_tokens":10,"system":"s","messages":[{"role":"user","content":"x"}],"tools":[{"name":"t","description":"d","input_schema":{"type":"object"}},{"type":"web_search_20250305","name":"web_search"}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"stop_sequences":["a","b"],"temperature":0.5,"top_p":1,"top_k":5,"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":1024},"output_config":{"effort":"high"},"context_management":{"edits":[]}}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}],"stop_sequences":[],"metadata":{},"thinking":{"type":"adaptive"},"tool_choice":{"type":"none"},"output_config":{}}`,
	`{"Model":"m","max_tokens":10,"messages":[{"role":"user","content":"x","Content":"y"}],"tool_choice":{"type":"tool","name":"x","Name":"y"}}`,
	// Shapes the fast decoder leaves to jsonv2 (after the first usualShapes).
	`{"model":"m","max_tokens":10,"messages":[],"thinking":{"type":"enabled","budget_tokens":1.5}}`,
	`{"model":"m","max_tokens":10,"messages":[],"metadata":{"user_id":null}}`,
	`{"model":"m","max_tokens":10,"messages":[],"stop_sequences":["a",1]}`,
	`{"model":"m","max_tokens":10,"messages":[],"output_config":{"effort":2}}`,
	`{"model":"m","model":"n","max_tokens":10,"messages":[]}`,
	`{"model":"m","max_tokens":1e3,"messages":[]}`,
	`{"model":"m","max_tokens":10.5,"messages":[]}`,
	`{"model":null,"max_tokens":10,"messages":[]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":5}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":null}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":null}]}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[7]}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`,
	`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"u"},"source":{"media_type":"x"}}]}]}`,
	`{"model":"m","max_tokens":10,"tools":[{"name":7}],"messages":[]}`,
	`{"model":"m","max_tokens":10,"messages":[]} x`,
	`{"mo\u0064el":"m","max_tokens":10,"messages":[]}`,
	`[]`, ``, `{`,
}

func TestFastDecodeMatchesJSONv2(t *testing.T) {
	for _, name := range []string{"01-text-turn.json", "02-tool-turn-request.json", "03-tool-result-turn.json"} {
		if !checkFastDecode(t, clientBody(t, name)) {
			t.Errorf("%s: the fast decoder gave up on the real client's request", name)
		}
	}
	checkSamples(t, fastDecodeSamples, usualShapes, checkFastDecode)
}

// Random edits of the real requests: wherever the fast decoder takes the
// result, it agrees with jsonv2.
func TestFastDecodeMatchesJSONv2Mutated(t *testing.T) {
	inserts := []string{`null`, `1`, `-2`, `"x"`, `{}`, `[]`, `,"a":1`, `,"Model":"m"`, `,"type":"text"`, `"\u00e9"`, `,"text":"y"`, `,"content":[]`, `true`, `,"role":"user"`, `,"source":{"type":"x"}`, `,"is_error":true`, `,"name":"n"`}
	bodies := withSamples(fastDecodeSamples[:usualShapes], clientBody(t, "02-tool-turn-request.json"), clientBody(t, "03-tool-result-turn.json"))
	// Edits that keep the body valid and of the usual shape leave it to
	// the fast decoder (1248 of these 3000 when written).
	checkMutated(t, bodies, inserts, 11, checkFastDecode)
}

// checkSamples checks each sample with check, which reports whether the
// fast decoder took it: it must take as many as there are usual shapes.
func checkSamples(t *testing.T, samples []string, usual int, check func(*testing.T, []byte) bool) {
	t.Helper()
	took := 0
	for _, s := range samples {
		if check(t, []byte(s)) {
			took++
		}
	}
	if took != usual {
		t.Errorf("the fast decoder took %d of the samples, want the %d usual shapes", took, usual)
	}
}

// withSamples is bodies, then the samples.
func withSamples(samples []string, bodies ...[]byte) [][]byte {
	for _, s := range samples {
		bodies = append(bodies, []byte(s))
	}
	return bodies
}

// checkMutated checks 3000 random edits of bodies (mutated, from seed)
// with check, which reports whether the fast decoder took the body: it
// must take 1000 or more, or the comparison proves nothing.
func checkMutated(t *testing.T, bodies [][]byte, inserts []string, seed uint64, check func(*testing.T, []byte) bool) {
	t.Helper()
	took := 0
	for _, b := range mutated(bodies, inserts, 3000, seed) {
		if check(t, b) {
			took++
		}
	}
	if took < 1000 {
		t.Errorf("the fast decoder took %d of 3000 edited bodies, want 1000 or more", took)
	}
	t.Logf("the fast decoder took %d of 3000 edited bodies", took)
}

// FuzzFastDecode: wherever the fast decoder takes a body, jsonv2 takes it
// too and decodes it the same; where it gives up, it leaves nothing.
func FuzzFastDecode(f *testing.F) {
	for _, name := range fixtures.ClientRequests() {
		f.Add(clientBody(f, name))
	}
	for _, s := range fastDecodeSamples {
		f.Add([]byte(s))
	}
	for _, s := range fuzzMessagesSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkFastDecode(t, body) })
}

// mutated makes n random edits of bodies (an insert from inserts, a span
// deleted, or a byte replaced by the start of another kind of value), from
// the seed.
func mutated(bodies [][]byte, inserts []string, n int, seed uint64) [][]byte {
	next := xorshift(seed)
	out := make([][]byte, 0, n)
	for range n {
		b := bodies[next(len(bodies))]
		var sb strings.Builder
		at := next(len(b) + 1)
		switch next(3) {
		case 0: // insert
			sb.Write(b[:at])
			sb.WriteString(inserts[next(len(inserts))])
			sb.Write(b[at:])
		case 1: // delete a span
			end := min(len(b), at+1+next(8))
			sb.Write(b[:at])
			sb.Write(b[end:])
		default: // replace a value's first byte by another kind
			sb.Write(b[:at])
			sb.WriteString(inserts[next(6)])
			if at < len(b) {
				sb.Write(b[at+1:])
			}
		}
		out = append(out, []byte(sb.String()))
	}
	return out
}
