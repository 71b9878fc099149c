package translate

import (
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// checkResponsesFastDecode decodes body both ways: when the fast decoder
// takes it, jsonv2 must take it too, with the same result.
func checkResponsesFastDecode(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	return checkFast(t, body, func(body []byte, req *responses.Request) bool {
		ok, _ := decodeResponsesFast(body, req, false)
		return ok
	})
}

// responsesUsualShapes: the first samples, which the fast decoder takes.
const responsesUsualShapes = 8

var responsesDecodeSamples = []string{
	`{"model":"m","input":"hi"}`,
	`{"model":"m","input":[],"tools":[]}`,
	`{"model":"m\u00e9","input":[{"type":"message","role":"user","content":[]},{"role":"assistant","content":"a\nb","id":"x","status":"completed"}],"instructions":"be \"brief\"","stream":false}`,
	`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","namespace":"n","arguments":"{\"a\":1}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"ok"},{"type":"input_image","image_url":"https://x","detail":"low","file_id":"f"}]},{"type":"custom_tool_call","call_id":"d","name":"p","input":"x"},{"type":"custom_tool_call_output","call_id":"d","output":"done"},{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"content":[{"type":"reasoning_text","text":"r"}],"encrypted_content":"e"}]}`,
	`{"model":"m","input":"x","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":false},{"type":"custom","name":"p","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"namespace","name":"n","description":"ns","tools":[{"type":"function","name":"g"}]},{"type":"web_search","external_web_access":false}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":true,"max_output_tokens":100,"temperature":0.5,"top_p":1,"reasoning":{"effort":"high","summary":"auto"},"text":{"format":{"type":"json_schema","schema":{}},"verbosity":"low"},"previous_response_id":"","user":"u","store":false,"include":["x"],"prompt_cache_key":"k","client_metadata":{"a":"b"}}`,
	`{"model":"m","input":5,"instructions":[1],"user":7,"temperature":"hot","tool_choice":"auto"}`,
	`{"Model":"m","input":[{"role":"user","content":{"a":1},"output":true,"arguments":5,"input":[1],"Content":"y"}]}`,
	// An escape jsonv2 writes otherwise (\/) before max_output_tokens: not
	// canonical, but decoded as jsonv2 decodes it.
	`{"model":"m","instructions":"a\/b","input":"x","max_output_tokens":5}`,
	// Shapes the fast decoder leaves to jsonv2 (after the first
	// responsesUsualShapes).
	`{"model":"m","input":"x","model":"n"}`,
	`{"model":null,"input":"x"}`,
	`{"model":"m","input":null}`,
	`{"model":"m","input":"x","max_output_tokens":1.5}`,
	`{"model":"m","input":"x","stream":1}`,
	`{"model":"m","input":[{"role":"user","content":null}]}`,
	`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","refusal":5}]}]}`,
	`{"model":"m","input":[{"type":5}]}`,
	`{"model":"m","input":[7]}`,
	`{"model":"m","input":"x","tools":[{"type":"custom","format":{"type":"grammar","type":"text"}}]}`,
	`{"model":"m","input":"x","reasoning":{"effort":null}}`,
	`{"mo\u0064el":"m","input":"x"}`,
	`{"model":"m","input":"x"} x`,
	`[]`, ``, `{`,
}

func TestResponsesFastDecodeMatchesJSONv2(t *testing.T) {
	for _, name := range fixtures.CodexRequests() {
		if !checkResponsesFastDecode(t, codexBody(t, name)) {
			t.Errorf("%s: the fast decoder gave up on Codex's request", name)
		}
	}
	checkSamples(t, responsesDecodeSamples, responsesUsualShapes, checkResponsesFastDecode)
}

// Random edits of the Codex requests and the samples: wherever the fast
// decoder takes the result, it agrees with jsonv2.
func TestResponsesFastDecodeMatchesJSONv2Mutated(t *testing.T) {
	inserts := []string{`null`, `1`, `-2`, `"x"`, `{}`, `[]`, `,"a":1`, `,"Model":"m"`, `,"type":"message"`, `"\u00e9"`, `,"text":"y"`, `,"content":[]`, `true`, `,"role":"user"`, `,"output":"o"`, `,"summary":[]`, `,"name":"n"`, `,"tools":[]`}
	bodies := withSamples(responsesDecodeSamples[:responsesUsualShapes], codexBody(t, "03-shell-result-turn.json"), codexBody(t, "05-apply-patch-result-turn.json"))
	checkMutated(t, bodies, inserts, 13, checkResponsesFastDecode)
}

// FuzzResponsesFastDecode: wherever the fast decoder takes a body, jsonv2
// takes it too and decodes it the same; where it gives up, it leaves
// nothing.
func FuzzResponsesFastDecode(f *testing.F) {
	for _, name := range fixtures.CodexRequests() {
		f.Add(codexBody(f, name))
	}
	for _, s := range responsesDecodeSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkResponsesFastDecode(t, body) })
}
