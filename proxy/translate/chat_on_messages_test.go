package translate

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/sse"
)

func TestChatToMessagesRequest(t *testing.T) {
	in := `{"model":"a","messages":[
		{"role":"system","content":"S1"},
		{"role":"developer","content":[{"type":"text","text":"S2"}]},
		{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},
		{"role":"assistant","content":"calling","reasoning_content":"hmm","tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}},{"id":"c2","type":"function","function":{"name":"Bash","arguments":"not json"}}]},
		{"role":"tool","tool_call_id":"c1","content":"a b"},
		{"role":"user","content":"and?"},
		{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"err"}]}
	],
	"max_completion_tokens":99999,"stop":"END","temperature":0.5,"top_k":4,"user":"u1","reasoning_effort":"medium",
	"tools":[{"type":"function","function":{"name":"Bash","description":"run","parameters":{"type":"object"}}},{"type":"function","function":{"name":"Nop"}}],
	"tool_choice":"required","parallel_tool_calls":false,"stream":true,"stream_options":{"include_usage":true},"logprobs":true,"seed":3}`
	br, err := ChatOnMessagesRequest([]byte(in), resolverFor(Target{BackendModel: "qwen3", MaxOutputTokens: 8192}))
	if err != nil {
		t.Fatal(err)
	}
	requireSameJSON(t, br.Body, `{"model":"qwen3",
		"system":[{"type":"text","text":"S1"},{"type":"text","text":"S2"}],
		"messages":[
			{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},{"type":"image","source":{"type":"url","url":"https://x/y.png"}}]},
			{"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"tool_use","id":"c1","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"c2","name":"Bash","input":{"raw_arguments":"not json"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"a b"}]},{"type":"tool_result","tool_use_id":"c2","content":[{"type":"text","text":"err"}]},{"type":"text","text":"and?"}]}
		],
		"max_tokens":8192,"stop_sequences":["END"],"temperature":0.5,"top_k":4,
		"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object"}},{"name":"Nop","input_schema":{"type":"object","properties":{}}}],
		"tool_choice":{"type":"any","disable_parallel_tool_use":true},
		"metadata":{"user_id":"u1"},"thinking":{"type":"enabled","budget_tokens":4096},"stream":true}`)
	if !br.Stream || !br.IncludeUsage || br.Target.Alias != "a" {
		t.Errorf("stream %v include_usage %v target %+v", br.Stream, br.IncludeUsage, br.Target)
	}
}

func TestChatToMessagesRequestErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"model":"a","messages":[{"role":"user","content":"q"}],"n":2}`:                                           "n:",
		`{"model":"a","messages":[]}`:                                                                              "messages",
		`{"messages":[{"role":"user","content":"q"}]}`:                                                             "model",
		`{"model":"a","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`:           "input_audio",
		`{"model":"a","messages":[{"role":"tool","content":"x"}]}`:                                                 "tool_call_id",
		`{"model":"a","messages":[{"role":"user","content":"q"}],"tool_choice":"sometimes"}`:                       "tool_choice",
		`{"model":"a","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x"}}]}]}`: "data URL",
		`{"model":"a","messages":[{"role":"user","content":"q"}],"max_tokens":0}`:                                  "max_tokens",
	} {
		_, err := ChatOnMessagesRequest([]byte(in), nil)
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(re.Msg, want) {
			t.Errorf("%s: err %v, want a *RequestError about %s", in, err, want)
		}
	}
}

func TestMessagesToChatResponse(t *testing.T) {
	in := `{"id":"msg_01","type":"message","role":"assistant","model":"qwen3","content":[
		{"type":"thinking","thinking":"think","signature":"s"},{"type":"text","text":"Hi "},{"type":"text","text":"there"},
		{"type":"tool_use","id":"toolu_1","name":"Bash","input":{ "command" : "ls" }}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":90}}`
	out, _, err := ChatOnMessagesResponse([]byte(in), "alias", 7)
	if err != nil {
		t.Fatal(err)
	}
	requireSameJSON(t, out, `{"id":"chatcmpl-01","object":"chat.completion","created":7,"model":"alias","choices":[{"index":0,
		"message":{"role":"assistant","content":"Hi there","reasoning_content":"think","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]},
		"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":90}}}`)
	for reason, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "content_filter", "pause_turn": "stop"} {
		out, _, _ := ChatOnMessagesResponse([]byte(`{"type":"message","content":[],"stop_reason":"`+reason+`","usage":{}}`), "a", 0)
		var r chat.Response
		if err := json.Unmarshal(out, &r); err != nil || len(r.Choices) != 1 || r.Choices[0].FinishReason != want || r.Choices[0].Message.Content == nil {
			t.Errorf("%s: %s", reason, out)
		}
	}
	if _, _, err := ChatOnMessagesResponse([]byte(`{"type":"error","error":{}}`), "a", 0); err == nil {
		t.Error("an error body passed as a message")
	}
}

// reverseInput is a Messages stream with thinking, text and two tool
// calls, as a native server sends it.
const reverseInput = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_9\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":12,\"output_tokens\":1}}}\n\n" +
	"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Hm\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"h\u00e9\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"Read\",\"input\":{\"p\":2}}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

const reverseWant = `data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"reasoning_content":"Hm"},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"content":"hé"},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t1","type":"function","function":{"name":"Bash","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"t2","type":"function","function":{"name":"Read","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"p\":2}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":5,"model":"alias","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":20,"total_tokens":32,"prompt_tokens_details":{"cached_tokens":0}}}

data: [DONE]

`

// TestReverseStreamSplits feeds the stream split at every offset: the
// chunks are the same whatever the split.
func TestReverseStreamSplits(t *testing.T) {
	for cut := 0; cut <= len(reverseInput); cut += 7 {
		rs := NewChatOnMessagesStream("alias", 5, true)
		out, err := rs.Feed(nil, []byte(reverseInput[:cut]))
		if err == nil {
			out, err = rs.Feed(out, []byte(reverseInput[cut:]))
		}
		if err == nil {
			out, err = rs.Finish(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != reverseWant {
			t.Fatalf("cut %d:\n%s", cut, out)
		}
		if !rs.Ended() || !rs.Done() {
			t.Fatal("not ended after message_stop")
		}
	}
}

func TestReverseStreamErrorAndBreak(t *testing.T) {
	rs := NewChatOnMessagesStream("a", 0, false)
	_, err := rs.Feed(nil, []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"))
	var be *BackendError
	if !errors.As(err, &be) || be.Message != "busy" || be.Type != "overloaded_error" || !rs.Done() || rs.Ended() {
		t.Fatalf("err %v done %v ended %v", err, rs.Done(), rs.Ended())
	}
	cut := NewChatOnMessagesStream("a", 0, false)
	out, err := cut.Feed(nil, []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n"))
	if err != nil || cut.Ended() || strings.Contains(string(out), "[DONE]") || strings.Contains(string(out), "usage") {
		t.Fatalf("a stream without message_stop: err %v ended %v\n%s", err, cut.Ended(), out)
	}
}

// checkChatChunks checks a Chat stream's grammar: data lines of JSON chunks
// naming the alias, one role chunk first, one finish, [DONE] last.
func checkChatChunks(t *testing.T, out []byte, ended bool) {
	t.Helper()
	var dec sse.Decoder
	dec.Feed(out)
	finishes, done := 0, false
	for {
		ev, ok := dec.Next()
		if !ok {
			break
		}
		if done {
			t.Fatalf("data after [DONE]:\n%s", out)
		}
		if string(ev.Data) == "[DONE]" {
			done = true
			continue
		}
		var c chat.Chunk
		if err := json.Unmarshal(ev.Data, &c); err != nil || c.Model != "alias" {
			t.Fatalf("bad chunk %s: %v", ev.Data, err)
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != "" {
				finishes++
			}
		}
	}
	if ended && (!done || finishes != 1) {
		t.Fatalf("ended stream: [DONE] %v, %d finishes\n%s", done, finishes, out)
	}
}

func FuzzReverseStream(f *testing.F) {
	f.Add([]byte(reverseInput), 10)
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":\"x\"}}\n\n"), 3)
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"input\":{\"a\":1}}}\n\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\ndata: {\"type\":\"message_stop\"}\n\n"), 1)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		if cut < 0 || cut > len(in) {
			cut = len(in) / 2
		}
		rs := NewChatOnMessagesStream("alias", 1, true)
		out, err := rs.Feed(nil, in[:cut])
		if err == nil {
			out, err = rs.Feed(out, in[cut:])
		}
		if err == nil {
			out, err = rs.Finish(out)
		}
		var be *BackendError
		if err != nil && !errors.As(err, &be) && !errors.Is(err, sse.ErrEventTooLarge) {
			t.Fatalf("unexpected error %v", err)
		}
		checkChatChunks(t, out, rs.Ended())
	})
}

func FuzzChatToMessagesRequest(f *testing.F) {
	f.Add([]byte(`{"model":"a","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"q"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"stop":["x"],"max_tokens":5,"reasoning_effort":"high"}`), 0)
	f.Add([]byte(`{"model":"a","messages":[{"role":"user","content":"hi"}],"stream":true,"parallel_tool_calls":false}`), 100)
	f.Fuzz(func(t *testing.T, body []byte, maxOut int) {
		br, err := ChatOnMessagesRequest(body, resolverFor(Target{BackendModel: "m", MaxOutputTokens: maxOut}))
		var out messages.Request
		if !fuzzOutput(t, br, err, &out) {
			return
		}
		if out.Model != "m" || out.MaxTokens == nil || *out.MaxTokens < 1 || (maxOut > 0 && *out.MaxTokens > int64(maxOut)) {
			t.Fatalf("model %q max_tokens %v (limit %d)", out.Model, out.MaxTokens, maxOut)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("no messages:\n%s", br.Body)
		}
		for i, m := range out.Messages {
			if m.Role != "user" && m.Role != "assistant" || i > 0 && m.Role == out.Messages[i-1].Role {
				t.Fatalf("roles do not alternate at %d:\n%s", i, br.Body)
			}
		}
		if out.Thinking != nil && out.Thinking.BudgetTokens >= *out.MaxTokens {
			t.Fatalf("thinking budget %d not below max_tokens %d", out.Thinking.BudgetTokens, *out.MaxTokens)
		}
		_ = bytes.Equal
	})
}
