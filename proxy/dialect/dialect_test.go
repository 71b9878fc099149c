package dialect

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/discover"
)

// chatBody is a Chat request with one tool whose parameters are schema.
func chatBody(schema string) string {
	return `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"t","description":"d e s c","parameters":` + schema + `}}]}`
}

func params(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		Tools []struct {
			Function struct {
				Name        string         `json:"name"`
				Description string         `json:"description"`
				Parameters  jsontext.Value `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("rewritten body is not JSON: %v\n%s", err, body)
	}
	if len(req.Tools) != 1 || req.Tools[0].Function.Name != "t" || req.Tools[0].Function.Description != "d e s c" {
		t.Fatalf("the tool, its name or description changed: %s", body)
	}
	return string(req.Tools[0].Function.Parameters)
}

// Each keyword llama.cpp's json-schema-to-grammar refuses (its
// common/json-schema-to-grammar.cpp, and the grammar parser's repetition
// limit) is dropped, and only that keyword.
func TestLlamaCppRefusedKeywordsDropped(t *testing.T) {
	cases := []struct{ name, in, want, note string }{
		{"maxLength above the limit", `{"type":"object","properties":{"s":{"type":"string","maxLength":524288}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "maxLength 524288 dropped"},
		{"maxLength at 2000 (b10061 refuses it)", `{"type":"object","properties":{"s":{"type":"string","maxLength":2000}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "maxLength 2000"},
		{"minLength above the limit", `{"type":"object","properties":{"s":{"type":"string","minLength":8000,"maxLength":12}}}`,
			`{"type":"object","properties":{"s":{"type":"string","maxLength":12}}}`, "minLength 8000"},
		{"maxItems above the limit", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"maxItems":100000}}}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, "maxItems 100000"},
		{"minItems above the limit", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"minItems":5000}}}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, "minItems 5000"},
		{"a bound written as a float", `{"type":"object","properties":{"s":{"type":"string","maxLength":1e6}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "maxLength 1e6"},
		{"a bound that is a string", `{"type":"object","properties":{"s":{"type":"string","maxLength":"12"}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "not a number"},
		{"unanchored pattern", `{"type":"object","properties":{"s":{"type":"string","pattern":"[a-z]+"}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "anchored"},
		{"pattern with a repetition above the limit", `{"type":"object","properties":{"s":{"type":"string","pattern":"^a{1,5000}$"}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "repetition above"},
		{"pattern with unbalanced parentheses", `{"type":"object","properties":{"s":{"type":"string","pattern":"^(ab$"}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "unbalanced"},
		{"external $ref", `{"type":"object","properties":{"s":{"$ref":"https://example.com/s.json","description":"x"}}}`,
			`{"type":"object","properties":{"s":{"description":"x"}}}`, "$ref"},
		{"dangling $ref", `{"type":"object","properties":{"s":{"$ref":"#/$defs/nope"}}}`,
			`{"type":"object","properties":{"s":{}}}`, "$ref"},
		{"unknown type", `{"type":"object","properties":{"s":{"type":"text"}}}`,
			`{"type":"object","properties":{"s":{}}}`, "type \"text\" dropped"},
		{"unknown member of a type list", `{"type":"object","properties":{"s":{"type":["string","text"]}}}`,
			`{"type":"object","properties":{"s":{"type":["string"]}}}`, "narrowed"},
		{"boolean schema", `{"type":"object","properties":{"s":true}}`,
			`{"type":"object","properties":{"s":{}}}`, "replaced by {}"},
		{"boolean items", `{"type":"object","properties":{"a":{"type":"array","items":true}}}`,
			`{"type":"object","properties":{"a":{"type":"array","items":{}}}}`, "replaced by {}"},
		{"anyOf not a list", `{"type":"object","properties":{"s":{"anyOf":{"type":"string"}}}}`,
			`{"type":"object","properties":{"s":{}}}`, "anyOf"},
		{"format not a string", `{"type":"object","properties":{"s":{"type":"string","format":3}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`, "format 3"},
		{"minimum not a number", `{"type":"object","properties":{"n":{"type":"integer","minimum":"0"}}}`,
			`{"type":"object","properties":{"n":{"type":"integer"}}}`, "minimum"},
		{"nested in anyOf and $defs", `{"$defs":{"big":{"type":"string","maxLength":99999}},"type":"object","properties":{"u":{"anyOf":[{"$ref":"#/$defs/big"},{"type":"array","items":{"type":"string","maxLength":4000}}]}}}`,
			`{"$defs":{"big":{"type":"string"}},"type":"object","properties":{"u":{"anyOf":[{"$ref":"#/$defs/big"},{"type":"array","items":{"type":"string"}}]}}}`, "/$defs/big: maxLength 99999"},
	}
	// One memo for all the cases, as one client connection's requests
	// share theirs: each case runs twice, the second time from the memo.
	m := memo.New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			first, firstNotes := Fit(m, discover.LlamaCpp, Chat, []byte(chatBody(c.in)))
			out, notes := Fit(m, discover.LlamaCpp, Chat, []byte(chatBody(c.in)))
			if string(first) != string(out) || strings.Join(firstNotes, "\n") != strings.Join(notes, "\n") {
				t.Errorf("from the memo: %s %q; computed: %s %q", out, notes, first, firstNotes)
			}
			if fresh, _ := Fit(nil, discover.LlamaCpp, Chat, []byte(chatBody(c.in))); string(fresh) != string(out) {
				t.Errorf("with a memo: %s; without: %s", out, fresh)
			}
			if out == nil {
				t.Fatalf("not rewritten: %s", c.in)
			}
			if got := params(t, out); got != c.want {
				t.Errorf("parameters\n got %s\nwant %s", got, c.want)
			}
			if len(notes) == 0 || !strings.Contains(strings.Join(notes, "\n"), c.note) {
				t.Errorf("notes %q do not say %q", notes, c.note)
			}
			if !strings.HasPrefix(notes[0], "t: /") {
				t.Errorf("note %q does not name the tool and the place", notes[0])
			}
		})
	}
}

// What llama.cpp compiles is left as the client wrote it, byte for byte.
func TestCompilableSchemaUnchanged(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"s":{"type":"string","maxLength":1999,"minLength":1},"p":{"type":"string","pattern":"^wf_[a-z0-9-]{6,}$"},"a":{"type":"array","items":{"type":"string"},"maxItems":32},"r":{"$ref":"#/properties/s"},"n":{"type":["integer","null"],"minimum":0}},"required":["s"],"additionalProperties":false}`,
		`{}`,
	} {
		if out, notes := Fit(nil, discover.LlamaCpp, Chat, []byte(chatBody(schema))); out != nil || notes != nil {
			t.Errorf("%s rewritten: %s %q", schema, out, notes)
		}
	}
}

// Other servers get the request unchanged, whatever its schemas.
func TestOtherServersUnchanged(t *testing.T) {
	body := []byte(chatBody(`{"type":"object","properties":{"s":{"type":"string","maxLength":524288}}}`))
	for _, server := range []string{discover.VLLM, discover.SGLang, discover.Ollama, discover.LMStudio, ""} {
		if out, _ := Fit(nil, server, Chat, body); out != nil {
			t.Errorf("%q: rewritten", server)
		}
	}
}

// The Messages format's tools hold the schema in input_schema; the rest
// of the body is kept byte for byte.
func TestMessagesToolSchema(t *testing.T) {
	body := `{"model":"m", "max_tokens":5,"tools":[{"name":"Workflow","description":"w","input_schema":{"type":"object","properties":{"script":{"type":"string","maxLength":524288}}}}],"messages":[{"role":"user","content":"hi"}]}`
	out, notes := Fit(nil, discover.LlamaCpp, Messages, []byte(body))
	want := `{"model":"m", "max_tokens":5,"tools":[{"name":"Workflow","description":"w","input_schema":{"type":"object","properties":{"script":{"type":"string"}}}}],"messages":[{"role":"user","content":"hi"}]}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "Workflow: /properties/script: maxLength 524288 dropped") {
		t.Errorf("notes %q", notes)
	}
}

func TestNamedToolChoice(t *testing.T) {
	two := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}]`
	body := `{"model":"m","tools":` + two + `,"tool_choice":{"type":"function","function":{"name":"get_time"}},"messages":[]}`
	out, notes := Fit(nil, discover.LlamaCpp, Chat, []byte(body))
	want := `{"model":"m","tools":[{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}],"tool_choice":"required","messages":[]}`
	if string(out) != want {
		t.Errorf("chat\n got %s\nwant %s", out, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "narrowed to get_time") {
		t.Errorf("notes %q", notes)
	}

	mtools := `[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"get_time","input_schema":{"type":"object"}}]`
	body = `{"model":"m","tool_choice":{"type":"tool","name":"get_time","disable_parallel_tool_use":true},"tools":` + mtools + `}`
	out, _ = Fit(nil, discover.LlamaCpp, Messages, []byte(body))
	want = `{"model":"m","tool_choice":{"type":"any","disable_parallel_tool_use":true},"tools":[{"name":"get_time","input_schema":{"type":"object"}}]}`
	if string(out) != want {
		t.Errorf("messages\n got %s\nwant %s", out, want)
	}

	// A choice naming no tool of the list, "auto", "required": unchanged.
	for _, choice := range []string{`{"type":"function","function":{"name":"nope"}}`, `"auto"`, `"required"`} {
		b := `{"tools":` + two + `,"tool_choice":` + choice + `}`
		if out, _ := Fit(nil, discover.LlamaCpp, Chat, []byte(b)); out != nil {
			t.Errorf("%s rewritten: %s", choice, out)
		}
	}
}

// A body that is not a JSON object is left for the backend to refuse.
func TestNotJSONUnchanged(t *testing.T) {
	for _, b := range []string{``, `[]`, `{"tools":`, `{"tools":[]} x`} {
		if out, _ := Fit(nil, discover.LlamaCpp, Chat, []byte(b)); out != nil {
			t.Errorf("%q rewritten", b)
		}
	}
}

// FuzzFit: whatever the body, Fit does not panic, and what it returns is
// JSON whose members outside tools and tool_choice are the input's.
func FuzzFit(f *testing.F) {
	f.Add([]byte(chatBody(`{"type":"object","properties":{"s":{"type":"string","maxLength":524288,"pattern":"[a"}}}`)), false)
	f.Add([]byte(`{"tools":[{"name":"a","input_schema":{"$ref":"#/x","items":[true,1,{"anyOf":3}]}}],"tool_choice":{"type":"tool","name":"a"}}`), true)
	f.Add([]byte(`{"tools":[{"type":"function","function":{"name":"a","parameters":true}}],"tool_choice":{"type":"function","function":{"name":"a"}}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, messages bool) {
		format := Chat
		if messages {
			format = Messages
		}
		out, _ := Fit(nil, discover.LlamaCpp, format, body)
		if out == nil {
			return
		}
		// Duplicate member names are accepted, as the proxy accepts them
		// (the last one wins).
		dup := jsontext.AllowDuplicateNames(true)
		var in, got map[string]jsontext.Value
		if err := json.Unmarshal(out, &got, dup); err != nil {
			t.Fatalf("output is not a JSON object: %v\n%s", err, out)
		}
		if err := json.Unmarshal(body, &in, dup); err != nil {
			t.Fatalf("rewrote a body that is not a JSON object: %s", body)
		}
		for k, v := range in {
			if k != "tools" && k != "tool_choice" && string(got[k]) != string(v) {
				t.Errorf("member %s changed: %s -> %s", k, v, got[k])
			}
		}
	})
}
