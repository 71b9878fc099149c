package discover

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseModels(t *testing.T) {
	for _, c := range []struct {
		file, model, server string
		window              int
		ids                 []string
	}{
		{"vllm-models.json", "Qwen/Qwen3-Coder-30B-A3B-Instruct", VLLM, 65536, []string{"Qwen/Qwen3-Coder-30B-A3B-Instruct"}},
		{"sglang-models.json", "Qwen/Qwen2.5-Coder-7B-Instruct", SGLang, 32768, []string{"Qwen/Qwen2.5-Coder-7B-Instruct"}},
		{"llamacpp-models.json", "qwen2.5-coder-7b-instruct-q4_k_m.gguf", LlamaCpp, 0, []string{"qwen2.5-coder-7b-instruct-q4_k_m.gguf"}},
		{"ollama-models.json", "qwen3-coder:30b", Ollama, 0, []string{"qwen3-coder:30b", "llama3.2-vision:11b"}},
		{"lmstudio-openai-models.json", "qwen/qwen3-coder-30b", LMStudio, 0, []string{"qwen/qwen3-coder-30b", "text-embedding-nomic-embed-text-v1.5"}},
		// Another model's max_model_len is not this one's.
		{"vllm-models.json", "other", VLLM, 0, []string{"Qwen/Qwen3-Coder-30B-A3B-Instruct"}},
	} {
		l, err := ParseModels(fixture(t, c.file), c.model)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if l.Server != c.server || l.MaxModelLen != c.window || !slices.Equal(l.IDs, c.ids) {
			t.Errorf("%s: %+v, want %s %d %v", c.file, l, c.server, c.window, c.ids)
		}
	}
	if _, err := ParseModels([]byte(`<html>`), "m"); err == nil {
		t.Error("HTML taken for a model list")
	}
}

func TestParseLlamaProps(t *testing.T) {
	window, vision, err := ParseLlamaProps(fixture(t, "llamacpp-props.json"))
	if err != nil || window != 8192 || vision != No {
		t.Errorf("%d %v %v", window, vision, err)
	}
	if _, _, err := ParseLlamaProps(fixture(t, "vllm-models.json")); err == nil {
		t.Error("a model list taken for llama.cpp's props")
	}
}

func TestParseOllama(t *testing.T) {
	window, found, err := ParseOllamaPS(fixture(t, "ollama-ps.json"), "qwen3-coder:30b")
	if err != nil || !found || window != 16384 {
		t.Errorf("ps: %d %v %v", window, found, err)
	}
	if _, found, _ := ParseOllamaPS(fixture(t, "ollama-ps.json"), "llama3.2-vision:11b"); found {
		t.Error("ps: a model not loaded was found")
	}
	show, err := ParseOllamaShow(fixture(t, "ollama-show.json"))
	if err != nil || show != (OllamaShow{NumCtx: 32768, Trained: 262144, Vision: No, Tools: Yes}) {
		t.Errorf("show: %+v %v", show, err)
	}
	show, err = ParseOllamaShow(fixture(t, "ollama-show-vision.json"))
	if err != nil || show != (OllamaShow{NumCtx: 0, Trained: 131072, Vision: Yes, Tools: No}) {
		t.Errorf("show vision: %+v %v", show, err)
	}
	if _, err := ParseOllamaShow(fixture(t, "llamacpp-props.json")); err == nil {
		t.Error("llama.cpp's props taken for Ollama's show")
	}
	if !sameOllamaModel("qwen3", "qwen3:latest") || sameOllamaModel("qwen3:8b", "qwen3") {
		t.Error("name:latest")
	}
}

func TestParseLMStudio(t *testing.T) {
	m, found, err := ParseLMStudioV1(fixture(t, "lmstudio-v1-models.json"), "qwen/qwen3-coder-30b")
	if err != nil || !found || m != (LMStudioModel{Loaded: 24576, Max: 262144, Vision: No}) {
		t.Errorf("v1: %+v %v %v", m, found, err)
	}
	m, found, err = ParseLMStudioV1(fixture(t, "lmstudio-v1-models.json"), "text-embedding-nomic-embed-text-v1.5")
	if err != nil || !found || m.Loaded != 0 || m.Max != 2048 {
		t.Errorf("v1 not loaded: %+v %v %v", m, found, err)
	}
	m, found, err = ParseLMStudioV0(fixture(t, "lmstudio-v0-models.json"), "qwen/qwen3-coder-30b")
	if err != nil || !found || m != (LMStudioModel{Loaded: 24576, Max: 262144, Vision: No}) {
		t.Errorf("v0: %+v %v %v", m, found, err)
	}
	m, found, err = ParseLMStudioV0(fixture(t, "lmstudio-v0-models.json"), "qwen2-vl-7b-instruct")
	if err != nil || !found || m != (LMStudioModel{Max: 32768, Vision: Yes}) {
		t.Errorf("v0 vlm: %+v %v %v", m, found, err)
	}
	if _, _, err := ParseLMStudioV1(fixture(t, "lmstudio-v0-models.json"), "x"); err == nil {
		t.Error("v0 list taken for v1")
	}
	if _, _, err := ParseLMStudioV0(fixture(t, "vllm-models.json"), "x"); err != nil {
		t.Errorf("v0 parser on a plain list: %v (a data list without the asked model is not an error)", err)
	}
}

// fakeServer answers the given paths with recorded bodies; any other path
// is a 404, as on the real servers.
func fakeServer(t *testing.T, key string, routes map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"invalid api key","type":"invalid_request_error"}}`))
			return
		}
		name, ok := routes[r.Method+" "+r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(fixture(t, name))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestProbeEachServer(t *testing.T) {
	for _, c := range []struct {
		name, model string
		routes      map[string]string
		want        Info
	}{
		{"vLLM", "Qwen/Qwen3-Coder-30B-A3B-Instruct", map[string]string{"GET /v1/models": "vllm-models.json"},
			Info{Server: VLLM, ContextWindow: 65536, WindowSource: "GET /v1/models max_model_len"}},
		{"SGLang", "Qwen/Qwen2.5-Coder-7B-Instruct", map[string]string{"GET /v1/models": "sglang-models.json"},
			Info{Server: SGLang, ContextWindow: 32768, WindowSource: "GET /v1/models max_model_len"}},
		{"llama.cpp", "qwen2.5-coder-7b-instruct-q4_k_m.gguf", map[string]string{"GET /v1/models": "llamacpp-models.json", "GET /props": "llamacpp-props.json"},
			Info{Server: LlamaCpp, ContextWindow: 8192, WindowSource: "GET /props default_generation_settings.n_ctx", Vision: No}},
		{"Ollama loaded", "qwen3-coder:30b", map[string]string{"GET /v1/models": "ollama-models.json", "POST /api/show": "ollama-show.json", "GET /api/ps": "ollama-ps.json"},
			Info{Server: Ollama, ContextWindow: 16384, WindowSource: "GET /api/ps context_length", Vision: No}},
		{"Ollama not loaded", "qwen2.5vl:7b", map[string]string{"GET /v1/models": "ollama-models.json", "POST /api/show": "ollama-show-vision.json"},
			Info{Server: Ollama, WindowSource: SourceOllamaNotLoaded, Vision: Yes}},
		{"Ollama num_ctx", "qwen3-coder:30b", map[string]string{"GET /v1/models": "ollama-models.json", "POST /api/show": "ollama-show.json"},
			Info{Server: Ollama, ContextWindow: 32768, WindowSource: "POST /api/show parameters num_ctx", Vision: No}},
		{"LM Studio v1", "qwen/qwen3-coder-30b", map[string]string{"GET /v1/models": "lmstudio-openai-models.json", "GET /api/v1/models": "lmstudio-v1-models.json"},
			Info{Server: LMStudio, ContextWindow: 24576, WindowSource: "GET /api/v1/models loaded context length", Vision: No}},
		{"LM Studio v0", "qwen/qwen3-coder-30b", map[string]string{"GET /v1/models": "lmstudio-openai-models.json", "GET /api/v0/models": "lmstudio-v0-models.json"},
			Info{Server: LMStudio, ContextWindow: 24576, WindowSource: "GET /api/v0/models loaded context length", Vision: No}},
		// A server that names nothing: unknown stays unknown.
		{"unknown", "m", map[string]string{"GET /v1/models": "lmstudio-openai-models.json"},
			Info{Server: LMStudio}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := fakeServer(t, "sk-b", c.routes)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			info, err := Probe(ctx, nil, srv.URL+"/v1", "sk-b", c.model)
			if err != nil {
				t.Fatal(err)
			}
			info.Models = nil
			if !reflect.DeepEqual(info, c.want) {
				t.Errorf("%+v\nwant %+v", info, c.want)
			}
		})
	}
}

func TestProbeFailures(t *testing.T) {
	srv := fakeServer(t, "sk-b", map[string]string{"GET /v1/models": "vllm-models.json"})
	_, err := Probe(context.Background(), nil, srv.URL+"/v1", "wrong", "m")
	var he *HTTPError
	if !errors.As(err, &he) || he.Status != 401 || he.Path != "/v1/models" {
		t.Errorf("wrong key: %v", err)
	}
	srv.Close()
	if _, err := Probe(context.Background(), nil, srv.URL+"/v1", "sk-b", "m"); err == nil || errors.As(err, &he) {
		t.Errorf("down backend: %v", err)
	}
}

// TestKeepOllamaWindowAfterUnload: the window read from /api/ps while
// the model was loaded stays after the keep-alive unloads it, through
// every later round; it never becomes model_info's maximum.
func TestKeepOllamaWindowAfterUnload(t *testing.T) {
	loaded := Info{Server: Ollama, ContextWindow: 4096, WindowSource: SourceOllamaPS}
	unloaded := Info{Server: Ollama, WindowSource: SourceOllamaNotLoaded}
	kept := Keep(loaded, unloaded)
	if kept.ContextWindow != 4096 || kept.WindowSource != SourceOllamaPSKept {
		t.Fatalf("after the unload: %+v", kept)
	}
	if again := Keep(kept, unloaded); !reflect.DeepEqual(again, kept) {
		t.Errorf("a second round: %+v", again)
	}
	reloaded := Info{Server: Ollama, ContextWindow: 8192, WindowSource: SourceOllamaPS}
	if got := Keep(kept, reloaded); !reflect.DeepEqual(got, reloaded) {
		t.Errorf("loaded again with another context: %+v", got)
	}
	if got := Keep(Info{}, unloaded); !reflect.DeepEqual(got, unloaded) {
		t.Errorf("never seen loaded: %+v", got)
	}
	other := Info{Server: VLLM, ContextWindow: 0}
	if got := Keep(loaded, other); !reflect.DeepEqual(got, other) {
		t.Errorf("another server: %+v", got)
	}
}
