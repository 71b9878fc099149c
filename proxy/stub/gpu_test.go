package stub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/serverload"
)

func gpuServer(t *testing.T, g GPU) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(New(Options{GPU: g}))
	t.Cleanup(s.Close)
	return s
}

type gpuUsage struct {
	Prompt  int `json:"prompt_tokens"`
	Details struct {
		Cached int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func gpuPost(t *testing.T, url, system, user string) gpuUsage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": user}}})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Usage gpuUsage `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	return out.Usage
}

func gpuCounters(t *testing.T, url string) GPUCounters {
	t.Helper()
	resp, err := http.Get(url + "/_stub/gpu")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c GPUCounters
	json.NewDecoder(resp.Body).Decode(&c)
	return c
}

// TestGPUPrefixCache: a second prompt that shares the first's prefix is
// served from the cache up to its last full block, and the counters say
// what was computed; with a cache of one prompt's size, a third prompt
// evicts the first (LRU).
func TestGPUPrefixCache(t *testing.T) {
	s := gpuServer(t, GPU{Slots: 2, CacheTokens: 4096})
	system := strings.Repeat("You are a coding agent. ", 200) // 4,800 bytes
	a := gpuPost(t, s.URL, system, "first gpu:tag=a")
	b := gpuPost(t, s.URL, system, "second gpu:tag=b")
	if a.Details.Cached != 0 || b.Details.Cached < 1150 || b.Details.Cached > b.Prompt {
		t.Fatalf("cached %d then %d of %d, want 0 then the shared ~1,200", a.Details.Cached, b.Details.Cached, b.Prompt)
	}
	c := gpuCounters(t, s.URL)
	if c.Requests != 2 || c.PrefillTokens != int64(a.Prompt+b.Prompt-b.Details.Cached) || strings.Join(c.Tags, ",") != "a,b" {
		t.Errorf("counters %+v", c)
	}
	// 4096 tokens hold ~3 such prompts; four others evict the system prompt.
	for i := range 4 {
		gpuPost(t, s.URL, fmt.Sprint(i, strings.Repeat(" other words", 400)), "x")
	}
	if again := gpuPost(t, s.URL, system, "third"); again.Details.Cached != 0 {
		t.Errorf("after eviction %d cached, want 0", again.Details.Cached)
	}
	req, _ := http.NewRequest(http.MethodDelete, s.URL+"/_stub/gpu", nil)
	http.DefaultClient.Do(req)
	if c := gpuCounters(t, s.URL); c.Requests != 0 || gpuPost(t, s.URL, system, "after reset").Details.Cached != 0 {
		t.Errorf("after DELETE: %+v", c)
	}
}

// TestGPUSlotsAndMetrics: with 2 slots and 3 requests at once, one waits;
// /metrics says so in vLLM's names, as package serverload reads them; the
// prefill of a cold prompt takes its tokens × PrefillPerToken.
func TestGPUSlotsAndMetrics(t *testing.T) {
	s := gpuServer(t, GPU{Slots: 2, PrefillPerToken: 50 * time.Microsecond, DecodePerToken: time.Millisecond, OutputTokens: 200})
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 3 {
		wg.Go(func() { gpuPost(t, s.URL, fmt.Sprint(i)+strings.Repeat("p", 8000), "go") }) // 2,000 tokens: 100 ms of prefill
	}
	var l serverload.Load
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(s.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if l, err = serverload.ParseMetrics(b, "stub-model"); err != nil {
			t.Fatal(err)
		}
		if l.Waiting == 1 {
			break
		}
	}
	if l.Running != 2 || l.Waiting != 1 || l.Source != serverload.SourceVLLM || l.KVUsage <= 0 {
		t.Errorf("with 3 requests on 2 slots: %+v", l)
	}
	wg.Wait()
	// Two rounds of 100 ms prefill + 200 ms decode.
	if took := time.Since(start); took < 550*time.Millisecond {
		t.Errorf("3 requests on 2 slots took %s, want two rounds of 300 ms", took)
	}
	if c := gpuCounters(t, s.URL); c.MaxRunning != 2 || c.MaxWaiting != 1 {
		t.Errorf("counters %+v", c)
	}
}

// TestGPUStream: a stream's first content comes after the prefill, and
// its usage chunk reports the cached tokens.
func TestGPUStream(t *testing.T) {
	s := gpuServer(t, GPU{Slots: 1})
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi gpu:reply=12"}]}`
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	if !strings.Contains(text, `"role":"assistant"`) || !strings.Contains(text, `"cached_tokens":0`) || !strings.Contains(text, `"completion_tokens":12`) || !strings.HasSuffix(text, "data: [DONE]\n\n") {
		t.Errorf("stream:\n%s", text)
	}
}
