package translate

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// The wire packages' ScanRequest must give what jsonv2 gives (decode's
// jsonv2 call, with its options) for every body it takes, and take the
// bodies real clients send, or decode is as slow as before for them.

// scanSeeds are the shapes where the quick decoding and jsonv2 could part:
// null where a value is expected, empty arrays, a member named twice, an
// escaped name or string, case, numbers that are not int64s, a kind that
// does not fit a block's member, values of the wrong kind, trailing bytes.
var scanSeeds = []string{
	`{"model":"m","messages":[],"stop_sequences":[],"tools":[]}`,
	`{"model":null,"messages":null,"system":null,"max_tokens":null,"tool_choice":null,"metadata":null,"thinking":null,"stream":null,"temperature":null}`,
	`{"Model":"m","MESSAGES":[{"role":"user","content":"x"}]}`,
	`{"model":"m","model":"n"}`,
	`{"mo\u0064el":"m"}`,
	`{"model":"m\u00e9"}`,
	`{"model":"m","max_tokens":-0}`,
	`{"model":"m","max_tokens":1e3}`,
	`{"model":"m","max_tokens":10.0}`,
	`{"model":"m","max_tokens":99999999999999999999}`,
	`{"model":"m","stream":"yes"}`,
	`{"model":5}`,
	`{"model":"m","messages":[null]}`,
	`{"model":"m","messages":[{"role":"user","content":[null]}]}`,
	`{"model":"m","messages":[{"role":"user","content":5}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":5,"text":null,"source":"s","content":{"a":1},"is_error":"no","id":1,"input":[1]}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"x","content":null}},{"type":"image","source":{"content":"t"}},{"type":"x","type":"y"}]}]}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"}],"is_error":true}]}],"thinking":{"type":"enabled","budget_tokens":null},"output_config":{"effort":"high"},"metadata":{"user_id":null},"tool_choice":{"type":"any","disable_parallel_tool_use":null}}`,
	`{"model":"m","input":5,"instructions":null,"reasoning":null,"text":{"format":null}}`,
	`{"model":"m","input":[{"type":"message","content":[],"output":null,"summary":[]}]}`,
	`{"model":"m","input":[{"type":"message","content":{"a":1}},{"type":"function_call_output","output":"ok"},{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"e"}]}`,
	`{"model":"m","reasoning":{"effort":null,"summary":"auto"},"parallel_tool_calls":null,"previous_response_id":null,"max_output_tokens":5}`,
	`{"model":"m","tools":[{"type":"namespace","tools":[{"type":"custom","name":"p","format":{"type":"grammar","syntax":"lark","definition":"start: x"}}]},{"type":"function","parameters":null,"format":null}]}`,
	`{"model":"m","input":[{"type":"message","content":[{"type":"input_text","text":"a","refusal":null}]}]} x`,
	` {"model":"m"} `, `[]`, `null`, ``, `{`, `{"model":"m",}`,
}

func scanBodies(f *testing.F) [][]byte {
	var bodies [][]byte
	for _, name := range fixtures.ClientRequests() {
		bodies = append(bodies, clientBody(f, name))
	}
	for _, name := range fixtures.CodexRequests() {
		bodies = append(bodies, codexBody(f, name))
	}
	for _, name := range fixtures.KindRequests() {
		c, err := fixtures.KindCapture(name)
		if err != nil {
			f.Fatal(err)
		}
		bodies = append(bodies, c.Body)
	}
	for _, s := range scanSeeds {
		bodies = append(bodies, []byte(s))
	}
	return bodies
}

// agrees checks that a quick decoding into a new R that succeeds gives
// what jsonv2 gives, and reports whether it succeeded. It decodes body
// three times: without a memo, then twice with a new one (the second
// recalls the values the first validated), and all three must agree.
func agrees[R any](t *testing.T, body []byte, scan func([]byte, *R, jsonscan.Recall) bool) bool {
	t.Helper()
	var quick, full R
	if !scan(body, &quick, nil) {
		return false
	}
	if err := json.Unmarshal(body, &full, decodeOpts, aliasRaw); err != nil {
		t.Fatalf("%T: the quick decoding took a body jsonv2 refuses (%v):\n%s", quick, err, body)
	}
	if !reflect.DeepEqual(quick, full) {
		t.Fatalf("%T: the quick decoding and jsonv2 differ\nquick: %s\njsonv2: %s\nbody: %s", quick, dump(quick), dump(full), body)
	}
	rc := recall{memo.New()}
	for pass := range 2 {
		var again R
		if !scan(body, &again, rc) || !reflect.DeepEqual(again, full) {
			t.Fatalf("%T: the quick decoding with a memo (pass %d) and jsonv2 differ\nquick: %s\njsonv2: %s\nbody: %s", again, pass, dump(again), dump(full), body)
		}
	}
	return true
}

func dump(v any) string { return fmt.Sprintf("%+v", v) }

func FuzzScanRequestMatchesJSON(f *testing.F) {
	for _, b := range scanBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		agrees(t, body, messages.ScanRequest)
		agrees(t, body, responses.ScanRequest)
	})
}

// TestScanRequestTakesClientBodies: every captured request of Claude Code
// and Codex takes the quick way, and decodes as jsonv2 decodes it.
func TestScanRequestTakesClientBodies(t *testing.T) {
	for _, name := range fixtures.ClientRequests() {
		if !agrees(t, clientBody(t, name), messages.ScanRequest) {
			t.Errorf("coding-client/%s: left to jsonv2", name)
		}
	}
	for _, name := range fixtures.KindRequests() {
		c, err := fixtures.KindCapture(name)
		if err != nil {
			t.Fatal(err)
		}
		scan := messages.ScanRequest
		if c.Path == "/v1/responses" {
			if !agrees(t, c.Body, responses.ScanRequest) {
				t.Errorf("kinds/%s: left to jsonv2", name)
			}
			continue
		}
		if !agrees(t, c.Body, scan) {
			t.Errorf("kinds/%s: left to jsonv2", name)
		}
	}
	for _, name := range fixtures.CodexRequests() {
		if !agrees(t, codexBody(t, name), responses.ScanRequest) {
			t.Errorf("codex/%s: left to jsonv2", name)
		}
	}
}

// TestScanRequestLeavesToJSON: what the quick decoding leaves to jsonv2
// still decodes as jsonv2 decodes it, errors worded by jsonv2.
func TestScanRequestLeavesToJSON(t *testing.T) {
	for _, tc := range []struct{ body, err string }{
		{`{"model":"m","model":"n"}`, ""},
		{`{"mo\u0064el":"m"}`, ""},
		{`{"model":"m","messages":[null]}`, ""},
		{`{"model":"m","max_tokens":1e3}`, "max_tokens: must be an integer, got a number 1e3"},
		{`{"model":"m","messages":[{"role":"user","content":5}]}`, "messages.0.content: must be a string or an array of content blocks"},
	} {
		var quick messages.Request
		if messages.ScanRequest([]byte(tc.body), &quick, nil) {
			t.Errorf("%s: taken the quick way", tc.body)
		}
		var got, want messages.Request
		err := decode([]byte(tc.body), &got, nil)
		if jerr := json.Unmarshal([]byte(tc.body), &want, decodeOpts, aliasRaw); jerr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decode gives %s, jsonv2 %s", tc.body, dump(got), dump(want))
		}
		if fmt.Sprint(err) != tc.err && !(err == nil && tc.err == "") {
			t.Errorf("%s: error %v, want %q", tc.body, err, tc.err)
		}
	}
}

// TestRecallKnowsOnlyWhatItValidated: a schema the client sent before is
// recalled, not validated again; one that opens with the same bytes but
// differs after them is validated (and refused when it is not JSON, or
// read as it is written when it is).
func TestRecallKnowsOnlyWhatItValidated(t *testing.T) {
	schema := `{"type":"object","properties":{"command":{"type":"string","description":"` + strings.Repeat("the command to run ", 20) + `"}},"required":["command"]}`
	body := func(s string) []byte {
		return []byte(`{"model":"m","max_tokens":10,"tools":[{"name":"Bash","input_schema":` + s + `}],"messages":[{"role":"user","content":"hi"}]}`)
	}
	rc := recall{memo.New()}
	first := body(schema)
	var r messages.Request
	if !messages.ScanRequest(first, &r, rc) {
		t.Fatal("the first body was left to jsonv2")
	}
	at := bytes.Index(first, []byte(schema))
	if n := rc.Known(first, at); n != len(schema) {
		t.Fatalf("the schema validated is not known: %d of %d bytes", n, len(schema))
	}
	broken := strings.Replace(schema, `"required":["command"]`, `"required" ["command"]`, 1)
	if messages.ScanRequest(body(broken), &r, rc) {
		t.Error("a schema that opens as the known one but is not JSON was taken")
	}
	if _, err := DecodeTokenCount(body(broken)); err == nil {
		t.Error("the broken schema decodes")
	}
	other := strings.Replace(schema, `"required":["command"]`, `"required":[]`, 1)
	if !agrees(t, body(other), messages.ScanRequest) {
		t.Fatal("a valid schema that differs after the known one's opening was left to jsonv2")
	}
	if !messages.ScanRequest(body(other), &r, rc) || string(r.Tools[0].InputSchema) != other {
		t.Errorf("the schema read is %s, want %s", r.Tools[0].InputSchema, other)
	}
}

// TestRecallKnowsLongTextsOnlyAsSent: a long text the client sent before
// is recalled; one that opens as it but holds a bad escape after that is
// validated and refused.
func TestRecallKnowsLongTextsOnlyAsSent(t *testing.T) {
	text := strings.Repeat("a long system prompt line\\n", 40)
	body := func(s string) []byte {
		return []byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"` + s + `"}]}]}`)
	}
	rc := recall{memo.New()}
	first := body(text)
	var r messages.Request
	if !messages.ScanRequest(first, &r, rc) {
		t.Fatal("the first body was left to jsonv2")
	}
	at := bytes.Index(first, []byte(`"`+text))
	if n := rc.Known(first, at); n != len(text)+2 {
		t.Fatalf("the text validated is not known: %d of %d bytes", n, len(text)+2)
	}
	broken := text[:len(text)-2] + `\q`
	if messages.ScanRequest(body(broken), &r, rc) {
		t.Error("a text that opens as the known one but holds a bad escape was taken")
	}
	if !agrees(t, body(text+"x"), messages.ScanRequest) {
		t.Error("a longer text was left to jsonv2")
	}
}
