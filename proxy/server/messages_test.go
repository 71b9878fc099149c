package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

func messagesClient(h *harness, key string) *anthropic.Client {
	c := anthropic.NewClient(option.WithBaseURL(h.proxy.URL), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

func userText(model, text string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
}

var bashTool = anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: map[string]any{
	"command":     map[string]any{"type": "string"},
	"description": map[string]any{"type": "string"},
}}, "Bash")

// accumulate runs a stream to its end with the SDK's own accumulator.
func accumulate(t *testing.T, client *anthropic.Client, params anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	stream := client.Messages.NewStreaming(context.Background(), params)
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return msg
}

func sameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got invalid JSON %q: %v", got, err)
	}
	json.Unmarshal([]byte(want), &w)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON %s, want %s", got, want)
	}
}

func TestMessagesSDKNonStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	msg, err := messagesClient(h, clientKey).Messages.New(context.Background(), userText("claude-opus-5-5", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Model) != "claude-opus-5-5" || msg.StopReason != anthropic.StopReasonEndTurn || !strings.HasPrefix(msg.ID, "msg_") {
		t.Errorf("message = %+v", msg)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from stub-backend. You said: hi" {
		t.Errorf("content = %+v", msg.Content)
	}
	if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Errorf("usage = %+v", msg.Usage)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 || reqs[0]["model"] != "qwen3-coder" || reqs[0]["max_tokens"] != float64(256) {
		t.Errorf("backend requests = %v", reqs)
	}
}

func TestMessagesSDKStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	msg := accumulate(t, messagesClient(h, clientKey), userText("local-model", "stream it"))
	if len(msg.Content) != 1 || msg.Content[0].Text != "Hello from stub-backend. You said: stream it" {
		t.Errorf("content = %+v", msg.Content)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || string(msg.Model) != "local-model" {
		t.Errorf("stop %q model %q", msg.StopReason, msg.Model)
	}
	if msg.Usage.OutputTokens == 0 || msg.Usage.InputTokens == 0 {
		t.Errorf("usage = %+v", msg.Usage)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 || reqs[0]["stream"] != true {
		t.Fatalf("backend requests = %v", reqs)
	}
	if opts, _ := reqs[0]["stream_options"].(map[string]any); opts["include_usage"] != true {
		t.Errorf("stream_options = %v", reqs[0]["stream_options"])
	}
}

func TestMessagesSDKStreamedToolUse(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	params := userText("claude-opus-5-5", "stub:tool please")
	params.Tools = []anthropic.ToolUnionParam{bashTool}
	msg := accumulate(t, messagesClient(h, clientKey), params)
	if msg.StopReason != anthropic.StopReasonToolUse || len(msg.Content) != 1 {
		t.Fatalf("message = %+v", msg)
	}
	block := msg.Content[0]
	if block.Type != "tool_use" || block.Name != "Bash" || block.ID != "call_stub_1" {
		t.Errorf("block = %+v", block)
	}
	sameJSON(t, string(block.Input), `{"command": "stub-command", "description": "stub-description"}`)
}

func TestMessagesSDKParallelToolUses(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	params := userText("claude-opus-5-5", "stub:parallel")
	params.Tools = []anthropic.ToolUnionParam{bashTool}
	for _, stream := range []bool{true, false} {
		var msg anthropic.Message
		if stream {
			msg = accumulate(t, messagesClient(h, clientKey), params)
		} else {
			m, err := messagesClient(h, clientKey).Messages.New(context.Background(), params)
			if err != nil {
				t.Fatal(err)
			}
			msg = *m
		}
		if len(msg.Content) != 2 {
			t.Fatalf("stream=%v: %d blocks, want 2: %+v", stream, len(msg.Content), msg.Content)
		}
		for i, want := range []string{
			`{"command": "stub-command", "description": "stub-description"}`,
			`{"command": "stub2-command", "description": "stub2-description"}`,
		} {
			b := msg.Content[i]
			if b.Type != "tool_use" || b.ID != []string{"call_stub_1", "call_stub_2"}[i] {
				t.Errorf("stream=%v block %d = %+v", stream, i, b)
			}
			sameJSON(t, string(b.Input), want)
		}
	}
}

func TestMessagesSDKToolResultTurn(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	params := anthropic.MessageNewParams{
		Model:     "claude-opus-5-5",
		MaxTokens: 256,
		Tools:     []anthropic.ToolUnionParam{bashTool},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("run it")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_01", map[string]any{"command": "echo hello-from-tool"}, "Bash")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_01", "hello-from-tool", false)),
		},
	}
	msg := accumulate(t, messagesClient(h, clientKey), params)
	if len(msg.Content) == 0 || !strings.Contains(msg.Content[0].Text, "hello-from-tool") {
		t.Errorf("answer = %+v", msg.Content)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d backend requests", len(reqs))
	}
	msgs := reqs[0]["messages"].([]any)
	var sawCall, sawResult bool
	for _, m := range msgs {
		mm := m.(map[string]any)
		if mm["role"] == "assistant" {
			calls, _ := mm["tool_calls"].([]any)
			if len(calls) == 1 && calls[0].(map[string]any)["id"] == "toolu_01" {
				sawCall = true
				fn := calls[0].(map[string]any)["function"].(map[string]any)
				sameJSON(t, fn["arguments"].(string), `{"command":"echo hello-from-tool"}`)
			}
		}
		if mm["role"] == "tool" {
			sawResult = mm["tool_call_id"] == "toolu_01" && strings.Contains(contentString(mm["content"]), "hello-from-tool")
		}
	}
	if !sawCall || !sawResult {
		t.Errorf("backend messages lack the tool call or its result: %v", msgs)
	}
}

func contentString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMessagesSDKThinkingFromBothFields(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, field := range []string{"stub:reasoning_content", "stub:reasoning"} {
		msg := accumulate(t, messagesClient(h, clientKey), userText("claude-opus-5-5", field))
		if len(msg.Content) != 2 || msg.Content[0].Type != "thinking" || msg.Content[0].Thinking != "The user wants a greeting." ||
			msg.Content[1].Type != "text" || msg.Content[1].Text != "Hello!" {
			t.Errorf("%s stream: content = %+v", field, msg.Content)
		}
		m, err := messagesClient(h, clientKey).Messages.New(context.Background(), userText("claude-opus-5-5", field))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Content) != 2 || m.Content[0].Thinking != "The user wants a greeting." || m.Content[1].Text != "Hello!" {
			t.Errorf("%s: content = %+v", field, m.Content)
		}
	}
}

func TestMessagesSDKCountTokensBeta(t *testing.T) {
	for _, tokenize := range []bool{false, true} {
		h := newHarness(t, harnessOptions{stub: stub.Options{Tokenize: tokenize}})
		client := messagesClient(h, clientKey)
		var raw *http.Response
		count, err := client.Beta.Messages.CountTokens(context.Background(), anthropic.BetaMessageCountTokensParams{
			Model:    "claude-opus-5-5",
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("count these five words"))},
		}, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatalf("tokenize=%v: %v", tokenize, err)
		}
		if count.InputTokens <= 0 {
			t.Errorf("input_tokens = %d", count.InputTokens)
		}
		want := map[bool]string{false: "estimate", true: "backend"}[tokenize]
		if got := raw.Header.Get("Dragoman-Token-Count"); got != want {
			t.Errorf("tokenize=%v: source %q, want %q", tokenize, got, want)
		}
		if raw.Request.URL.RawQuery != "beta=true" {
			t.Errorf("the SDK did not use ?beta=true: %s", raw.Request.URL)
		}
	}
}

func TestMessagesSDKErrors(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	_, err := messagesClient(h, clientKey).Messages.New(context.Background(), userText("claude-nope", "hi"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown alias: err = %v, want 404", err)
	}
	for _, want := range []string{"not_found_error", "NotFoundError:", `\"claude-nope\"`, "model_list"} {
		if !strings.Contains(apiErr.RawJSON(), want) {
			t.Errorf("404 body %s lacks %s", apiErr.RawJSON(), want)
		}
	}
	_, err = messagesClient(h, "sk-wrong").Messages.New(context.Background(), userText("claude-opus-5-5", "hi"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || !strings.Contains(apiErr.RawJSON(), "authentication_error") {
		t.Fatalf("wrong key: err = %v, want 401 authentication_error", err)
	}
}

func TestMessagesOffWithoutPassThrough(t *testing.T) {
	h := newHarness(t, harnessOptions{settings: "  enable_vendora_pass_through: false\n"})
	resp := h.post("/v1/messages", `{"model":"local-model","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)
	b := drain(t, resp)
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"type":"error"`) || !strings.Contains(string(b), "enable_vendora_pass_through: true") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// readEvents reads a response body that must end cleanly.
func readEvents(t testing.TB, body io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("the response did not end cleanly: %v\n%s", err, b)
	}
	return b
}

// streamEvents posts a streamed Messages request and returns the events of
// its answer, which must be a 200 that ends cleanly and keeps the stream's
// grammar (ssecheck).
func streamEvents(t *testing.T, h *harness, path, body string) []byte {
	t.Helper()
	resp := h.post(path, body)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events := readEvents(t, resp.Body)
	if err := ssecheck.Check(events); err != nil {
		t.Fatalf("grammar: %v\n%s", err, events)
	}
	return events
}

// streamedText joins the text deltas of a Messages stream.
func streamedText(t *testing.T, events []byte) string {
	t.Helper()
	evs, err := ssecheck.Parse(events)
	if err != nil {
		t.Fatalf("%v\n%s", err, events)
	}
	return ssecheck.Text(evs)
}

func TestMessagesStreamPingsWhileBackendIsSlow(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{FirstTokenDelay: 700 * time.Millisecond}, ping: 100 * time.Millisecond})
	events := streamEvents(t, h, "/v1/messages?beta=true", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	text := string(events)
	firstPing, firstBlock := strings.Index(text, "event: ping"), strings.Index(text, "event: content_block_start")
	if firstPing < 0 || firstBlock < 0 || firstPing > firstBlock {
		t.Errorf("want pings before the first block:\n%s", text)
	}
	if n := strings.Count(text[:firstBlock], "event: ping"); n < 3 {
		t.Errorf("%d pings in 700 ms at a 100 ms interval", n)
	}
	if got := streamedText(t, events); got != "Hello from stub-backend. You said: hi" {
		t.Errorf("streamed text %q", got)
	}
}

func TestMessagesStreamFailsFastWithRealStatus(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{Loading: time.Hour}, extraYAML: "      num_retries: 1\n"})
	resp := h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	b := drain(t, resp)
	if resp.StatusCode != 529 || !strings.Contains(string(b), `"overloaded_error"`) || !strings.Contains(string(b), "Loading model") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if n := len(h.backend.Requests()); n != 2 {
		t.Errorf("backend saw %d requests, want 2 (1 + 1 retry)", n)
	}
}

func TestMessagesClientHangUpCancelsBackend(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{Events: 100, EventDelay: 50 * time.Millisecond}})
	resp := h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"a long answer please"}]}`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "text_delta") {
			break
		}
	}
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r := h.backend.Requests(); len(r) == 1 && r[0].Cancelled {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("backend request not cancelled: %+v", h.backend.Requests())
}
