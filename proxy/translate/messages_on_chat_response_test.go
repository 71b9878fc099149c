package translate

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// chatResp builds a non-stream Chat response around one choice.
func chatResp(message, finish, extra string) string {
	return `{"id":"chatcmpl-abc","object":"chat.completion","created":1763683200,"model":"qwen3-coder","choices":[{"index":0,"message":` +
		message + `,"finish_reason":` + finish + extra + `}],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}}`
}

func TestChatToMessages(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{{
		name: "text",
		in:   chatResp(`{"role":"assistant","content":"Hello!"}`, `"stop"`, ""),
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`,
	}, {
		name: "reasoning_content, text and tool calls in that order",
		in:   chatResp(`{"role":"assistant","content":"Let me look.","reasoning_content":"The user wants files.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Bash","arguments":"{\"command\": \"ls\"}"}},{"id":"call_2","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"/a\"}"}}]}`, `"tool_calls"`, ""),
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[
			{"type":"thinking","thinking":"The user wants files.","signature":""},
			{"type":"text","text":"Let me look."},
			{"type":"tool_use","id":"call_1","name":"Bash","input":{"command":"ls"}},
			{"type":"tool_use","id":"call_2","name":"Read","input":{"file_path":"/a"}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`,
	}, {
		name: "reasoning in the newer field name",
		in:   chatResp(`{"role":"assistant","content":"Hi","reasoning":"greet"}`, `"stop"`, ""),
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"greet","signature":""},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`,
	}, {
		name: "invalid, empty, double-encoded and non-object arguments",
		in:   chatResp(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"A","arguments":"{\"x\": 1"}},{"id":"c2","type":"function","function":{"name":"B","arguments":""}},{"id":"c3","type":"function","function":{"name":"C","arguments":"\"{\\\"y\\\":2}\""}},{"id":"c4","type":"function","function":{"name":"D","arguments":"[1,2]"}}]}`, `"tool_calls"`, ""),
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[
			{"type":"tool_use","id":"c1","name":"A","input":{"raw_arguments":"{\"x\": 1"}},
			{"type":"tool_use","id":"c2","name":"B","input":{}},
			{"type":"tool_use","id":"c3","name":"C","input":{"y":2}},
			{"type":"tool_use","id":"c4","name":"D","input":{"raw_arguments":"[1,2]"}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`,
	}, {
		name: "vLLM names the stop string: stop_sequence",
		in:   chatResp(`{"role":"assistant","content":"a b"}`, `"stop"`, `,"stop_reason":"END"`),
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"a b"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":100,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`,
	}, {
		name: "usage with cached tokens",
		in:   `{"id":"chatcmpl-abc","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":812,"completion_tokens":24,"total_tokens":836,"prompt_tokens_details":{"cached_tokens":800}}}`,
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":24,"cache_read_input_tokens":800,"cache_creation_input_tokens":0}}`,
	}, {
		name: "empty choices and no usage: still a message with usage",
		in:   `{"id":"chatcmpl-abc","model":"m","choices":[]}`,
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`,
	}, {
		name: "null content, empty answer",
		in:   chatResp(`{"role":"assistant","content":null}`, `"stop"`, ""),
		want: `{"id":"msg_abc","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := MessagesOnChatResponse([]byte(tt.in), "claude-x")
			if err != nil {
				t.Fatal(err)
			}
			requireSameJSON(t, out, tt.want)
			// The official SDK reads it.
			var m anthropic.Message
			if err := m.UnmarshalJSON(out); err != nil {
				t.Fatalf("SDK: %v", err)
			}
			if m.ID == "" || m.Model != "claude-x" || string(m.Role) != "assistant" {
				t.Errorf("SDK view: %+v", m)
			}
		})
	}
}

func TestChatToMessagesFinishReasons(t *testing.T) {
	for _, tt := range []struct {
		finish, extra string
		toolCalls     bool
		reason, seq   string
	}{
		{`"stop"`, ``, false, "end_turn", ""},
		{`"length"`, ``, false, "max_tokens", ""},
		{`"tool_calls"`, ``, true, "tool_use", ""},
		{`"function_call"`, ``, true, "tool_use", ""},
		{`"content_filter"`, ``, false, "refusal", ""},
		{`null`, ``, false, "end_turn", ""},
		{`"eos"`, ``, false, "end_turn", ""},
		{`"stop"`, `,"stop_reason":"###"`, false, "stop_sequence", "###"},
		{`"stop"`, `,"stop_reason":151645`, false, "end_turn", ""},
		{`"stop"`, `,"stop_reason":null`, false, "end_turn", ""},
		{`"length"`, `,"stop_reason":"###"`, false, "max_tokens", ""},
		{`"stop"`, ``, true, "tool_use", ""}, // a server that says stop after tool calls
	} {
		msg := `{"role":"assistant","content":"x"}`
		if tt.toolCalls {
			msg = `{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`
		}
		out, err := MessagesOnChatResponse([]byte(chatResp(msg, tt.finish, tt.extra)), "a")
		if err != nil {
			t.Fatalf("%s%s: %v", tt.finish, tt.extra, err)
		}
		var got messages.Response
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		seq := ""
		if got.StopSequence != nil {
			seq = *got.StopSequence
		}
		if got.StopReason == nil || *got.StopReason != tt.reason || seq != tt.seq {
			t.Errorf("%s%s tools=%v: stop_reason %v stop_sequence %q, want %s %q", tt.finish, tt.extra, tt.toolCalls, got.StopReason, seq, tt.reason, tt.seq)
		}
	}
}

func TestChatToMessagesIDs(t *testing.T) {
	out, err := MessagesOnChatResponse([]byte(`{"id":"","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`), "a")
	if err != nil {
		t.Fatal(err)
	}
	var got messages.Response
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.ID, "msg_") || len(got.ID) < 10 {
		t.Errorf("id %q", got.ID)
	}
	if len(got.Content) != 1 || !strings.HasPrefix(got.Content[0].ID, "toolu_") || len(got.Content[0].ID) < 12 {
		t.Errorf("content %+v", got.Content)
	}
	if MessageID("chatcmpl-xyz") != "msg_xyz" || MessageID("abc") != "msg_abc" {
		t.Error("MessageID")
	}
}

func TestChatToMessagesErrors(t *testing.T) {
	for _, in := range []string{``, `{`, `[]`, `{"choices":{}}`, `{"choices":[{"message":{"content":5}}]}`} {
		if out, err := MessagesOnChatResponse([]byte(in), "a"); err == nil {
			t.Errorf("%q: no error, got %s", in, out)
		}
	}
}

func TestToolInput(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{`{"a":1}`, `{"a":1}`},
		{` {"a": [1, 2]} `, `{"a": [1, 2]}`},
		{``, `{}`},
		{`   `, `{}`},
		{`{"a":`, `{"raw_arguments":"{\"a\":"}`},
		{`"{\"a\":1}"`, `{"a":1}`},
		{`"hello"`, `{"raw_arguments":"\"hello\""}`},
		{`null`, `{"raw_arguments":"null"}`},
		{"{\"a\":\"\xff\"}", `{"raw_arguments":"{\"a\":\"` + "\uFFFD" + `\"}"}`},
	} {
		got := ToolInput(tt.args)
		if !jsontext.Value(got).IsValid() || string(got) != tt.want {
			t.Errorf("ToolInput(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}
