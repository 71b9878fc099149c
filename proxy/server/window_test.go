package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// proseOf is about n tokens of English prose (a token per 4.4 bytes).
func proseOf(n int) string {
	return strings.Repeat("the quick brown fox jumps over the lazy dog ", n/10)
}

func windowMessages(text string, maxTokens string, stream bool) string {
	s := "false"
	if stream {
		s = "true"
	}
	return `{"model":"local-model","max_tokens":` + maxTokens + `,"stream":` + s + `,"messages":[{"role":"user","content":"` + text + `"}]}`
}

func windowChat(text string, maxTokens string, stream bool) string {
	s := "false"
	if stream {
		s = "true"
	}
	return `{"model":"local-model","max_tokens":` + maxTokens + `,"stream":` + s + `,"messages":[{"role":"user","content":"` + text + `"}]}`
}

// TestWindowClampFromDiscovery: a backend with an 8,192-token window (it
// says so in GET /v1/models, as vLLM does, and refuses what does not fit,
// as vLLM does) and clients asking for 128,000 output tokens: once the
// proxy has discovered the window, every request is one the backend
// accepts.
func TestWindowClampFromDiscovery(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{ContextWindow: 8192, Model: "qwen3-coder"}})
	prompt := proseOf(4000)

	// Before discovery the backend refuses max_tokens beside the prompt,
	// naming both: the proxy sends the request again at once with what
	// fits, and the client gets its answer.
	resp, b := h.do(http.MethodPost, "/v1/messages", windowMessages(prompt, "128000", false), nil, false)
	if resp.StatusCode != 200 {
		t.Fatalf("before discovery: %d %s", resp.StatusCode, b)
	}
	if reqs := h.backendRequests(); len(reqs) != 2 || reqs[0]["max_tokens"].(float64) != 128000 || reqs[1]["max_tokens"].(float64) >= 8192-3600 {
		t.Fatalf("before discovery: the backend saw %v", reqs)
	}

	h.server.Discover(context.Background())
	if !strings.Contains(h.logs.String(), "context_window=8192") {
		t.Errorf("discovery did not log the window:\n%s", h.logs.String())
	}
	h.backend.Reset()
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", windowMessages(prompt, "128000", false)},
		{"/v1/messages", windowMessages(prompt, "128000", true)},
		{"/v1/chat/completions", windowChat(prompt, "128000", false)},
		{"/v1/chat/completions", windowChat(prompt, "128000", true)},
	} {
		resp := h.post(c.path, c.body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), "error") {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, b)
		}
	}
	reqs := h.backendRequests()
	if len(reqs) != 4 {
		t.Fatalf("backend saw %d requests, want 4", len(reqs))
	}
	for _, r := range reqs {
		got := int(r["max_tokens"].(float64))
		if got >= 8192-4000 || got < 2000 {
			t.Errorf("max_tokens sent %d: want it clamped to what 8192 leaves beside a 4000-token prompt", got)
		}
	}
}

// TestWindowRefusesAPromptThatCannotFit answers locally, without calling
// the backend, on both endpoints, streamed or not.
func TestWindowRefusesAPromptThatCannotFit(t *testing.T) {
	h := newHarness(t, harnessOptions{extraYAML: "      context_window: 2048\n"})
	prompt := proseOf(4000)
	for _, stream := range []bool{false, true} {
		status, e, raw := readError(t, h.post("/v1/messages", windowMessages(prompt, "100", stream)))
		if status != 400 || e.Error.Type != "invalid_request_error" || !strings.HasPrefix(e.Error.Message, "prompt is too long: ") || !strings.HasSuffix(e.Error.Message, " tokens > 2048 maximum") {
			t.Errorf("messages stream=%v: %d %s", stream, status, raw)
		}
		status, e, raw = readError(t, h.post("/v1/chat/completions", windowChat(prompt, "100", stream)))
		if status != 400 || e.Error.Code != "context_length_exceeded" || !strings.HasPrefix(e.Error.Message, "This model's maximum context length is 2048 tokens. However, your messages resulted in ") {
			t.Errorf("chat stream=%v: %d %s", stream, status, raw)
		}
	}
	if n := len(h.backendRequests()); n != 0 {
		t.Errorf("the backend was called %d times for prompts that cannot fit", n)
	}
}

// TestWindowConfiguredWinsAndMaxOutputTokens: proxy_params.context_window
// needs no discovery; max_output_tokens, when set, is the clamp.
func TestWindowConfiguredWinsAndMaxOutputTokens(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{ContextWindow: 8192, Model: "qwen3-coder"}, extraYAML: "      context_window: 8192\n"})
	resp := h.post("/v1/messages", windowMessages(proseOf(4000), "128000", false))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	h2 := newHarness(t, harnessOptions{stub: stub.Options{ContextWindow: 8192, Model: "qwen3-coder"}, extraYAML: "      context_window: 8192\n      max_output_tokens: 1000\n"})
	resp = h2.post("/v1/messages", windowMessages(proseOf(4000), "128000", false))
	resp.Body.Close()
	if reqs := h2.backendRequests(); len(reqs) != 1 || reqs[0]["max_tokens"].(float64) != 1000 {
		t.Errorf("max_output_tokens did not win: %v", reqs)
	}
}

func TestSupportsVisionFalse(t *testing.T) {
	h := newHarness(t, harnessOptions{extraYAML: "      supports_vision: false\n"})
	resp := h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	got := string(h.backend.Requests()[0].Body)
	if strings.Contains(got, "image_url") || !strings.Contains(got, translate.ImagePlaceholder) {
		t.Errorf("backend got %s", got)
	}
}
