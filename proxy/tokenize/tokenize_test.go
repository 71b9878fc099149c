package tokenize

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/discover"
)

// TestBodyByServer: vLLM's body to vLLM, llama.cpp's to llama.cpp; an
// empty token list is no count but no absence either; 404 is an absence,
// remembered; Ollama and LM Studio are not asked.
func TestBodyByServer(t *testing.T) {
	var calls atomic.Int32
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req map[string]string
		json.NewDecoder(r.Body).Decode(&req)
		if req["model"] != "m" || req["prompt"] == "" {
			w.Write([]byte(`{"tokens":[]}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]int{"count": len(strings.Fields(req["prompt"]))})
	}))
	defer vllm.Close()
	llama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req map[string]string
		json.NewDecoder(r.Body).Decode(&req)
		json.NewEncoder(w).Encode(map[string][]int{"tokens": make([]int, len(strings.Fields(req["content"])))})
	}))
	defer llama.Close()
	none := httptest.NewServer(http.NotFoundHandler())
	defer none.Close()

	c := New(nil)
	ctx := t.Context()
	if n, ok := c.Count(ctx, Backend{Server: discover.VLLM, Root: vllm.URL, Model: "m"}, []string{"a b ", "c"}); !ok || n != 3 {
		t.Errorf("vLLM: %d %v", n, ok)
	}
	if n, ok := c.Count(ctx, Backend{Server: discover.LlamaCpp, Root: llama.URL, Model: "m"}, []string{"a b c d"}); !ok || n != 4 {
		t.Errorf("llama.cpp: %d %v", n, ok)
	}
	// vLLM's body to llama-server's shape of answer: no count, yet asked again.
	if _, ok := c.Count(ctx, Backend{Server: "", Root: vllm.URL, Model: "other"}, []string{"x"}); ok {
		t.Error("an empty token list taken for a count")
	}
	if !c.Has(Backend{Root: vllm.URL}) {
		t.Error("an empty token list taken for an absent tokenizer")
	}
	if _, ok := c.Count(ctx, Backend{Root: none.URL}, []string{"x"}); ok || c.Has(Backend{Root: none.URL}) {
		t.Error("a 404 not remembered")
	}
	before := calls.Load()
	for _, s := range []string{discover.Ollama, discover.LMStudio} {
		if _, ok := c.Count(ctx, Backend{Server: s, Root: llama.URL}, []string{"x"}); ok {
			t.Errorf("%s counted", s)
		}
	}
	if calls.Load() != before {
		t.Error("a server without a tokenizer was asked")
	}
}

// TestPrefixCache: a prompt that starts with a counted one has only its
// new parts tokenized; another backend, or other bytes, are not hits; the
// cache stays within its bound.
func TestPrefixCache(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]string
		json.NewDecoder(r.Body).Decode(&req)
		got = append(got, req["content"])
		json.NewEncoder(w).Encode(map[string][]int{"tokens": make([]int, len(strings.Fields(req["content"])))})
	}))
	defer srv.Close()
	c := New(nil)
	b := Backend{Server: discover.LlamaCpp, Root: srv.URL}
	n1, _ := c.Count(t.Context(), b, []string{"sys tools ", "u1 ", "a1 "})
	n2, _ := c.Count(t.Context(), b, []string{"sys tools ", "u1 ", "a1 ", "u2 "})
	if n1 != 4 || n2 != 5 || got[1] != "u2 " {
		t.Errorf("counts %d %d, tokenized %q", n1, n2, got)
	}
	c.Count(t.Context(), b, []string{"sys tools ", "u1 ", "A1 ", "u2 "})
	if got[2] != "sys tools u1 A1 u2 " {
		t.Errorf("other bytes hit the cache: %q", got)
	}
	c.Count(t.Context(), Backend{Server: discover.LlamaCpp, Root: srv.URL, Model: "other"}, []string{"sys tools ", "u1 ", "a1 "})
	if len(got) != 4 {
		t.Errorf("another backend model hit the cache: %q", got)
	}
	for i := 0; i < maxEntries+10; i++ {
		c.remember(key{backend: "b", sum: [32]byte{byte(i), byte(i >> 8)}}, i)
	}
	if len(c.counts) != maxEntries || len(c.order) != maxEntries {
		t.Errorf("cache holds %d, order %d, want %d", len(c.counts), len(c.order), maxEntries)
	}
}
