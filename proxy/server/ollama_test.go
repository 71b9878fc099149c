package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// ollamaServer is a stand-in for Ollama (v0.17): it names itself in
// owned_by ("library"), describes its model in POST /api/show with
// model_info's maximum (131,072) and no num_ctx, lists it in GET /api/ps
// with the context it loaded it with (4,096) while loaded, and, as the
// real one, never refuses a prompt that is too long: it keeps the start
// and the tail and answers 200, on /v1/chat/completions and its native
// /v1/messages alike. It counts the prompts over its window it got.
type ollamaServer struct {
	mu     sync.Mutex
	loaded bool
	cut    atomic.Int32 // prompts over the window it silently truncated
	served atomic.Int32
}

const ollamaWindow = 4096

func newOllamaServer(t *testing.T) (*ollamaServer, string) {
	o := &ollamaServer{loaded: true}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return o, srv.URL
}

func (o *ollamaServer) unload() {
	o.mu.Lock()
	o.loaded = false
	o.mu.Unlock()
}

func (o *ollamaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch r.URL.Path {
	case "/v1/models":
		io.WriteString(w, `{"object":"list","data":[{"id":"rigged:latest","object":"model","created":1796150000,"owned_by":"library"}]}`)
		return
	case "/api/show":
		io.WriteString(w, `{"modelfile":"FROM rigged","parameters":"stop \"<|im_end|>\"","template":"{{ .Prompt }}","details":{"format":"gguf","family":"llama"},"model_info":{"general.architecture":"llama","llama.context_length":131072},"capabilities":["completion","tools"]}`)
		return
	case "/api/ps":
		o.mu.Lock()
		loaded := o.loaded
		o.mu.Unlock()
		if !loaded {
			io.WriteString(w, `{"models":[]}`)
			return
		}
		fmt.Fprintf(w, `{"models":[{"name":"rigged:latest","model":"rigged:latest","size":1000,"digest":"d","details":{"format":"gguf"},"expires_at":"2026-12-01T22:00:00Z","size_vram":0,"context_length":%d}]}`, ollamaWindow)
		return
	case "/v1/chat/completions", "/v1/messages":
	default:
		w.WriteHeader(404)
		io.WriteString(w, `{"error":"404 page not found"}`)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	o.served.Add(1)
	if len(raw)/4 > ollamaWindow {
		o.cut.Add(1) // "truncating input prompt limit=4096 prompt=… keep=4 new=4096"
	}
	var body struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(raw, &body)
	switch {
	case r.URL.Path == "/v1/messages" && body.Stream:
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_o","type":"message","role":"assistant","model":"rigged:latest","content":[],"stop_reason":null,"usage":{"input_tokens":4096,"output_tokens":0}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"an answer from a cut prompt"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":6}}`,
			`{"type":"message_stop"}`,
		} {
			var typ struct{ Type string }
			json.Unmarshal([]byte(ev), &typ)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, ev)
		}
	case r.URL.Path == "/v1/messages":
		io.WriteString(w, `{"id":"msg_o","type":"message","role":"assistant","model":"rigged:latest","content":[{"type":"text","text":"an answer from a cut prompt"}],"stop_reason":"end_turn","usage":{"input_tokens":4096,"output_tokens":6}}`)
	case body.Stream:
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"rigged:latest\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"an answer from a cut prompt\"},\"finish_reason\":null}]}\n\n"+
			"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"rigged:latest\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	default:
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"rigged:latest","choices":[{"index":0,"message":{"role":"assistant","content":"an answer from a cut prompt"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4096,"completion_tokens":6,"total_tokens":4102}}`)
	}
}

func ollamaRoutes(url string) string {
	p := func(prefix string) string {
		return "      model: " + prefix + "rigged\n      api_base: " + url + "/v1\n      api_key: none\n"
	}
	return "model_list:\n" +
		"  - model_name: ollama-b\n    proxy_params:\n" + p("vendorb/") +
		"  - model_name: ollama-a\n    proxy_params:\n" + p("vendora/")
}

// TestOllamaPromptOverTheLoadedWindowRefused: against an Ollama that cuts
// a prompt over its loaded window instead of refusing it, discovery takes
// the window from /api/ps (4,096, not model_info's 131,072), and a prompt
// over it is refused with the client's overflow words on every endpoint
// (Messages, Chat, Responses; streamed and not) and both backend kinds
// (vendorb/, vendora/), before the model's unload and after it (the
// window kept, never falling back to the model's maximum); the backend
// never sees one. A prompt that fits is answered.
func TestOllamaPromptOverTheLoadedWindowRefused(t *testing.T) {
	o, url := newOllamaServer(t)
	h := newHarness(t, harnessOptions{routesYAML: ollamaRoutes(url)})
	long := proseOf(6000)
	requests := func(alias, text string) []struct{ path, body string } {
		var out []struct{ path, body string }
		for _, s := range []string{"false", "true"} {
			out = append(out,
				struct{ path, body string }{"/v1/messages", `{"model":"` + alias + `","max_tokens":1024,"stream":` + s + `,"messages":[{"role":"user","content":"` + text + `"}]}`},
				struct{ path, body string }{"/v1/chat/completions", `{"model":"` + alias + `","max_tokens":1024,"stream":` + s + `,"messages":[{"role":"user","content":"` + text + `"}]}`},
				struct{ path, body string }{"/v1/responses", `{"model":"` + alias + `","max_output_tokens":1024,"stream":` + s + `,"input":"` + text + `"}`})
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		before := o.served.Load()
		for _, alias := range []string{"ollama-b", "ollama-a"} {
			for _, c := range requests(alias, long) {
				status, e, raw := readError(t, h.post(c.path, c.body))
				want := "prompt is too long: "
				if c.path != "/v1/messages" {
					want = "This model's maximum context length is 4096 tokens."
				}
				if status != 400 || !strings.HasPrefix(e.Error.Message, want) || c.path == "/v1/messages" && !strings.HasSuffix(e.Error.Message, " > 4096 maximum") {
					t.Errorf("%s: %s %s: %d %s", when, alias, c.path, status, raw)
				}
			}
		}
		if n := o.served.Load() - before; n != 0 {
			t.Errorf("%s: the backend got %d prompts over its window", when, n)
		}
		for _, alias := range []string{"ollama-b", "ollama-a"} {
			for _, c := range requests(alias, "a short question") {
				resp, b := h.do(http.MethodPost, c.path, c.body, nil, false)
				if resp.StatusCode != 200 || !strings.Contains(string(b), "an answer from a cut prompt") {
					t.Errorf("%s: %s %s, a prompt that fits: %d %s", when, alias, c.path, resp.StatusCode, b)
				}
			}
		}
	}
	h.server.Discover(t.Context())
	if !strings.Contains(h.logs.String(), "context_window=4096") {
		t.Fatalf("discovery did not find the loaded window:\n%s", h.logs.String())
	}
	check("loaded")
	o.unload()
	h.server.Discover(t.Context())
	h.server.Discover(t.Context())
	if !strings.Contains(h.logs.String(), "kept since the model was unloaded") || strings.Contains(h.logs.String(), "context_window=131072") {
		t.Errorf("after the unload, discovery logged:\n%s", h.logs.String())
	}
	check("unloaded")
	if n := o.cut.Load(); n != 0 {
		t.Errorf("the backend cut %d prompts", n)
	}
}
