package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/doctor"
)

// localServer stands in for llama-server b10061 or Ollama v0.17.4 as
// proxy check meets them (their recorded answers in
// shared/recorded/llama-server-b10061 and discover/testdata): which
// models they list, their window, how they take a tool_choice, tool
// schemas and a prompt over the window.
type localServer struct {
	kind   string // "llama.cpp", "Ollama", or "names-ignored": a server that forces the first tool whatever tool_choice names
	window int
}

func (ls localServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/props" && ls.kind == "llama.cpp":
		fmt.Fprintf(w, `{"default_generation_settings":{"n_ctx":%d},"modalities":{"vision":false},"build_info":"b10061-5d5306bf3"}`, ls.window)
	case r.URL.Path == "/v1/models" && ls.kind == "Ollama":
		w.Write([]byte(`{"object":"list","data":[{"id":"rigged:latest","object":"model","created":1796150000,"owned_by":"library"}]}`))
	case r.URL.Path == "/v1/models":
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"models/tiny-random-llama.gguf","object":"model","created":1796151421,"owned_by":%q,"meta":{"n_ctx":%d}}]}`,
			map[string]string{"llama.cpp": "llamacpp"}[ls.kind], ls.window)
	case r.URL.Path == "/api/ps" && ls.kind == "Ollama":
		fmt.Fprintf(w, `{"models":[{"name":"rigged:latest","model":"rigged:latest","size":1,"context_length":%d}]}`, ls.window)
	case r.URL.Path == "/api/show" && ls.kind == "Ollama":
		w.Write([]byte(`{"parameters":"","model_info":{"general.architecture":"llama","llama.context_length":131072},"capabilities":["completion","tools"]}`))
	case r.URL.Path == "/v1/chat/completions":
		ls.complete(w, r)
	default:
		w.WriteHeader(404)
		w.Write([]byte(`{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`))
	}
}

func (ls localServer) complete(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		w.WriteHeader(400)
		return
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	if prompt > ls.window && ls.kind == "llama.cpp" {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"request (%d tokens) exceeds the available context size (%d tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":%d,"n_ctx":%d}}`, prompt, ls.window, prompt, ls.window)
		return
	}
	// Ollama keeps the tail of a prompt over its window and answers.
	if ls.kind == "llama.cpp" && strings.Contains(string(raw), `"maxLength":524288`) {
		w.WriteHeader(400)
		w.Write([]byte(`{"error":{"code":400,"message":"Failed to initialize samplers: failed to parse grammar","type":"invalid_request_error"}}`))
		return
	}
	call := ""
	forced := string(req.ToolChoice) == `"required"` || (ls.kind == "names-ignored" && strings.HasPrefix(string(req.ToolChoice), "{"))
	if forced && len(req.Tools) > 0 {
		call = req.Tools[0].Function.Name // what the tiny model does when forced: the first tool
	}
	msg := `{"role":"assistant","content":""}`
	if call != "" {
		msg = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"` + call + `","arguments":"{\"city\":\"Paris\"}"}}]}`
	}
	if strings.Contains(string(raw), `"stream":true`) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}` + "\n\ndata: [DONE]\n\n"))
		return
	}
	fmt.Fprintf(w, `{"id":"chatcmpl-x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":%s}],"usage":{"prompt_tokens":%d,"completion_tokens":1}}`, msg, prompt)
}

// TestCheckLlamaCpp: against llama-server the model check takes any name
// (it serves one model under any name), the tool probe names the second
// of two tools and sees it called (sent as llama.cpp honours it), the
// coding client's tool schemas compile once rewritten, and
// --probe-overflow reports llama.cpp's wording.
func TestCheckLlamaCpp(t *testing.T) {
	url := serveBackend(t, localServer{kind: "llama.cpp", window: 4096})
	code, text, rep := runCheck(t, "--config", checkConfig(t, url, "tiny", "k"), "--probe-overflow")
	for _, c := range []struct {
		check  string
		status doctor.Status
		detail string
	}{
		{doctor.CheckModel, doctor.OK, "llama-server serves one model (models/tiny-random-llama.gguf) under any name"},
		{doctor.CheckToolCall, doctor.OK, "called the named tool get_weather("},
		{doctor.CheckSchemas, doctor.OK, "rewritten for llama.cpp first"},
		{doctor.CheckOverflow, doctor.OK, "recognized (llama.cpp wording): 400 request ("},
	} {
		if r := result(rep, c.check); r.Status != c.status || !strings.Contains(r.Detail, c.detail) {
			t.Errorf("%s: %+v, want %s %q", c.check, r, c.status, c.detail)
		}
	}
	if code != 0 {
		t.Errorf("exit %d\n%s", code, text)
	}
	t.Logf("\n%s", text)
}

// TestCheckOllama: an Ollama model named without its tag is its :latest,
// and a prompt over its loaded window is answered 200 (Ollama cuts it):
// --probe-overflow says so.
func TestCheckOllama(t *testing.T) {
	url := serveBackend(t, localServer{kind: "Ollama", window: 4096})
	_, text, rep := runCheck(t, "--config", checkConfig(t, url, "rigged", "k"), "--probe-overflow")
	if r := result(rep, doctor.CheckModel); r.Status != doctor.OK || !strings.Contains(r.Detail, "rigged:latest") {
		t.Errorf("model: %+v", r)
	}
	if r := result(rep, doctor.CheckWindow); !strings.Contains(r.Detail, "4096 tokens") {
		t.Errorf("window: %+v", r)
	}
	if r := result(rep, doctor.CheckOverflow); r.Status != doctor.Warn || !strings.Contains(r.Detail, "cuts the prompt instead of refusing it") {
		t.Errorf("overflow: %+v", r)
	}
	t.Logf("\n%s", text)
}

// TestCheckToolProbeNamesATool: a server that forces a call but not of
// the tool named fails the tool probe (a probe that named the only tool
// offered could not tell); without --probe-overflow the overflow check
// says it was not run.
func TestCheckToolProbeNamesATool(t *testing.T) {
	url := serveBackend(t, localServer{kind: "names-ignored", window: 4096})
	_, text, rep := runCheck(t, "--config", checkConfig(t, url, "models/tiny-random-llama.gguf", "k"))
	if r := result(rep, doctor.CheckToolCall); r.Status != doctor.Fail || !strings.Contains(r.Detail, "called get_time instead") {
		t.Errorf("tool_call: %+v\n%s", r, text)
	}
	if r := result(rep, doctor.CheckOverflow); r.Status != doctor.Skip || !strings.Contains(r.Detail, "--probe-overflow") {
		t.Errorf("overflow: %+v", r)
	}
}
