package translate

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// rawTools reads a passed-through request's tools with jsonscan. Its
// reference is what it replaced: the tools decoded whole into the wire
// types (json.Unmarshal) and their schemas compacted with a jsontext
// decoder, kept here to pin the scanner to the decoder's answer.

func referenceRawTools(target Target, top *object, messagesShape bool) []textcall.Tool {
	if target.TextCalls == 0 {
		return nil
	}
	v, ok := top.get("tools")
	if !ok || v.value.Kind() != '[' {
		return nil
	}
	if messagesShape {
		var tools []messages.Tool
		if json.Unmarshal(v.value, &tools, decodeOpts, aliasRaw) != nil {
			return nil
		}
		return referenceOffered(tools, messagesToolOf)
	}
	var tools []chat.Tool
	if json.Unmarshal(v.value, &tools, decodeOpts, aliasRaw) != nil {
		return nil
	}
	return referenceOffered(tools, chatToolOf)
}

func referenceOffered[T any](tools []T, of func(*T) (string, jsontext.Value)) []textcall.Tool {
	if len(tools) == 0 {
		return nil
	}
	out := make([]textcall.Tool, 0, len(tools))
	dec := jsontext.NewDecoder(bytes.NewReader(nil))
	for i := range tools {
		name, schema := of(&tools[i])
		if name == "" {
			continue
		}
		out = append(out, textcall.Tool{Name: name, Parameters: referenceCompactSchema(dec, schema)})
	}
	return out
}

// referenceCompactSchema is what textcall reads of a parameter schema, the type of
// each top-level property ({"properties":{"k":{"type":…}}}, anyOf and
// oneOf kept), in memory of its own: a stream keeps it for its whole
// life, and a coding client's tools hold tens of kilobytes of
// descriptions. nil when the schema has no properties. It reads the
// schema token by token, skipping the rest (no value is decoded).
func referenceCompactSchema(dec *jsontext.Decoder, schema jsontext.Value) []byte {
	if schema.Kind() != '{' {
		return nil
	}
	dec.Reset(bytes.NewReader(schema), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	var out []byte
	for dec.PeekKind() == '"' {
		key, err := dec.ReadValue() // a name read raw: no copy of it
		if err != nil {
			return nil
		}
		if string(key) != `"properties"` || dec.PeekKind() != '{' {
			if dec.SkipValue() != nil {
				return nil
			}
			continue
		}
		dec.ReadToken()
		out = append(out[:0], `{"properties":{`...)
		for n := 0; dec.PeekKind() == '"'; n++ {
			name, err := dec.ReadValue()
			if err != nil {
				return nil
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = append(append(out, name...), ":{"...)
			if dec.PeekKind() != '{' {
				if dec.SkipValue() != nil {
					return nil
				}
				out = append(out, '}')
				continue
			}
			dec.ReadToken()
			for m := 0; dec.PeekKind() == '"'; {
				key, err := dec.ReadValue()
				if err != nil {
					return nil
				}
				switch string(key) {
				case `"type"`, `"anyOf"`, `"oneOf"`:
					if m > 0 {
						out = append(out, ',')
					}
					m++
					out = append(append(out, key...), ':') // key is void once the value is read
					v, err := dec.ReadValue()
					if err != nil {
						return nil
					}
					out = append(out, v...)
				default:
					if dec.SkipValue() != nil {
						return nil
					}
				}
			}
			if _, err := dec.ReadToken(); err != nil {
				return nil
			}
			out = append(out, '}')
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil
		}
		out = append(out, "}}"...)
	}
	return out
}

// checkRawTools compares rawTools with its reference on the body
// {"tools":tools}, in both shapes, when that body is valid JSON.
func checkRawTools(t *testing.T, tools []byte) {
	t.Helper()
	body := append(append([]byte(`{"tools":`), tools...), '}')
	top, err := scanObject(body, false, nil)
	if err != nil {
		return
	}
	target := Target{TextCalls: textcall.All}
	for _, messagesShape := range []bool{false, true} {
		got, want := rawTools(target, &top, messagesShape), referenceRawTools(target, &top, messagesShape)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("tools %s (messages shape %v):\n got  %q\n want %q", tools, messagesShape, got, want)
		}
	}
}

func TestRawToolsAgreesWithDecoder(t *testing.T) {
	cases := []string{
		`[]`, `null`, `[null]`, `[1]`, `["x"]`,
		`[{"type":"function","function":{"name":"Bash","parameters":{"type":"object","properties":{"command":{"type":"string","description":"d"},"n":{"anyOf":[{"type":"null"},{"type":"integer"}]},"o":5},"required":["command"]}}}]`,
		`[{"type":"function","function":{"name":"B\u0061sh","description":"long","parameters":{"properties":{}}}}]`,
		`[{"type":"function","function":null},{"function":{"name":"Read"}}]`,
		`[{"function":{"name":5}}]`, `[{"function":5}]`, `[{"function":{"name":null,"parameters":{}}}]`,
		`[{"name":"Read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},{"type":"web_search_20250305","name":"web_search"},{"type":"custom","name":"Edit","input_schema":null}]`,
		`[{"name":"Read"},{"name":"Write","input_schema":{},"type":5}]`,
		`[{"name":"A","input_schema":{"properties":{"x":{"type":"string"}},"properties":{"y":{"type":"number"}}}}]`,
		`[{"name":"A","name":"B","input_schema":{"properties":{"x":{"type":"string","type":"number"}}}}]`,
		`[{"NAME":"A","Input_Schema":{"properties":{"x":{"Type":"string"}}}}]`,
	}
	for _, c := range cases {
		checkRawTools(t, []byte(c))
	}
	// the tools of every recorded client request
	for _, name := range fixtures.ClientRequests() {
		body, err := fixtures.ClientRequest(name)
		if err != nil {
			t.Fatal(err)
		}
		top, err := scanObject(body, false, nil)
		if err != nil {
			continue
		}
		if v, ok := top.get("tools"); ok {
			checkRawTools(t, v.value)
		}
	}
	if br, err := MessagesOnChatRequest(clientBody(t, "01-text-turn.json"), nil); err == nil {
		top, err := scanObject(br.Body, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := top.get("tools")
		if !ok {
			t.Fatal("fixture 01 as Chat has no tools")
		}
		checkRawTools(t, v.value)
		if got := rawTools(Target{TextCalls: textcall.All}, &top, false); len(got) < 10 {
			t.Fatalf("fixture 01 as Chat offers %d tools, want its 12", len(got))
		}
	} else {
		t.Fatal(err)
	}
}

func FuzzRawToolsAgrees(f *testing.F) {
	f.Add([]byte(`[{"type":"function","function":{"name":"Bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]`))
	f.Add([]byte(`[{"name":"Read","input_schema":{"properties":{"p":{"anyOf":[{"type":"string"}]}}}},{"type":"bash_20250124","name":"bash"}]`))
	f.Add([]byte(`[null,{"function":null},{"name":"x\"y","input_schema":{"properties":5}}]`))
	f.Fuzz(func(t *testing.T, tools []byte) { checkRawTools(t, tools) })
}

// BenchmarkChatToChatTextCalls: the Chat pass-through of fixture 01 to a
// target that recovers tool calls written as text (the default), which
// reads the request's offered tools.
func BenchmarkChatToChatTextCalls(b *testing.B) {
	benchRequest(b, chatBenchBody(b), Target{BackendModel: "qwen3-coder", SupportsSystemMessage: true, MaxOutputTokens: 32768, TextCalls: textcall.All}, ChatOnChatRequest)
}
