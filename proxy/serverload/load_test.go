package serverload

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseRecorded: each server's recorded /metrics (testdata/README.md
// says where each comes from) gives its running, waiting and KV usage.
func TestParseRecorded(t *testing.T) {
	for _, c := range []struct {
		file, model string
		want        Load
	}{
		// Two engines (data parallel): running and waiting add up, the KV
		// cache is the fullest engine's.
		{"vllm.txt", "meta-llama/Llama-3.1-8B-Instruct", Load{Running: 11, Waiting: 2, KVUsage: 0.9612, Source: SourceVLLM}},
		{"vllm.txt", "Llama-3.1-8B-Instruct", Load{Running: 11, Waiting: 2, KVUsage: 0.9612, Source: SourceVLLM}}, // the path's last element
		{"vllm.txt", "", Load{Running: 11, Waiting: 2, KVUsage: 0.9612, Source: SourceVLLM}},
		{"sglang.txt", "meta-llama/Llama-3.1-8B-Instruct", Load{Running: 162, Waiting: 2826, KVUsage: 0.28, Source: SourceSGLang}},
		{"llamacpp.txt", "any", Load{Running: 2, Waiting: 1, KVUsage: 0.25390625, Source: SourceLlamaMetrics}},
	} {
		got, err := ParseMetrics(read(t, c.file), c.model)
		if err != nil || got != c.want {
			t.Errorf("%s for %q: %+v, %v; want %+v", c.file, c.model, got, err, c.want)
		}
	}
}

// TestParseKeepsTheModelsOwnSeries: a server of two models counts only the
// backend model's series.
func TestParseKeepsTheModelsOwnSeries(t *testing.T) {
	text := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="a"} 4
vllm:num_requests_running{engine="0",model_name="b"} 1
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="a"} 3
vllm:num_requests_waiting{engine="0",model_name="b"} 0
`
	got, err := ParseMetrics([]byte(text), "b")
	if err != nil || got.Running != 1 || got.Waiting != 0 || got.KVUsage != -1 {
		t.Errorf("model b: %+v, %v; want 1 running, none waiting, KV unknown", got, err)
	}
}

// TestParseOldVLLMName: vLLM before 0.10 named the KV gauge
// gpu_cache_usage_perc.
func TestParseOldVLLMName(t *testing.T) {
	text := "vllm:num_requests_running{model_name=\"m\"} 1.0\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"
	if got, err := ParseMetrics([]byte(text), "m"); err != nil || got.KVUsage != 0.5 {
		t.Errorf("%+v, %v", got, err)
	}
}

func TestParseNothingKnown(t *testing.T) {
	for _, text := range []string{
		"# TYPE go_goroutines gauge\ngo_goroutines 12\n", // a server's own Go metrics, no load
		"",
	} {
		if _, err := ParseMetrics([]byte(text), "m"); !errors.Is(err, ErrNoLoad) {
			t.Errorf("%q: %v, want ErrNoLoad", text, err)
		}
	}
	if _, err := ParseMetrics([]byte("<html>not found</html>"), "m"); err == nil || errors.Is(err, ErrNoLoad) {
		t.Errorf("an HTML page: %v, want a parse error", err)
	}
}

func TestParseSlotsRecorded(t *testing.T) {
	got, err := ParseSlots(read(t, "llamacpp-slots.json"))
	if want := (Load{Running: 1, KVUsage: -1, Slots: 2, Source: SourceLlamaSlots}); err != nil || got != want {
		t.Errorf("%+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{`{"error":"slots off"}`, `[{"is_processing":true}]`, `nope`} {
		if _, err := ParseSlots([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestReadAsksWhatTheServerExposes: Read goes to /metrics under the
// api_base's root, then to llama.cpp's /slots when /metrics is off; a
// server that exposes nothing, or is Ollama, gives ErrNoLoad (the
// balancer then counts its own requests in flight).
func TestReadAsksWhatTheServerExposes(t *testing.T) {
	vllm, sglang, llama, slots := read(t, "vllm.txt"), read(t, "sglang.txt"), read(t, "llamacpp.txt"), read(t, "llamacpp-slots.json")
	serve := func(paths map[string][]byte) (*httptest.Server, *[]string) {
		var asked []string
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked = append(asked, r.URL.Path+" "+r.Header.Get("Authorization"))
			if b, ok := paths[r.URL.Path]; ok {
				w.Write(b)
				return
			}
			http.NotFound(w, r)
		}))
		t.Cleanup(s.Close)
		return s, &asked
	}
	for _, c := range []struct {
		name   string
		paths  map[string][]byte
		server string
		want   string // source, or "none"
		asked  string
	}{
		{"vLLM", map[string][]byte{"/metrics": vllm}, "vLLM", SourceVLLM, "/metrics Bearer k"},
		{"SGLang, kind unknown", map[string][]byte{"/metrics": sglang}, "", SourceSGLang, "/metrics Bearer k"},
		{"llama.cpp --metrics", map[string][]byte{"/metrics": llama}, "llama.cpp", SourceLlamaMetrics, "/metrics Bearer k"},
		{"llama.cpp without --metrics", map[string][]byte{"/slots": slots}, "llama.cpp", SourceLlamaSlots, "/metrics Bearer k,/slots Bearer k"},
		{"exposes nothing", map[string][]byte{}, "", "none", "/metrics Bearer k,/slots Bearer k"},
		{"vLLM without load", map[string][]byte{"/metrics": []byte("go_goroutines 3\n")}, "vLLM", "none", "/metrics Bearer k"},
		{"Ollama", map[string][]byte{"/metrics": vllm}, "Ollama", "none", ""},
	} {
		s, asked := serve(c.paths)
		l, err := Read(context.Background(), s.Client(), Target{APIBase: s.URL + "/v1", APIKey: "k", Model: "meta-llama/Llama-3.1-8B-Instruct", Server: c.server})
		got := l.Source
		if errors.Is(err, ErrNoLoad) {
			got = "none"
		} else if err != nil {
			got = err.Error()
		}
		if got != c.want || strings.Join(*asked, ",") != c.asked {
			t.Errorf("%s: %s after asking %q; want %s after %q", c.name, got, *asked, c.want, c.asked)
		}
	}
}

// TestReadUnreachable: a server that is down is an error, not ErrNoLoad:
// its last load is not kept as if it still held.
func TestReadUnreachable(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close()
	_, err := Read(context.Background(), nil, Target{APIBase: url + "/v1", Server: "vLLM"})
	if err == nil || errors.Is(err, ErrNoLoad) {
		t.Errorf("%v, want a connection error", err)
	}
}
