package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func chatClient(h *harness, key string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(h.proxy.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

func chatParams(model, text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:     model,
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		MaxTokens: openai.Int(64),
	}
}

func TestChatSDKNonStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client := chatClient(h, clientKey)
	for _, alias := range []string{"claude-opus-5-5", "local-model"} {
		resp, err := client.Chat.Completions.New(t.Context(), chatParams(alias, "hello there"))
		if err != nil {
			t.Fatalf("%s: %v", alias, err)
		}
		if resp.Model != alias {
			t.Errorf("client saw model %q, want the alias %q", resp.Model, alias)
		}
		if got := resp.Choices[0].Message.Content; !strings.Contains(got, "You said: hello there") {
			t.Errorf("content = %q", got)
		}
		if resp.Usage.PromptTokens == 0 {
			t.Error("usage missing")
		}
	}
	reqs := h.backendRequests()
	if len(reqs) != 2 {
		t.Fatalf("backend got %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		if r["model"] != "qwen3-coder" {
			t.Errorf("backend got model %v, want the backend model qwen3-coder", r["model"])
		}
		if r["max_tokens"] != float64(64) {
			t.Errorf("max_tokens = %v", r["max_tokens"])
		}
	}
}

func TestChatSDKStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client := chatClient(h, clientKey)
	params := chatParams("claude-opus-5-5", "stream please")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(t.Context(), params)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		c := stream.Current()
		if c.Model != "claude-opus-5-5" {
			t.Errorf("chunk model %q, want the alias", c.Model)
		}
		acc.AddChunk(c)
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 4 {
		t.Errorf("only %d chunks: the stream was not relayed event by event", chunks)
	}
	if got := acc.Choices[0].Message.Content; got != "Hello from stub-backend. You said: stream please" {
		t.Errorf("accumulated %q", got)
	}
	if acc.Usage.TotalTokens == 0 {
		t.Error("no usage chunk")
	}
	if reqs := h.backendRequests(); len(reqs) != 1 || reqs[0]["model"] != "qwen3-coder" || reqs[0]["stream"] != true {
		t.Errorf("backend requests = %v", reqs)
	}
}

func TestChatSDKToolCall(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client := chatClient(h, clientKey)
	params := chatParams("local-model", "stub:tool list files")
	params.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
		Name:       "Bash",
		Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}},
	})}
	resp, err := client.Chat.Completions.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "Bash" || calls[0].Function.Arguments != `{"command": "stub-command"}` {
		t.Errorf("tool calls = %+v", calls)
	}
}

func TestChatSDKUnknownAlias(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client := chatClient(h, clientKey)
	_, err := client.Chat.Completions.New(t.Context(), chatParams("gpt-nope", "hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want an API error", err)
	}
	if apiErr.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", apiErr.StatusCode)
	}
	for _, want := range []string{"NotFoundError:", `"gpt-nope"`, "claude-opus-5-5, local-model", "model_list"} {
		if !strings.Contains(apiErr.Message, want) {
			t.Errorf("message %q lacks %q", apiErr.Message, want)
		}
	}
	if apiErr.Type != "not_found_error" {
		t.Errorf("type = %q", apiErr.Type)
	}
	if n := len(h.backendRequests()); n != 0 {
		t.Errorf("backend got %d requests for an unknown alias", n)
	}
}

func TestChatSDKWrongKey(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client := chatClient(h, "sk-wrong")
	_, err := client.Chat.Completions.New(t.Context(), chatParams("local-model", "hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || apiErr.Type != "authentication_error" {
		t.Fatalf("err = %v, want 401 authentication_error", err)
	}
}

func TestChatKeyHeaders(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	body := `{"model":"local-model","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name   string
		header []string
		status int
	}{
		{"x-api-key", []string{"Authorization", "", "x-api-key", clientKey}, 200},
		{"bearer", nil, 200},
		{"no key", []string{"Authorization", ""}, 401},
		{"basic scheme", []string{"Authorization", "Basic " + clientKey}, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := h.do(http.MethodPost, "/v1/chat/completions", body, tc.header, false)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	// The client's key never reaches the backend.
	for _, r := range h.backend.Requests() {
		if strings.Contains(r.Header.Get("Authorization"), clientKey) || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("client key forwarded: %v", r.Header)
		}
	}
}

func TestChatSystemFoldedWithoutSystemRole(t *testing.T) {
	h := newHarness(t, harnessOptions{extraYAML: "      supports_system_message: false\n"})
	body := `{"model":"local-model","max_tokens":8,"messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"first"}]},
		{"role":"system","content":[{"type":"text","text":"mid-list rule"}]},
		{"role":"user","content":"second"}]}`
	resp := h.post("/v1/chat/completions", body)
	drain(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 {
		t.Fatalf("backend got %d requests", len(reqs))
	}
	msgs := reqs[0]["messages"].([]any)
	var all strings.Builder
	for i, m := range msgs {
		mm := m.(map[string]any)
		if mm["role"] == "system" || mm["role"] == "developer" {
			t.Errorf("message %d has role %v", i, mm["role"])
		}
		if i > 0 && msgs[i-1].(map[string]any)["role"] == mm["role"] {
			t.Errorf("messages %d and %d share role %v: not merged", i-1, i, mm["role"])
		}
		b, _ := json.Marshal(mm["content"])
		all.Write(b)
	}
	for _, want := range []string{"be brief", "first", "mid-list rule", "second"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("backend messages lack %q: %s", want, all.String())
		}
	}
}

func TestModelsAndProbes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	client := chatClient(h, clientKey)
	page, err := client.Models.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "claude-opus-5-5,local-model" {
		t.Errorf("models = %v", ids)
	}
	for _, probe := range []struct{ method, path string }{{"HEAD", "/"}, {"HEAD", "/api/hello"}, {"GET", "/healthz"}, {"GET", "/readyz"}} {
		req, _ := http.NewRequest(probe.method, h.proxy.URL+probe.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s %s = %d", probe.method, probe.path, resp.StatusCode)
		}
	}
}

// Aliases are listed as JSON strings: a control character, a quote or a
// non-ASCII letter in an alias still gives valid JSON with the alias as it
// is (strconv.Quote wrote \x01, which JSON does not have).
func TestModelsQuotesAliasesAsJSON(t *testing.T) {
	alias := "odd\x01\"é\u2028model"
	params := "    proxy_params:\n      model: vendorb/m\n      api_base: http://127.0.0.1:9/v1\n      api_key: k\n"
	h := newHarness(t, harnessOptions{routesYAML: "model_list:\n  - model_name: \"odd\\x01\\\"é\\u2028model\"\n" + params + "  - model_name: plain\n" + params})
	// The Messages shape names display_name, first_id, last_id.
	_, body := h.do(http.MethodGet, "/v1/models", "", []string{"anthropic-version", "2023-06-01"}, false)
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
		} `json:"data"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	if len(list.Data) != 2 || list.Data[0].ID != alias || list.Data[0].DisplayName != alias || list.FirstID != alias || list.LastID != "plain" {
		t.Fatalf("models %+v", list)
	}
}
