package translate

import (
	"errors"
	"strings"
	"testing"
)

func TestChatToChatPassThrough(t *testing.T) {
	// Odd spacing, member order and escapes must all survive: only the
	// model's value changes.
	body := `{ "messages" : [ {"role":"user","content":"h\u00e9llo \"x\""} ],
  "model": "alias-1", "temperature":0.5, "tools":[{"type":"function","function":{"name":"f","parameters":{"b":1,"a":2}}}],
  "vendor_extra": {"keep": [1, 2, 3]}, "max_tokens": 100 }`
	br, err := ChatOnChatRequest([]byte(body), resolverFor(Target{BackendModel: "qwen3-coder", SupportsSystemMessage: true}))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(body, `"alias-1"`, `"qwen3-coder"`, 1)
	if string(br.Body) != want {
		t.Errorf("body changed beyond the model:\n got %s\nwant %s", br.Body, want)
	}
	if br.Stream || br.Target.Alias != "alias-1" || br.InputTokens != 0 {
		t.Errorf("BackendRequest = %+v", br)
	}
}

func TestChatToChatClamp(t *testing.T) {
	tgt := Target{BackendModel: "m", SupportsSystemMessage: true, MaxOutputTokens: 8192}
	for _, tt := range []struct{ in, want string }{
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":32000}`, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":8192}`},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_completion_tokens":1e6}`, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":8192}`},
		{`{"max_tokens":128000,"model":"a","messages":[{"role":"user","content":"x"}],"max_completion_tokens":9000}`, `{"max_tokens":8192,"model":"m","messages":[{"role":"user","content":"x"}],"max_completion_tokens":8192}`},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":512}`, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":512}`},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":null}`, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":null}`},
		{`{"model":"a","messages":[{"role":"user","content":"x"}]}`, `{"model":"m","messages":[{"role":"user","content":"x"}]}`},
	} {
		br, err := ChatOnChatRequest([]byte(tt.in), resolverFor(tgt))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if string(br.Body) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.in, br.Body, tt.want)
		}
	}
	// No limit configured: nothing clamped.
	in := `{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":128000}`
	br, err := ChatOnChatRequest([]byte(in), resolverFor(Target{BackendModel: "a", SupportsSystemMessage: true}))
	if err != nil || string(br.Body) != in {
		t.Errorf("unclamped: %s, %v", br.Body, err)
	}
}

func TestChatToChatSystemFold(t *testing.T) {
	nosys := Target{BackendModel: "m"}
	tests := []struct {
		name, messages, want string
	}{{
		name:     "leading system string folds into the first user string",
		messages: `[{"role":"system","content":"S"},{"role":"user","content":"hi"}]`,
		want:     `[{"role":"user","content":"<system>\nS\n</system>\n\nhi"}]`,
	}, {
		name:     "developer role too; a list content stays a list",
		messages: `[{"role":"developer","content":"S"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]`,
		want:     `[{"role":"user","content":[{"type":"text","text":"<system>\nS\n</system>"},{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]`,
	}, {
		name:     "system as a list of text parts: texts joined, not the list",
		messages: `[{"role":"system","content":[{"type":"text","text":"A"},{"type":"text","text":"B"}]},{"role":"user","content":"hi"}]`,
		want:     `[{"role":"user","content":"<system>\nA\n\nB\n</system>\n\nhi"}]`,
	}, {
		name:     "system list with a non-text part stays a list",
		messages: `[{"role":"system","content":[{"type":"text","text":"A"},{"type":"x","v":1}]},{"role":"user","content":"hi"}]`,
		want:     `[{"role":"user","content":[{"type":"text","text":"<system>\n"},{"type":"text","text":"A"},{"type":"x","v":1},{"type":"text","text":"\n</system>"},{"type":"text","text":"hi"}]}]`,
	}, {
		name:     "mid-list system joins the user turn before it; other messages untouched",
		messages: `[{"role":"user","content":"q","name":"bob"},{"role":"system","content":"note"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]`,
		want:     `[{"role":"user","content":"q\n\n<system>\nnote\n</system>","name":"bob"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]`,
	}, {
		name:     "system between assistant turns becomes its own user turn",
		messages: `[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"system","content":"note"},{"role":"assistant","content":"b"}]`,
		want:     `[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"<system>\nnote\n</system>"},{"role":"assistant","content":"b"}]`,
	}, {
		name:     "only a system message",
		messages: `[{"role":"system","content":"S"}]`,
		want:     `[{"role":"user","content":"<system>\nS\n</system>"}]`,
	}, {
		name:     "an empty system turn alone leaves nothing",
		messages: `[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"system","content":""},{"role":"assistant","content":"b"}]`,
		want:     `[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"assistant","content":"b"}]`,
	}, {
		name:     "empty system content disappears",
		messages: `[{"role":"system","content":""},{"role":"user","content":"hi"}]`,
		want:     `[{"role":"user","content":"hi"}]`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br, err := ChatOnChatRequest([]byte(`{"model":"a","messages":`+tt.messages+`,"stream":true}`), resolverFor(nosys))
			if err != nil {
				t.Fatal(err)
			}
			requireSameJSON(t, br.Body, `{"model":"m","messages":`+tt.want+`,"stream":true}`)
			if !br.Stream {
				t.Error("Stream false")
			}
			// With a system role the messages pass untouched.
			br, err = ChatOnChatRequest([]byte(`{"model":"a","messages":`+tt.messages+`}`), resolverFor(Target{BackendModel: "m", SupportsSystemMessage: true}))
			if err != nil || string(br.Body) != `{"model":"m","messages":`+tt.messages+`}` {
				t.Errorf("with system role: %s, %v", br.Body, err)
			}
		})
	}
}

// The folded messages replace exactly the array's bytes, whatever the
// spacing around it.
func TestChatToChatFoldSpan(t *testing.T) {
	in := "{\"model\":\"a\", \"messages\" :\n  [ {\"role\":\"system\",\"content\":\"S\"} ,\n {\"role\":\"user\",\"content\":\"hi\"} ] , \"x\":[1]}"
	want := "{\"model\":\"m\", \"messages\" :\n  [{\"role\":\"user\",\"content\":\"<system>\\nS\\n</system>\\n\\nhi\"}] , \"x\":[1]}"
	br, err := ChatOnChatRequest([]byte(in), resolverFor(Target{BackendModel: "m"}))
	if err != nil || string(br.Body) != want {
		t.Errorf("got  %s, %v\nwant %s", br.Body, err, want)
	}
}

// Without any system message, a backend without a system role still gets
// the messages byte for byte.
func TestChatToChatNoSystemUntouched(t *testing.T) {
	in := `{"model":"a","messages":[ {"role":"user","content":"x"} , {"role":"user","content":"y"}]}`
	br, err := ChatOnChatRequest([]byte(in), resolverFor(Target{BackendModel: "a"}))
	if err != nil || string(br.Body) != in {
		t.Errorf("got %s, %v", br.Body, err)
	}
}

func TestChatToChatErrors(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{"model":"a","messages":[]`, "malformed JSON"},
		{`[]`, "request body: must be a JSON object"},
		{`{"model":"a","messages":[]} {}`, "data after the JSON object"},
		{`{"messages":[]}`, "model: required"},
		{`{"model":7,"messages":[]}`, "model: required"},
		{`{"model":"a"}`, "messages: required"},
		{`{"model":"a","messages":"hi"}`, "messages: required"},
		{`{"model":"a","messages":[]}`, "messages: must not be empty"},
		{`{"model":"a","messages":[ ]}`, "messages: must not be empty"},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"stream":"yes"}`, "stream: must be a boolean"},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":"many"}`, "max_tokens: must be a number"},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":0}`, "max_tokens: must be at least 1, got 0"},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":0.5}`, "max_tokens: must be a whole number of tokens, got 0.5"},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_tokens":2.5}`, "max_tokens: must be a whole number of tokens, got 2.5"},
		{`{"model":"a","messages":[{"role":"user","content":"x"}],"max_completion_tokens":-3}`, "max_completion_tokens: must be at least 1, got -3"},
		{`{"model":"a","messages":[{"role":"system","content":5}]}`, "content must be a string"},
		{`{"model":"a","messages":[7]}`, "messages.0: must be an object"},
		{`{"model":"a","messages":[{"role":5}]}`, "messages.0.role: must be a string"},
	} {
		_, err := ChatOnChatRequest([]byte(tt.body), resolverFor(Target{BackendModel: "m", MaxOutputTokens: 10}))
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, tt.want) {
			t.Errorf("%s: err = %v, want a *RequestError saying %q", tt.body, err, tt.want)
		}
	}
	// The resolver's error comes back as it is.
	_, err := ChatOnChatRequest([]byte(`{"model":"nope","messages":[{"role":"user","content":"x"}]}`), func(a string) (Target, error) { return Target{}, &unknownAlias{a} })
	var ua *unknownAlias
	if !errors.As(err, &ua) || ua.alias != "nope" {
		t.Errorf("resolver error: %v", err)
	}
}

func TestChatResponseModel(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"id":"c1", "model" : "qwen3-coder","choices":[{"message":{"content":"model"}}]}`, `{"id":"c1", "model" : "alias","choices":[{"message":{"content":"model"}}]}`},
		{`{"id":"c1"}`, `{"model":"alias","id":"c1"}`},
		{` {} `, ` {"model":"alias"} `},
	} {
		got, err := ChatResponseModel([]byte(tt.in), "alias")
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := ChatResponseModel([]byte(`{"model":`), "a"); err == nil {
		t.Error("malformed body: no error")
	}
}
