package stub

import (
	"container/list"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GPU makes the stub a model of a GPU server, as vLLM runs one (on with
// Slots > 0): Slots requests at once, the others waiting in its own queue
// in arrival order; a prefix cache of CacheTokens over blocks of
// BlockTokens (full blocks only, chained by hash from the start of the
// prompt, least recently used evicted first, the blocks of running
// requests never); prefill time proportional to the prompt tokens not in
// the cache, then OutputTokens decoded at DecodePerToken each. A token is
// 4 bytes of the prompt's text: each message's role and text, the tools
// after the system message. Answers report
// usage.prompt_tokens_details.cached_tokens; GET /metrics serves vLLM's
// gauges (num_requests_running, num_requests_waiting,
// kv_cache_usage_perc) and prefix cache counters; GET /_stub/gpu the
// prefill tokens computed and the tag of every request served (the text
// after "gpu:tag=" in its last user message), DELETE /_stub/gpu resets
// them and the cache.
//
// A last user message holding "gpu:reply=N" gets N tokens of answer.
type GPU struct {
	Slots           int
	CacheTokens     int           // default 262144
	BlockTokens     int           // default 16
	PrefillPerToken time.Duration // time to compute one prompt token
	DecodePerToken  time.Duration // time to decode one answer token
	OutputTokens    int           // default answer length (default 64)
}

// GPUCounters are what GET /_stub/gpu reports.
type GPUCounters struct {
	Requests      int64    `json:"requests"`
	PromptTokens  int64    `json:"prompt_tokens"`
	CachedTokens  int64    `json:"cached_tokens"`
	PrefillTokens int64    `json:"prefill_tokens"` // computed: prompt less cached
	MaxRunning    int      `json:"max_running"`
	MaxWaiting    int      `json:"max_waiting"`
	Tags          []string `json:"tags"` // in the order the requests were admitted
}

type gpuModel struct {
	opt   GPU
	model string

	mu       sync.Mutex
	running  int
	waiting  []chan struct{}
	lru      *list.List               // of uint64 block hashes, most recent first
	blocks   map[uint64]*list.Element // cached blocks
	pins     map[uint64]int           // blocks held by running requests
	capacity int                      // blocks
	c        GPUCounters
}

func newGPU(opt GPU, model string) *gpuModel {
	if opt.CacheTokens <= 0 {
		opt.CacheTokens = 262144
	}
	if opt.BlockTokens <= 0 {
		opt.BlockTokens = 16
	}
	if opt.OutputTokens <= 0 {
		opt.OutputTokens = 64
	}
	g := &gpuModel{opt: opt, model: model, lru: list.New(), blocks: map[uint64]*list.Element{}, pins: map[uint64]int{}}
	g.capacity = max(1, opt.CacheTokens/opt.BlockTokens)
	g.c.Tags = []string{}
	return g
}

// gpuRoutes serves the GPU model's endpoints on mux.
func (s *Server) gpuRoutes() {
	s.mux.HandleFunc("GET /metrics", s.gpu.metrics)
	s.mux.HandleFunc("GET /_stub/gpu", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s.gpu.counters())
	})
	s.mux.HandleFunc("DELETE /_stub/gpu", func(w http.ResponseWriter, _ *http.Request) {
		s.gpu.reset()
		w.WriteHeader(http.StatusNoContent)
	})
}

type gpuRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  json.RawMessage `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools               json.RawMessage `json:"tools"`
	Stream              bool            `json:"stream"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
}

// promptText is the prompt as the model sees it: each message's role and
// text (and tool calls), the tools after the first (system) message; and
// the text of the last user message.
func (r *gpuRequest) promptText() (string, string) {
	var b strings.Builder
	last := ""
	for i, m := range r.Messages {
		b.WriteString("<|" + m.Role + "|>")
		b.WriteString(contentText(m.Content))
		if len(m.ToolCalls) > 0 {
			b.Write(m.ToolCalls)
		}
		b.WriteString(m.ToolCallID)
		if i == 0 && len(r.Tools) > 0 {
			b.WriteString("<|tools|>")
			b.Write(r.Tools)
		}
		if m.Role == "user" {
			last = contentText(m.Content)
		}
	}
	return b.String(), last
}

// markerValue is the text after marker in s up to a space, or "".
func markerValue(s, marker string) string {
	i := strings.Index(s, marker)
	if i < 0 {
		return ""
	}
	v := s[i+len(marker):]
	if j := strings.IndexAny(v, " \n\t"); j >= 0 {
		v = v[:j]
	}
	return v
}

// blockHashes are the hashes of the prompt's full blocks, each chained to
// the one before (FNV-1a 64 over the block's bytes and the previous hash).
func (g *gpuModel) blockHashes(text string) []uint64 {
	size := 4 * g.opt.BlockTokens
	out := make([]uint64, 0, len(text)/size)
	h := uint64(14695981039346656037)
	for i := 0; i+size <= len(text); i += size {
		for j := i; j < i+size; j++ {
			h ^= uint64(text[j])
			h *= 1099511628211
		}
		out = append(out, h)
	}
	return out
}

// admit waits for a slot (or for the client to leave).
func (g *gpuModel) admit(r *http.Request) bool {
	g.mu.Lock()
	if g.running < g.opt.Slots && len(g.waiting) == 0 {
		g.running++
		g.c.MaxRunning = max(g.c.MaxRunning, g.running)
		g.mu.Unlock()
		return true
	}
	ch := make(chan struct{}, 1)
	g.waiting = append(g.waiting, ch)
	g.c.MaxWaiting = max(g.c.MaxWaiting, len(g.waiting))
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-r.Context().Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, w := range g.waiting {
			if w == ch {
				g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
				return false
			}
		}
		// granted meanwhile: give the slot on
		g.releaseLocked()
		return false
	}
}

func (g *gpuModel) releaseLocked() {
	if len(g.waiting) > 0 {
		ch := g.waiting[0]
		g.waiting = g.waiting[1:]
		ch <- struct{}{}
		return
	}
	g.running--
}

// start looks the prompt up in the cache, pins its blocks and counts it;
// it returns the cached tokens.
func (g *gpuModel) start(hashes []uint64, promptTokens int, tag string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	hits := 0
	for _, h := range hashes {
		if _, ok := g.blocks[h]; !ok {
			break
		}
		hits++
	}
	for _, h := range hashes {
		g.pins[h]++
		if e, ok := g.blocks[h]; ok {
			g.lru.MoveToFront(e)
		} else {
			g.blocks[h] = g.lru.PushFront(h)
		}
	}
	g.evictLocked()
	cached := min(hits*g.opt.BlockTokens, promptTokens)
	g.c.Requests++
	g.c.PromptTokens += int64(promptTokens)
	g.c.CachedTokens += int64(cached)
	g.c.PrefillTokens += int64(promptTokens - cached)
	if tag != "" {
		g.c.Tags = append(g.c.Tags, tag)
	}
	return cached
}

// evictLocked drops the least recently used blocks that no running
// request holds until the cache fits.
func (g *gpuModel) evictLocked() {
	for e := g.lru.Back(); e != nil && len(g.blocks) > g.capacity; {
		prev := e.Prev()
		h := e.Value.(uint64)
		if g.pins[h] == 0 {
			g.lru.Remove(e)
			delete(g.blocks, h)
		}
		e = prev
	}
}

// finish unpins the blocks and frees the slot.
func (g *gpuModel) finish(hashes []uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, h := range hashes {
		if g.pins[h]--; g.pins[h] <= 0 {
			delete(g.pins, h)
		}
	}
	g.evictLocked()
	g.releaseLocked()
}

func (g *gpuModel) counters() GPUCounters {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.c
	c.Tags = append([]string{}, g.c.Tags...)
	return c
}

func (g *gpuModel) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for h, e := range g.blocks {
		if g.pins[h] == 0 {
			g.lru.Remove(e)
			delete(g.blocks, h)
		}
	}
	g.c = GPUCounters{Tags: []string{}}
}

// metrics serves vLLM's gauges and prefix cache counters.
func (g *gpuModel) metrics(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	running, waiting := g.running, len(g.waiting)
	usage := min(1, float64(len(g.pins))/float64(g.capacity))
	c := g.c
	g.mu.Unlock()
	labels := `{engine="0",model_name="` + g.model + `"}`
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	for _, m := range []struct {
		name, help, typ string
		v               float64
	}{
		{"vllm:num_requests_running", "Number of requests in model execution batches.", "gauge", float64(running)},
		{"vllm:num_requests_waiting", "Number of requests waiting to be processed.", "gauge", float64(waiting)},
		{"vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "gauge", usage},
		{"vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", "counter", float64(c.PromptTokens)},
		{"vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", "counter", float64(c.CachedTokens)},
		{"vllm:prompt_tokens_total", "Number of prefill tokens processed.", "counter", float64(c.PromptTokens)},
	} {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s %s\n", m.name, m.help, m.name, m.typ, m.name, labels, strconv.FormatFloat(m.v, 'f', -1, 64))
	}
	io.WriteString(w, b.String())
}

// gpuChat answers a Chat Completions request as the GPU model does.
func (s *Server) gpuChat(w http.ResponseWriter, r *http.Request) {
	var req gpuRequest
	s.serve(w, r, &req, writeError, func() bool {
		if req.Model == "" || len(req.Messages) == 0 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "model and messages are required")
			return true
		}
		g := s.gpu
		text, last := req.promptText()
		prompt := (len(text) + 3) / 4
		out := g.opt.OutputTokens
		if n, err := strconv.Atoi(markerValue(last, "gpu:reply=")); err == nil && n > 0 {
			out = n
		}
		for _, m := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
			if m != nil && *m > 0 {
				out = min(out, *m)
			}
		}
		hashes := g.blockHashes(text)
		if !g.admit(r) {
			return false
		}
		defer g.finish(hashes)
		cached := g.start(hashes, prompt, markerValue(last, "gpu:tag="))
		if !sleep(r, time.Duration(prompt-cached)*g.opt.PrefillPerToken) {
			return false
		}
		reply := gpuReply(out)
		usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
			"prompt_tokens_details": map[string]any{"cached_tokens": cached}}
		id := "chatcmpl-gpu-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		decode := time.Duration(out) * g.opt.DecodePerToken
		if !req.Stream {
			if !sleep(r, decode) {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}},
				"usage":   usage})
			return true
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		flusher, _ := w.(http.Flusher)
		chunk := func(delta map[string]any, finish any, u any) {
			c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
			if u != nil {
				c["choices"], c["usage"] = []any{}, u
			}
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\n\n", b)
			if flusher != nil {
				flusher.Flush()
			}
		}
		const pieces = 4
		step := (len(reply) + pieces - 1) / pieces
		for i := 0; i < len(reply); i += step {
			delta := map[string]any{"content": reply[i:min(len(reply), i+step)]}
			if i == 0 {
				delta["role"] = "assistant"
			} else if !sleep(r, decode/pieces) {
				return false
			}
			chunk(delta, nil, nil)
		}
		chunk(map[string]any{}, "stop", nil)
		chunk(nil, nil, usage)
		io.WriteString(w, "data: [DONE]\n\n")
		return true
	})
}

// gpuReply is n tokens of answer text (4 bytes a token).
func gpuReply(n int) string {
	const word = "tok "
	return strings.TrimRight(strings.Repeat(word, n), " ") + "."
}
