package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// newNativeHarness is the proxy with vendora/ routes (claude-opus-5-5 and
// local-model) in front of the stub serving the Messages format.
func newNativeHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	o.native = true
	return newHarness(t, o)
}

// nativeRequests returns what the stub received at /v1/messages, checking
// the headers every one must carry.
func nativeRequests(t *testing.T, h *harness) []stub.Request {
	t.Helper()
	var out []stub.Request
	for _, r := range h.backend.Requests() {
		if r.Path != "/v1/messages" {
			continue
		}
		out = append(out, r)
		if got := r.Header.Get("Authorization"); got != "Bearer "+backendKey {
			t.Errorf("backend Authorization = %q, want the backend key", got)
		}
		if got := r.Header.Get("X-Api-Key"); got != backendKey {
			t.Errorf("backend x-api-key = %q, want the backend key", got)
		}
		if r.Header.Get("Anthropic-Version") == "" {
			t.Error("no anthropic-version reached the backend")
		}
		for name, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, clientKey) {
					t.Errorf("the client's key reached the backend in %s", name)
				}
			}
		}
	}
	return out
}

func TestNativeSDKNonStream(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	msg, err := messagesClient(h, clientKey).Messages.New(context.Background(), userText("claude-opus-5-5", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Model) != "claude-opus-5-5" || msg.ID != "msg_stub" || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("message = %+v", msg)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from stub-backend. You said: hi" {
		t.Errorf("content = %+v", msg.Content)
	}
	if msg.Usage.InputTokens != 1 || msg.Usage.OutputTokens != 6 {
		t.Errorf("usage = %+v", msg.Usage)
	}
	reqs := nativeRequests(t, h)
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"model":"qwen3-coder"`) {
		t.Fatalf("backend requests = %+v", reqs)
	}
	if n := len(h.backend.Requests()); n != 1 {
		t.Errorf("backend saw %d requests, want 1 (at /v1/messages)", n)
	}
}

// messageJSON is a message's content, stop reason and usage as JSON, for
// exact comparisons.
func messageJSON(t *testing.T, m anthropic.Message) string {
	t.Helper()
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		Thinking  string          `json:"thinking,omitempty"`
		Signature string          `json:"signature,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
	}
	var blocks []block
	for _, b := range m.Content {
		in := b.Input
		if len(in) > 0 {
			var v any
			json.Unmarshal(in, &v)
			in, _ = json.Marshal(v)
		}
		blocks = append(blocks, block{b.Type, b.Text, b.Thinking, b.Signature, b.ID, b.Name, in})
	}
	out, _ := json.Marshal(map[string]any{"id": m.ID, "model": m.Model, "content": blocks, "stop_reason": m.StopReason,
		"usage": map[string]int64{"in": m.Usage.InputTokens, "out": m.Usage.OutputTokens}})
	return string(out)
}

// TestNativeSDKStreamAccumulator: the SDK's accumulator over the relayed
// stream gives exactly the message the non-stream call gives, for text,
// thinking, one tool call and parallel tool calls.
func TestNativeSDKStreamAccumulator(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	client := messagesClient(h, clientKey)
	cases := []struct {
		prompt string
		want   string
	}{
		{"stream it", `{"content":[{"type":"text","text":"Hello from stub-backend. You said: stream it"}],"id":"msg_stub","model":"local-model","stop_reason":"end_turn","usage":{"in":2,"out":7}}`},
		{"stub:reasoning", `{"content":[{"type":"thinking","thinking":"The user wants a greeting.","signature":"stub-signature"},{"type":"text","text":"Hello!"}],"id":"msg_stub","model":"local-model","stop_reason":"end_turn","usage":{"in":1,"out":6}}`},
		{"stub:tool", `{"content":[{"type":"tool_use","id":"toolu_stub_1","name":"Bash","input":{"command":"stub-command","description":"stub-description"}}],"id":"msg_stub","model":"local-model","stop_reason":"tool_use","usage":{"in":1,"out":8}}`},
		{"stub:parallel", `{"content":[{"type":"tool_use","id":"toolu_stub_1","name":"Bash","input":{"command":"stub-command","description":"stub-description"}},{"type":"tool_use","id":"toolu_stub_2","name":"Bash","input":{"command":"stub2-command","description":"stub2-description"}}],"id":"msg_stub","model":"local-model","stop_reason":"tool_use","usage":{"in":1,"out":16}}`},
	}
	for _, tc := range cases {
		params := userText("local-model", tc.prompt)
		params.Tools = []anthropic.ToolUnionParam{bashTool}
		streamed := messageJSON(t, accumulate(t, client, params))
		whole, err := client.Messages.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		if streamed != tc.want {
			t.Errorf("%s: accumulated\n got %s\nwant %s", tc.prompt, streamed, tc.want)
		}
		if got := messageJSON(t, *whole); got != tc.want {
			t.Errorf("%s: non-stream\n got %s\nwant %s", tc.prompt, got, tc.want)
		}
	}
}

func TestNativeSDKToolRoundTrip(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	client := messagesClient(h, clientKey)
	params := userText("claude-opus-5-5", "stub:tool")
	params.Tools = []anthropic.ToolUnionParam{bashTool}
	first := accumulate(t, client, params)
	if first.StopReason != anthropic.StopReasonToolUse || len(first.Content) != 1 {
		t.Fatalf("first turn = %s", messageJSON(t, first))
	}
	params.Messages = append(params.Messages, first.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(first.Content[0].ID, "file1 file2", false)))
	second := accumulate(t, client, params)
	if got := messageJSON(t, second); got != `{"content":[{"type":"text","text":"Got the tool result: file1 file2"}],"id":"msg_stub","model":"claude-opus-5-5","stop_reason":"end_turn","usage":{"in":3,"out":6}}` {
		t.Errorf("second turn = %s", got)
	}
	reqs := nativeRequests(t, h)
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `"tool_use_id":"toolu_stub_1"`) {
		t.Fatalf("the tool result did not reach the backend as sent: %+v", reqs)
	}
}

// TestNativeBodyBytes sends a captured client request: the backend gets it
// with the billing block, context_management and the model changed, and
// every other byte as the client sent it; anthropic-version and
// anthropic-beta pass, the client's key does not.
func TestNativeBodyBytes(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	f, err := fixtures.ClientCapture("02-tool-turn-request.json")
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, f.Body)
	body := compact.String()
	var parsed struct {
		System            []struct{ Text string } `json:"system"`
		ContextManagement json.RawMessage         `json:"context_management"`
	}
	json.Unmarshal(compact.Bytes(), &parsed)
	billing, _ := json.Marshal(parsed.System[0].Text)
	want := body
	for _, c := range [][2]string{
		{`"system":[{"type":"text","text":` + string(billing) + `},`, `"system":[`},
		{`,"context_management":` + string(parsed.ContextManagement), ``},
		{`"model":"claude-opus-5-5"`, `"model":"qwen3-coder"`},
	} {
		if strings.Count(want, c[0]) != 1 {
			t.Fatalf("%q is not in the fixture once", c[0])
		}
		want = strings.Replace(want, c[0], c[1], 1)
	}
	// Not streamed, so the answer is one JSON body.
	body = strings.Replace(body, `"stream":true`, `"stream":false`, 1)
	want = strings.Replace(want, `"stream":true`, `"stream":false`, 1)
	resp := h.post("/v1/messages?beta=true", body, "anthropic-version", f.Headers["anthropic-version"], "anthropic-beta", f.Headers["anthropic-beta"])
	b := drain(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"model":"claude-opus-5-5"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := nativeRequests(t, h)
	if len(reqs) != 1 {
		t.Fatalf("%d backend requests", len(reqs))
	}
	if got := string(reqs[0].Body); got != want {
		t.Errorf("the backend got other bytes than the normalized request (%d vs %d bytes)", len(got), len(want))
	}
	if got := reqs[0].Header.Get("Anthropic-Beta"); got != f.Headers["anthropic-beta"] || got == "" {
		t.Errorf("anthropic-beta = %q", got)
	}
	if got := reqs[0].Header.Get("Anthropic-Version"); got != "2023-06-01" {
		t.Errorf("anthropic-version = %q", got)
	}
}

// TestNativeColdStartPings: a native backend silent for 6 s; the client
// gets pings from the first interval on, then the backend's own events.
func TestNativeColdStartPings(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{stub: stub.Options{ColdStart: 6 * time.Second}, ping: time.Second})
	start := time.Now()
	resp := h.post("/v1/messages", `{"model":"claude-opus-5-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"cold hello"}]}`)
	defer resp.Body.Close()
	// The bound is the backend's silence, not a guess at the machine's
	// speed (it was 2 s, which a loaded -race run need not meet): the
	// stream must be committed before the backend says anything.
	if headers := time.Since(start); resp.StatusCode != 200 || headers >= 6*time.Second {
		t.Fatalf("status %d after %s: the stream should commit before the 6 s cold start ends", resp.StatusCode, headers)
	}
	events := string(readEvents(t, resp.Body))
	head, _, found := strings.Cut(events, "event: message_start")
	if !found {
		t.Fatalf("no message_start:\n%s", events)
	}
	if n := strings.Count(head, "event: ping"); n < 4 {
		t.Errorf("%d pings before message_start in a 6 s cold start at a 1 s interval", n)
	}
	if got := streamedText(t, []byte(events)); got != "Hello from stub-backend. You said: cold hello" || !strings.HasSuffix(events, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Errorf("text %q; stream:\n%s", got, events)
	}
}

// TestNativeBackendErrors: a native backend's error statuses reach the
// Messages client as the format's error shapes, stream or not.
func TestNativeBackendErrors(t *testing.T) {
	cases := []struct {
		status     int
		body       string
		wantStatus int
		wantType   string
	}{
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`, 529, "overloaded_error"},
		{503, `{"type":"error","error":{"type":"api_error","message":"Loading model"}}`, 529, "overloaded_error"},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, 429, "rate_limit_error"},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: bad"}}`, 400, "invalid_request_error"},
		{500, `{"type":"error","error":{"type":"api_error","message":"boom"}}`, 502, "api_error"},
		// LM Studio's context overflow on its Messages endpoint.
		{500, `{"type":"error","error":{"type":"api_error","message":"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 5012 >= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input."}}`, 400, "invalid_request_error"},
	}
	for _, tc := range cases {
		h := newNativeHarness(t, harnessOptions{backendURL: cannedBackend(t, tc.status, tc.body)})
		client := messagesClient(h, clientKey)
		_, err := client.Messages.New(context.Background(), userText("claude-opus-5-5", "hi"))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.wantStatus || !strings.Contains(apiErr.RawJSON(), `"type":"`+tc.wantType+`"`) {
			t.Errorf("backend %d: err = %v, want %d %s", tc.status, err, tc.wantStatus, tc.wantType)
			continue
		}
		if strings.Contains(tc.body, "n_keep") && !strings.Contains(apiErr.RawJSON(), "prompt is too long: 5012 tokens > 4096 maximum") {
			t.Errorf("overflow message %s", apiErr.RawJSON())
		}
		stream := client.Messages.NewStreaming(context.Background(), userText("claude-opus-5-5", "hi"))
		for stream.Next() {
		}
		if !errors.As(stream.Err(), &apiErr) || apiErr.StatusCode != tc.wantStatus {
			t.Errorf("backend %d, stream: err = %v, want %d", tc.status, stream.Err(), tc.wantStatus)
		}
	}
}

// TestNativeMidStreamFailures: an error event from the backend reaches the
// client as it was; a backend cut off mid-stream gives an error event.
func TestNativeMidStreamFailures(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	for prompt, want := range map[string]string{
		"stub:error-midstream": "stub: failure mid-stream",
		"stub:die":             "the backend stream broke off",
	} {
		resp := h.post("/v1/messages", `{"model":"claude-opus-5-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"`+prompt+`"}]}`)
		events := string(readEvents(t, resp.Body))
		resp.Body.Close()
		_, last, _ := strings.Cut(events, "event: error\n")
		if !strings.Contains(last, want) || strings.Contains(last, "event:") {
			t.Errorf("%s: stream does not end with one error event saying %q:\n%s", prompt, want, events)
		}
		stream := messagesClient(h, clientKey).Messages.NewStreaming(context.Background(), userText("claude-opus-5-5", prompt))
		for stream.Next() {
		}
		if stream.Err() == nil || !strings.Contains(stream.Err().Error(), want) {
			t.Errorf("%s: SDK error %v", prompt, stream.Err())
		}
	}
}

func TestNativeCountTokens(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	count := func(h *harness) (string, string) {
		resp := h.post("/v1/messages/count_tokens?beta=true", `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"one two three four"}],"context_management":{}}`)
		b := drain(t, resp)
		return resp.Header.Get("Dragoman-Token-Count"), strings.TrimSpace(string(b))
	}
	if source, body := count(h); source != "backend" || body != `{"input_tokens":4}` {
		t.Errorf("native count_tokens: %s %s", source, body)
	}
	var seen bool
	for _, r := range h.backend.Requests() {
		if r.Path == "/v1/messages/count_tokens" {
			seen = !strings.Contains(string(r.Body), "context_management") && strings.Contains(string(r.Body), `"qwen3-coder"`)
		}
	}
	if !seen {
		t.Error("the backend's count_tokens did not get the normalized body")
	}
	// A backend without count_tokens (404): today's path.
	chatOnly := newNativeHarness(t, harnessOptions{stub: stub.Options{Protocol: stub.ProtocolChat}})
	for range 2 {
		if source, body := count(chatOnly); source != "estimate" || !strings.HasPrefix(body, `{"input_tokens":`) {
			t.Errorf("fallback count_tokens: %s %s", source, body)
		}
	}
}

// chatCompletionJSON is a Chat completion's model, message (content,
// reasoning_content, tool calls with their arguments as sent), finish
// reason and usage as JSON, for exact comparisons. reasoning is the
// reasoning_content to report: the SDK's message has no field for it.
func chatCompletionJSON(c *openai.ChatCompletion, reasoning string) string {
	type call struct{ ID, Name, Arguments string }
	out := map[string]any{"model": c.Model, "choices": len(c.Choices)}
	if len(c.Choices) > 0 {
		m := c.Choices[0].Message
		calls := []call{}
		for _, tc := range m.ToolCalls {
			calls = append(calls, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
		out["content"], out["reasoning_content"], out["tool_calls"], out["finish"] = m.Content, reasoning, calls, c.Choices[0].FinishReason
	}
	out["usage"] = []int64{c.Usage.PromptTokens, c.Usage.CompletionTokens}
	b, _ := json.Marshal(out)
	return string(b)
}

// extraString is a field the SDK has no member for, as a string ("" when
// absent or null).
func extraString(fields map[string]respjson.Field, name string) string {
	var s string
	if f, ok := fields[name]; ok {
		json.Unmarshal([]byte(f.Raw()), &s)
	}
	return s
}

// TestNativeChatSDK: the Chat SDK on a vendora/ alias, translated to the
// Messages format and back: a tool call, two parallel tool calls, and a
// thinking block (reasoning_content) before two parallel calls. The
// non-stream answer and the SDK's stream accumulator (with the
// reasoning_content deltas joined beside it) each give exactly the
// expected completion, tool call ids, names and arguments included.
func TestNativeChatSDK(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	client := chatClient(h, clientKey)
	// The stub's non-stream answer holds the input as a JSON value (its
	// arguments come out compact); its stream sends the arguments as the
	// model wrote them, in two input_json_delta fragments.
	cases := []struct{ prompt, whole, streamed string }{{
		"stub:tool",
		`{"choices":1,"content":"","finish":"tool_calls","model":"local-model","reasoning_content":"","tool_calls":[{"ID":"toolu_stub_1","Name":"Bash","Arguments":"{\"command\":\"stub-command\"}"}],"usage":[1,8]}`,
		`{"choices":1,"content":"","finish":"tool_calls","model":"local-model","reasoning_content":"","tool_calls":[{"ID":"toolu_stub_1","Name":"Bash","Arguments":"{\"command\": \"stub-command\"}"}],"usage":[1,8]}`,
	}, {
		"stub:parallel",
		`{"choices":1,"content":"","finish":"tool_calls","model":"local-model","reasoning_content":"","tool_calls":[{"ID":"toolu_stub_1","Name":"Bash","Arguments":"{\"command\":\"stub-command\"}"},{"ID":"toolu_stub_2","Name":"Bash","Arguments":"{\"command\":\"stub2-command\"}"}],"usage":[1,16]}`,
		`{"choices":1,"content":"","finish":"tool_calls","model":"local-model","reasoning_content":"","tool_calls":[{"ID":"toolu_stub_1","Name":"Bash","Arguments":"{\"command\": \"stub-command\"}"},{"ID":"toolu_stub_2","Name":"Bash","Arguments":"{\"command\": \"stub2-command\"}"}],"usage":[1,16]}`,
	}, {
		"stub:thinking stub:parallel",
		`{"choices":1,"content":"","finish":"tool_calls","model":"local-model","reasoning_content":"Two calls are needed.","tool_calls":[{"ID":"toolu_stub_1","Name":"Bash","Arguments":"{\"command\":\"stub-command\"}"},{"ID":"toolu_stub_2","Name":"Bash","Arguments":"{\"command\":\"stub2-command\"}"}],"usage":[2,20]}`,
		`{"choices":1,"content":"","finish":"tool_calls","model":"local-model","reasoning_content":"Two calls are needed.","tool_calls":[{"ID":"toolu_stub_1","Name":"Bash","Arguments":"{\"command\": \"stub-command\"}"},{"ID":"toolu_stub_2","Name":"Bash","Arguments":"{\"command\": \"stub2-command\"}"}],"usage":[2,20]}`,
	}, {
		"stub:thinking",
		`{"choices":1,"content":"Hello from stub-backend. You said: stub:thinking","finish":"stop","model":"local-model","reasoning_content":"Two calls are needed.","tool_calls":[],"usage":[1,10]}`,
		`{"choices":1,"content":"Hello from stub-backend. You said: stub:thinking","finish":"stop","model":"local-model","reasoning_content":"Two calls are needed.","tool_calls":[],"usage":[1,10]}`,
	}}
	for _, tc := range cases {
		params := chatParams("local-model", tc.prompt)
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		params.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "Bash", Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}},
		})}
		whole, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: params.Model, Messages: params.Messages, MaxTokens: params.MaxTokens, Tools: params.Tools,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := chatCompletionJSON(whole, extraString(whole.Choices[0].Message.JSON.ExtraFields, "reasoning_content")); got != tc.whole {
			t.Errorf("%s: non-stream\n got %s\nwant %s", tc.prompt, got, tc.whole)
		}
		stream := client.Chat.Completions.NewStreaming(context.Background(), params)
		var acc openai.ChatCompletionAccumulator
		var reasoning strings.Builder
		for stream.Next() {
			chunk := stream.Current()
			if !acc.AddChunk(chunk) {
				t.Fatalf("%s: the accumulator refused chunk %s", tc.prompt, chunk.RawJSON())
			}
			for _, c := range chunk.Choices {
				reasoning.WriteString(extraString(c.Delta.JSON.ExtraFields, "reasoning_content"))
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if got := chatCompletionJSON(&acc.ChatCompletion, reasoning.String()); got != tc.streamed {
			t.Errorf("%s: accumulated\n got %s\nwant %s", tc.prompt, got, tc.streamed)
		}
	}
	if reqs := nativeRequests(t, h); len(reqs) != 2*len(cases) || !strings.Contains(string(reqs[0].Body), `"input_schema"`) {
		t.Fatalf("the backend did not get Messages requests: %+v", reqs)
	}
}
