package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// vllm2026 is a stand-in for a vLLM of 2026 serving one model with a
// window of window tokens: GET /v1/models says max_model_len, and a
// completion request is counted with its own tokenizer (a token per three
// bytes of message text: not the proxy's estimate, about one per four)
// and refused in vLLM's 2026 wording when the prompt and max_tokens do
// not fit together, or in its input wording when the prompt alone does
// not. With streamErrors, a stream's refusal comes as a 200 whose first
// chunk is the error (as LM Studio sends its overflow).
type vllm2026 struct {
	window       int
	streamErrors bool
	// toolBytes is how many bytes of the tools' JSON its tokenizer makes
	// one token (0: 3, as the messages').
	toolBytes int
	// tokenizer: it serves vLLM's /tokenize (else 404: the proxy then
	// relies on its estimate and on refit).
	tokenizer bool

	mu        sync.Mutex
	asked     []int // max_tokens of each completion request
	refused   int
	answered  int
	tokenized int // /tokenize calls
}

func newVLLM2026(t *testing.T, window int) (*vllm2026, string) {
	v := &vllm2026{window: window}
	srv := httptest.NewServer(v)
	t.Cleanup(srv.Close)
	return v, srv.URL + "/v1"
}

func (v *vllm2026) count(body map[string]any) int {
	n := 0
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		b, _ := json.Marshal(m.(map[string]any)["content"])
		n += len(b)/3 + 6
	}
	if tools, ok := body["tools"]; ok {
		b, _ := json.Marshal(tools)
		n += len(b) / max(v.toolBytes, 3)
	}
	return n
}

func (v *vllm2026) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/tokenize" && !v.tokenizer {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if r.URL.Path == "/tokenize" {
		// vLLM's tokenizer: {"model","prompt"} → {"count"}; it counts
		// every byte as a message's (tools' JSON too: more than the chat
		// endpoint counts them, never less).
		var req struct {
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		v.mu.Lock()
		v.tokenized++
		v.mu.Unlock()
		fmt.Fprintf(w, `{"count":%d,"max_model_len":%d,"tokens":[]}`, len(req.Prompt)/3, v.window)
		return
	}
	if r.URL.Path == "/v1/models" {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"qwen3-coder","object":"model","owned_by":"vllm","max_model_len":%d}]}`, v.window)
		return
	}
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	json.Unmarshal(raw, &body)
	prompt := v.count(body)
	maxTokens := 0
	if n, ok := body["max_tokens"].(float64); ok {
		maxTokens = int(n)
	}
	stream, _ := body["stream"].(bool)
	v.mu.Lock()
	v.asked = append(v.asked, maxTokens)
	var refusal string
	switch {
	case prompt >= v.window:
		refusal = fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. None", v.window, prompt)
	case prompt+maxTokens > v.window:
		refusal = fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens.", v.window, maxTokens, prompt, prompt+maxTokens)
	}
	if refusal != "" {
		v.refused++
	} else {
		v.answered++
	}
	v.mu.Unlock()
	errBody, _ := json.Marshal(map[string]any{"error": map[string]any{"message": refusal, "type": "BadRequestError", "param": nil, "code": 400}})
	switch {
	case refusal != "" && stream && v.streamErrors:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", errBody)
	case refusal != "":
		w.WriteHeader(400)
		w.Write(errBody)
	case stream:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"the summary\"}}]}\n\n")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":3,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", prompt, prompt+3)
	default:
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"the summary"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":3,"total_tokens":%d}}`, prompt, prompt+3)
	}
}

func (v *vllm2026) stats() ([]int, int, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]int(nil), v.asked...), v.refused, v.answered
}

func vllmRoutes(base string) string {
	return "model_list:\n  - model_name: local-model\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: " + base + "\n      api_key: none\n      name: vllm\n"
}

// TestRetryWithAMaxTokensThatFits: the proxy's estimate of the prompt is
// lower than the backend's count, so the max_tokens it clamps to does not
// fit beside the prompt; the backend says so in vLLM's 2026 wording with
// its numbers, and the proxy sends the request once more at once, before
// the client saw a byte, with max_tokens = window - prompt - margin, on
// every endpoint, streamed or not, the refusal as a status or as the
// first chunk of a stream. Each retry is counted in
// dragoman_backend_retries_total{reason="max_tokens"}.
func TestRetryWithAMaxTokensThatFits(t *testing.T) {
	const window = 8192
	prompt := proseOf(4000)
	for _, streamErrors := range []bool{false, true} {
		for _, c := range []struct{ path, body string }{
			{"/v1/messages", windowMessages(prompt, "32000", false)},
			{"/v1/messages", windowMessages(prompt, "32000", true)},
			{"/v1/chat/completions", windowChat(prompt, "32000", false)},
			{"/v1/chat/completions", windowChat(prompt, "32000", true)},
			{"/v1/responses", `{"model":"local-model","max_output_tokens":32000,"input":"` + prompt + `"}`},
			{"/v1/responses", `{"model":"local-model","max_output_tokens":32000,"stream":true,"input":"` + prompt + `"}`},
		} {
			// A proxy of its own each: one that learnt the backend's
			// counts would fit at the first attempt.
			v, base := newVLLM2026(t, window)
			v.streamErrors = streamErrors
			h := newHarness(t, harnessOptions{routesYAML: vllmRoutes(base), metrics: true})
			h.server.Discover(t.Context())
			what := fmt.Sprintf("stream errors %v, %s %s", streamErrors, c.path, c.body[len(c.body)-20:])
			resp, b := h.do(http.MethodPost, c.path, c.body, nil, false)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "the summary") || strings.Contains(string(b), "event: error") || strings.Contains(string(b), "response.failed") {
				t.Errorf("%s: %d %s", what, resp.StatusCode, b)
			}
			asked, refused, answered := v.stats()
			if refused != 1 || answered != 1 || len(asked) != 2 || asked[1] >= asked[0] || asked[1] < 1500 {
				t.Errorf("%s: backend refused %d and answered %d (max_tokens asked: %v): want one refusal, then what the window leaves beside the backend's count", what, refused, answered, asked)
			}
			mfs := scrape(t, h.proxy.URL)
			if got := series(mfs, "dragoman_backend_retries_total")["backend=vllm,reason=max_tokens"]; got != 1 {
				t.Errorf("%s: dragoman_backend_retries_total{backend=vllm,reason=max_tokens} = %v, want 1", what, got)
			}
			if !strings.Contains(h.logs.String(), "sent again with what fits") {
				t.Errorf("%s: the retry is not logged:\n%s", what, h.logs.String())
			}
		}
	}
}

// TestCompactionAgainstAStrictBackend is the coding client's compaction
// against vLLM (2026) with a 19,500-token window that counts the prompt
// higher than the proxy's estimate: its turns grow until the client
// compacts, sending its summary request (the shape of Claude Code's: the
// conversation so far, then the instruction to summarize it, max_tokens
// 20000). The backend refuses a max_tokens the proxy clamped from its
// estimate, in its 2026 wording, and the proxy's retry is answered; from
// the prompt counts the backend reports the proxy learns to fit at the
// first attempt. No request is refused for overflow, the summary gets at
// least 2,000 tokens of room, and the session goes on after it.
func TestCompactionAgainstAStrictBackend(t *testing.T) {
	const window = 19500
	v, base := newVLLM2026(t, window)
	h := newHarness(t, harnessOptions{routesYAML: vllmRoutes(base)})
	h.server.Discover(t.Context())
	summary := compactionRequest(t)
	// The conversation: each turn a user message with a long tool result
	// and the assistant's answer, until the backend counts it at ~16,300
	// tokens (the proxy estimates ~13,500).
	var history []any
	turn := func(i int) []any {
		return []any{
			map[string]any{"role": "user", "content": fmt.Sprintf("step %d: read the next file. ", i) + proseOf(900)},
			map[string]any{"role": "assistant", "content": fmt.Sprintf("Read it; step %d done. ", i) + proseOf(300)},
		}
	}
	post := func(msgs []any, maxTokens int) (int, string) {
		body := map[string]any{"model": "local-model", "max_tokens": maxTokens, "stream": true, "system": summary["system"], "messages": msgs}
		b, _ := json.Marshal(body)
		resp, out := h.do(http.MethodPost, "/v1/messages", string(b), []string{"anthropic-version", "2023-06-01"}, false)
		return resp.StatusCode, string(out)
	}
	for i := 0; i < 9; i++ {
		history = append(history, turn(i)...)
		status, out := post(append(append([]any(nil), history...), map[string]any{"role": "user", "content": "go on"}), 32000)
		if status != 200 || strings.Contains(out, "prompt is too long") {
			t.Fatalf("turn %d: %d %s", i, status, out)
		}
	}
	// The summary request: the conversation, then the instruction.
	msgs, _ := summary["messages"].([]any)
	instruction := msgs[len(msgs)-1]
	status, out := post(append(append([]any(nil), history...), instruction), int(summary["max_tokens"].(float64)))
	if status != 200 || !strings.Contains(out, "the summary") || strings.Contains(out, "event: error") {
		t.Fatalf("summary request: %d %s", status, out)
	}
	asked, refused, answered := v.stats()
	last := asked[len(asked)-1]
	if refused == 0 || last < 2000 {
		t.Errorf("the summary went with max_tokens %d (the backend refused %d requests): want a refusal answered by the retry, and room for the summary", last, refused)
	}
	// The session goes on after the summary.
	status, out = post([]any{map[string]any{"role": "user", "content": "This session is being continued from a previous conversation. Summary: the summary"}, map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": "go on"}}, 32000)
	if status != 200 || !strings.Contains(out, "the summary") {
		t.Errorf("after the summary: %d %s", status, out)
	}
	t.Logf("%d answered, %d refused and sent again; max_tokens asked: %v", answered, refused, asked)
}

// TestEstimateCorrectedByTheBackendsCounts: a backend whose tokenizer
// counts a third more than the proxy's estimate refuses the first
// max_tokens the proxy clamps to; from the prompt_tokens it reports, the
// proxy learns the ratio, and the next requests' first attempts fit.
func TestEstimateCorrectedByTheBackendsCounts(t *testing.T) {
	v, base := newVLLM2026(t, 8192)
	h := newHarness(t, harnessOptions{routesYAML: vllmRoutes(base)})
	h.server.Discover(t.Context())
	for i := 0; i < 4; i++ {
		resp, b := h.do(http.MethodPost, "/v1/messages", windowMessages(fmt.Sprintf("turn %d ", i)+proseOf(4000), "32000", false), nil, false)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
	asked, refused, answered := v.stats()
	if refused != 1 || answered != 4 {
		t.Errorf("refused %d, answered %d (max_tokens asked %v): want only the first refused", refused, answered, asked)
	}
}

// compactionRequest is the compaction summary request Claude Code sends
// (testdata/compaction-request.json), decoded.
func compactionRequest(t *testing.T) map[string]any {
	t.Helper()
	compact, err := os.ReadFile("testdata/compaction-request.json")
	if err != nil {
		t.Fatal(err)
	}
	var summary map[string]any
	if err := json.Unmarshal(compact, &summary); err != nil {
		t.Fatal(err)
	}
	return summary
}
