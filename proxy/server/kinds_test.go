package server_test

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
)

// kindRoutesYAML: one stub behind pools that differ by backend model, so
// the model the backend receives names the pool a request reached.
func kindRoutesYAML(base string) string {
	var b strings.Builder
	b.WriteString("model_list:\n")
	for _, p := range []string{"big", "small", "long", "eyes", "search", "thinker"} {
		fmt.Fprintf(&b, "  - model_name: %s\n    proxy_params: {model: vendorb/%s-model, api_base: '%s', api_key: os.environ/TEST_BACKEND_KEY}\n", p, p, base)
	}
	b.WriteString(`router_settings:
  background_models: [claude-haiku-*]
  long_context_tokens: 2000
  routes:
    - {kind: background, to: small}
    - {kind: subagent, to: small}
    - {kind: warmer, to: small}
    - {kind: long_context, to: long}
    - {kind: image, to: eyes}
    - {kind: web_search, to: search}
    - {kind: thinking, to: thinker}
`)
	return b.String()
}

const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="

// kindBody builds a request of one endpoint: content is the user turn's
// content (JSON), extra more top-level members (",..." or "").
func kindBody(endpoint, model string, stream bool, content, extra string) string {
	if endpoint == "/v1/responses" {
		return fmt.Sprintf(`{"model":%q,"stream":%v,"max_output_tokens":16,"input":[{"role":"user","content":%s}]%s}`, model, stream, content, extra)
	}
	return fmt.Sprintf(`{"model":%q,"max_tokens":16,"stream":%v,"messages":[{"role":"user","content":%s}]%s}`, model, stream, content, extra)
}

func imageContent(endpoint string) string {
	switch endpoint {
	case "/v1/messages":
		return `[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}},{"type":"text","text":"what is it"}]`
	case "/v1/responses":
		return `[{"type":"input_image","image_url":"data:image/png;base64,` + png + `"},{"type":"input_text","text":"what is it"}]`
	}
	return `[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png + `"}},{"type":"text","text":"what is it"}]`
}

func thinkingExtra(endpoint string) string {
	switch endpoint {
	case "/v1/messages":
		return `,"thinking":{"type":"adaptive"}`
	case "/v1/responses":
		return `,"reasoning":{"effort":"high"}`
	}
	return `,"reasoning_effort":"high"`
}

func webSearchExtra(endpoint string) string {
	if endpoint == "/v1/messages" {
		return `,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":3}]`
	}
	return `,"tools":[{"type":"web_search"}]`
}

// TestKindRoutes: a request of each kind reaches the pool its route
// names, on each endpoint, stream and not, and the answer names the
// model the client asked for.
func TestKindRoutes(t *testing.T) {
	h := newHarness(t, harnessOptions{routesYAML: kindRoutesYAML("{base}")})
	text := `"hello"`
	long := fmt.Sprintf("%q", strings.Repeat("many words of context ", 600))
	cases := []struct {
		name, model string
		header      []string
		content     func(endpoint string) string
		extra       func(endpoint string) string
		want        string // the backend model reached
	}{
		{"main", "big", nil, nil, nil, "big-model"},
		{"background", "claude-haiku-4-5", nil, nil, nil, "small-model"},
		{"subagent", "big", []string{"X-Claude-Code-Agent-Id", "a0ebf6e5133e86dd9"}, nil, nil, "small-model"},
		{"warmer", "big", []string{"User-Agent", "dragoman-warmer"}, nil, nil, "small-model"},
		{"long_context", "big", nil, func(string) string { return long }, nil, "long-model"},
		{"image", "big", nil, imageContent, nil, "eyes-model"},
		{"web_search", "big", nil, nil, webSearchExtra, "search-model"},
		{"thinking", "big", nil, nil, thinkingExtra, "thinker-model"},
		{"image and thinking: the first route wins", "big", nil, imageContent, thinkingExtra, "eyes-model"},
		{"background before subagent", "claude-haiku-4-5", []string{"X-Claude-Code-Agent-Id", "a1"}, nil, thinkingExtra, "small-model"},
	}
	for _, endpoint := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses"} {
		for _, stream := range []bool{false, true} {
			for _, c := range cases {
				content, extra := text, ""
				if c.content != nil {
					content = c.content(endpoint)
				}
				if c.extra != nil {
					extra = c.extra(endpoint)
				}
				before := len(h.backendRequests())
				resp := h.post(endpoint, kindBody(endpoint, c.model, stream, content, extra), c.header...)
				answer := drain(t, resp)
				where := fmt.Sprintf("%s stream=%v %s", endpoint, stream, c.name)
				if resp.StatusCode != 200 {
					t.Errorf("%s: %d %s", where, resp.StatusCode, answer)
					continue
				}
				reqs := h.backendRequests()
				if len(reqs) != before+1 {
					t.Errorf("%s: the backend got %d requests, want 1", where, len(reqs)-before)
					continue
				}
				if got := reqs[len(reqs)-1]["model"]; got != c.want {
					t.Errorf("%s: reached %v, want %s", where, got, c.want)
				}
				if m, _ := json.Marshal(c.model); !strings.Contains(answer, `"model":`+string(m)) {
					t.Errorf("%s: the answer does not name the model asked for, %s: %.300s", where, c.model, answer)
				}
			}
		}
	}
}

// TestNoRoutesKeepsAliases: without router_settings.routes every request
// goes to the pool it names, whatever its kind, and an alias not in
// model_list is still a 404.
func TestNoRoutesKeepsAliases(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	resp := h.post("/v1/messages", kindBody("/v1/messages", "local-model", false, imageContent("/v1/messages"), thinkingExtra("/v1/messages")), "X-Claude-Code-Agent-Id", "a1")
	if body := drain(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	reqs := h.backendRequests()
	if got := reqs[len(reqs)-1]["model"]; got != "qwen3-coder" {
		t.Errorf("reached %v, want the alias's own qwen3-coder", got)
	}
	resp = h.post("/v1/messages", kindBody("/v1/messages", "claude-haiku-4-5", false, `"hi"`, ""))
	if body := drain(t, resp); resp.StatusCode != 404 {
		t.Errorf("an unconfigured small model without a route: %d %s, want 404", resp.StatusCode, body)
	}
}

// gatedBackend answers Chat requests in the order it gets them, holding
// the first until gate closes; order lists the user texts it answered.
type gatedBackend struct {
	gate  chan struct{}
	first chan struct{} // closed when the first request arrived
	mu    sync.Mutex
	n     int
	order []string
}

func (g *gatedBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	g.mu.Lock()
	g.n++
	n := g.n
	text := ""
	if len(req.Messages) > 0 {
		text = req.Messages[len(req.Messages)-1].Content
	}
	g.order = append(g.order, text)
	g.mu.Unlock()
	if n == 1 {
		close(g.first)
		<-g.gate
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
}

// TestQueuePriorityOneSlot: one slot held, five background requests
// queued, then one main: /backends and /metrics count them alike by
// kind, and the main one is served next.
func TestQueuePriorityOneSlot(t *testing.T) {
	g := &gatedBackend{gate: make(chan struct{}), first: make(chan struct{})}
	backend := httptest.NewServer(g)
	t.Cleanup(backend.Close)
	params := "{model: vendorb/m, api_base: '" + backend.URL + "/v1', api_key: os.environ/TEST_BACKEND_KEY, name: single, max_parallel_requests: 1}"
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: "model_list:\n  - model_name: coder\n    proxy_params: " + params +
		"\n  - model_name: claude-haiku-4-5\n    proxy_params: " + params +
		"\nrouter_settings:\n  background_models: [claude-haiku-*]\n  queue_timeout: 30\n"})
	var wg sync.WaitGroup
	send := func(model, text string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/messages", strings.NewReader(kindBody("/v1/messages", model, false, fmt.Sprintf("%q", text), "")))
			req.Header.Set("Authorization", "Bearer "+clientKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
				t.Errorf("%s: %d %s", text, resp.StatusCode, body)
			}
			resp.Body.Close()
		}()
	}
	queued := func() (total int, byKind map[string]int) {
		_, b := h.do(http.MethodGet, "/backends", "", nil, false)
		var got struct {
			Backends []struct {
				Queued       int            `json:"queued"`
				QueuedByKind map[string]int `json:"queued_by_kind"`
			} `json:"backends"`
		}
		if err := json.Unmarshal(b, &got); err != nil || len(got.Backends) != 1 {
			t.Fatalf("/backends: %v %s", err, b)
		}
		return got.Backends[0].Queued, got.Backends[0].QueuedByKind
	}
	waitQueued := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if q, _ := queued(); q == n {
				return
			}
		}
		t.Fatalf("never %d queued", n)
	}
	send("coder", "holder")
	<-g.first
	for i := range 5 {
		send("claude-haiku-4-5", fmt.Sprint("background-", i))
		waitQueued(i + 1)
	}
	send("coder", "main")
	waitQueued(6)
	_, byKind := queued()
	if byKind["main"] != 1 || byKind["background"] != 5 || byKind["subagent"] != 0 || byKind["warmer"] != 0 {
		t.Errorf("/backends queued_by_kind %v, want main 1, background 5", byKind)
	}
	checkSeries(t, scrape(t, h.proxy.URL), "dragoman_queued_requests", map[string]float64{
		"backend=single,kind=main": 1, "backend=single,kind=background": 5, "backend=single,kind=subagent": 0, "backend=single,kind=warmer": 0,
	})
	close(g.gate)
	wg.Wait()
	g.mu.Lock()
	order := fmt.Sprint(g.order)
	g.mu.Unlock()
	if want := "[holder main background-0 background-1 background-2 background-3 background-4]"; order != want {
		t.Errorf("served %s, want %s", order, want)
	}
	// The kind label: five background requests, two main ones (each
	// counted just after its answer went out).
	var background, main float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		reqs := series(scrape(t, h.proxy.URL), "dragoman_requests_total")
		background = reqs["endpoint=messages,alias=claude-haiku-4-5,backend=single,status=200,error_type=none,kind=background"]
		main = reqs["endpoint=messages,alias=coder,backend=single,status=200,error_type=none,kind=main"]
		if background == 5 && main == 2 {
			break
		}
	}
	if background != 5 || main != 2 {
		t.Errorf("requests counted by kind: background %v, main %v, want 5 and 2", background, main)
	}
}
