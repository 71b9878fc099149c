// Package doctor checks a proxy config against its backends, for
// `proxy check`: for each backend model, whether it is reachable, takes
// its key and serves the model, its context window, whether the model
// calls the tool a tool_choice names, which field carries its reasoning,
// whether the server has a native Messages endpoint, how long its first
// token takes, whether the coding client's tool schemas compile there (as
// the proxy sends them), and, when asked, how it words a context overflow.
// Each failure says how to fix it. Run only reads the backends, through
// the requests a client would make (small completions of a few tokens).
package doctor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/dialect"
	"github.com/dragoman-dev/dragoman/proxy/discover"
)

// Status is a check's outcome.
type Status string

// Outcomes. A warning does not fail the check run; a failure does.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip" // not run: an earlier check failed
	Info Status = "info" // what to know, with how to change it in Fix; neither a warning nor a failure
)

// Check names, in the order they run.
const (
	CheckReachable = "reachable"
	CheckKey       = "key"
	CheckModel     = "model"
	CheckWindow    = "context_window"
	CheckToolCall  = "tool_call"
	CheckReasoning = "reasoning"
	CheckMessages  = "native_messages"
	CheckLatency   = "first_token"
	CheckSchemas   = "tool_schemas"
	CheckOverflow  = "overflow"
)

var checkOrder = []string{CheckReachable, CheckKey, CheckModel, CheckWindow, CheckToolCall, CheckReasoning, CheckMessages, CheckLatency, CheckSchemas, CheckOverflow}

// Result is one check of one backend model.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Backend is the report of one backend model and the aliases that reach
// it.
type Backend struct {
	Aliases []string `json:"aliases"`
	APIBase string   `json:"api_base"`
	Model   string   `json:"model"`
	Server  string   `json:"server,omitempty"`
	// ContextWindow is the window the proxy uses for this backend model,
	// in tokens (0: unknown), and WindowSource where it comes from
	// ("proxy_params.context_window", what the backend said, such as
	// "GET /v1/models max_model_len", or "" when unknown).
	ContextWindow int      `json:"context_window"`
	WindowSource  string   `json:"window_source"`
	Results       []Result `json:"results"`
}

// Report is the whole check.
type Report struct {
	Config   string    `json:"config"`
	OK       bool      `json:"ok"`
	Failures int       `json:"failures"`
	Warnings int       `json:"warnings"`
	Backends []Backend `json:"backends"`
	// Clients are the checks of what the coding clients need beside the
	// backends (web search, WebFetch).
	Clients []Result `json:"clients"`
}

// Options tune a run.
type Options struct {
	Client  *http.Client  // nil: http.DefaultClient
	Timeout time.Duration // bounds each backend's checks (default 60 s: a cold model may take that long)
	// ProbeOverflow: send each backend a prompt just over its discovered
	// window and report how it words the overflow (CheckOverflow).
	ProbeOverflow bool
	// Hooks, when set, are the folders where the clients section looks
	// for notify-chat's registration (hooks.go).
	Hooks *HookPlaces
}

// SlowFirstToken is the first-token latency over which the check warns.
const SlowFirstToken = 5 * time.Second

// Run checks every distinct backend model of cfg, concurrently, and
// reports them in the config's order.
func Run(ctx context.Context, cfg *config.Config, opts Options) Report {
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	rep := Report{Config: cfg.Path}
	index := map[[2]string]int{}
	var routes []config.Route
	for _, r := range cfg.Routes {
		key := [2]string{r.APIBase, r.BackendModel}
		if i, ok := index[key]; ok {
			rep.Backends[i].Aliases = append(rep.Backends[i].Aliases, r.Alias)
			continue
		}
		index[key] = len(rep.Backends)
		rep.Backends = append(rep.Backends, Backend{Aliases: []string{r.Alias}, APIBase: config.RedactedURL(r.APIBase), Model: r.BackendModel})
		routes = append(routes, r)
	}
	var wg sync.WaitGroup
	for i := range rep.Backends {
		wg.Add(1)
		go func(b *Backend, r config.Route) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
			defer cancel()
			c := checker{ctx: ctx, client: opts.Client, route: r, cfgPath: cfg.Path, probeOverflow: opts.ProbeOverflow}
			b.Results = c.run()
			b.Server = c.info.Server
			b.ContextWindow, b.WindowSource = c.windowUsed()
		}(&rep.Backends[i], routes[i])
	}
	wg.Wait()
	rep.Clients = clientChecks(ctx, cfg, opts.Timeout)
	if opts.Hooks != nil {
		rep.Clients = append(rep.Clients, hookChecks(*opts.Hooks)...)
	}
	count := func(results []Result) {
		for _, r := range results {
			switch r.Status {
			case Fail:
				rep.Failures++
			case Warn:
				rep.Warnings++
			}
		}
	}
	for _, b := range rep.Backends {
		count(b.Results)
	}
	count(rep.Clients)
	rep.OK = rep.Failures == 0
	return rep
}

type checker struct {
	ctx           context.Context
	client        *http.Client
	route         config.Route
	cfgPath       string
	probeOverflow bool
	info          discover.Info
	results       []Result
}

// add reports a check's result, without the credentials the backend's
// api_base may hold (http://user:pass@host/v1): never in the report.
func (c *checker) add(check string, s Status, detail, fix string) {
	c.results = append(c.results, Result{Check: check, Status: s,
		Detail: config.ScrubCredentials(detail, c.route.APIBase), Fix: config.ScrubCredentials(fix, c.route.APIBase)})
}

// redact removes the backend's key from what the backend said: a backend
// may echo it in an error, and it never reaches the report.
func (c *checker) redact(text string) string {
	if k := c.route.APIKey; len(k) >= 4 {
		return strings.ReplaceAll(text, k, "[redacted]")
	}
	return text
}

// skipRest marks every check not yet run as skipped.
func (c *checker) skipRest(why string) []Result {
	done := map[string]bool{}
	for _, r := range c.results {
		done[r.Check] = true
	}
	for _, name := range checkOrder {
		if !done[name] {
			c.add(name, Skip, why, "")
		}
	}
	return c.results
}

func (c *checker) run() []Result {
	r := c.route
	start := time.Now()
	info, err := discover.Probe(c.ctx, c.client, r.APIBase, r.APIKey, r.BackendModel)
	c.info = info
	var he *discover.HTTPError
	switch {
	case errors.As(err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden):
		c.add(CheckReachable, OK, fmt.Sprintf("GET %s/models answered %d", r.APIBase, he.Status), "")
		c.add(CheckKey, Fail, fmt.Sprintf("the backend refused the key (%d): %s", he.Status, c.redact(clip(he.Body))),
			"set proxy_params.api_key in "+c.cfgPath+" to the key the backend expects (a literal, or os.environ/NAME with NAME exported)")
		return c.skipRest("the key was refused")
	case errors.As(err, &he) && he.Status == http.StatusNotFound:
		c.add(CheckReachable, Fail, fmt.Sprintf("GET %s/models answered 404: no Chat Completions API there", r.APIBase),
			"proxy_params.api_base must be the server's base URL ending in /v1, e.g. http://localhost:8000/v1")
		return c.skipRest("api_base has no API")
	case errors.As(err, &he):
		c.add(CheckReachable, Fail, fmt.Sprintf("GET %s/models answered %d: %s", r.APIBase, he.Status, c.redact(clip(he.Body))),
			"check the backend's own log; a 503 is a model still loading (retry in a moment)")
		return c.skipRest("the backend answered with an error")
	case err != nil:
		c.add(CheckReachable, Fail, fmt.Sprintf("cannot reach %s: %v", r.APIBase, rootCause(err)),
			"start the backend, or correct proxy_params.api_base in "+c.cfgPath)
		return c.skipRest("the backend is unreachable")
	}
	server := info.Server
	if server == "" {
		server = "an OpenAI-compatible server"
	}
	c.add(CheckReachable, OK, fmt.Sprintf("%s answers GET /v1/models in %s", server, time.Since(start).Round(time.Millisecond)), "")
	c.add(CheckKey, OK, "accepted", "")
	// A model not served fails its check; the others still run (the
	// backend's own answers to them say more).
	c.model()
	c.window()
	c.toolCall()
	c.streamed()
	c.nativeMessages()
	c.toolSchemas()
	c.overflow()
	return c.results
}

// model checks that the backend serves the model under its configured
// name, as the server itself matches names: Ollama takes "name" for
// "name:latest", and llama-server, serving one model, answers to any name.
func (c *checker) model() {
	want, info := c.route.BackendModel, c.info
	switch {
	case slices.Contains(info.Models, want):
		c.add(CheckModel, OK, "served", "")
		return
	case info.Server == discover.Ollama && !strings.Contains(want, ":") && slices.Contains(info.Models, want+":latest"):
		c.add(CheckModel, OK, "served as "+want+":latest (Ollama's default tag)", "")
		return
	case info.Server == discover.LlamaCpp && len(info.Models) == 1:
		c.add(CheckModel, OK, fmt.Sprintf("served: llama-server serves one model (%s) under any name", info.Models[0]), "")
		return
	}
	served := strings.Join(info.Models, ", ")
	if served == "" {
		served = "none"
	}
	c.add(CheckModel, Fail, fmt.Sprintf("the backend does not serve %q; it serves: %s", want, served),
		fmt.Sprintf("set proxy_params.model in %s to vendorb/<one of: %s>, or load %s on the backend", c.cfgPath, served, want))
}

func (c *checker) window() {
	switch w, info := c.route.ContextWindow, c.info; {
	case w > 0:
		c.add(CheckWindow, OK, fmt.Sprintf("%d tokens (proxy_params.context_window; the backend says %s)", w, windowText(info)), "")
	case info.ContextWindow > 0 && info.ContextWindow < 32768:
		c.add(CheckWindow, Warn, fmt.Sprintf("%d tokens (%s): the coding client's system prompt and tools alone take about 20,000", info.ContextWindow, info.WindowSource),
			"serve the model with a larger context (vLLM --max-model-len, llama.cpp -c, Ollama num_ctx, LM Studio's context length)")
	case info.ContextWindow > 0:
		c.add(CheckWindow, OK, fmt.Sprintf("%d tokens (%s)", info.ContextWindow, info.WindowSource), "")
	default:
		c.add(CheckWindow, Warn, "unknown: the backend does not say",
			"set proxy_params.context_window in "+c.cfgPath+" so that max_tokens is clamped to fit and overflows carry their numbers")
	}
}

// windowUsed is the window the proxy uses and where it comes from: the
// config's proxy_params.context_window first, else what the backend says.
func (c *checker) windowUsed() (int, string) {
	switch {
	case c.route.ContextWindow > 0:
		return c.route.ContextWindow, "proxy_params.context_window"
	case c.info.ContextWindow > 0:
		return c.info.ContextWindow, c.info.WindowSource
	}
	return 0, ""
}

func windowText(info discover.Info) string {
	if info.ContextWindow == 0 {
		return "nothing"
	}
	return fmt.Sprintf("%d", info.ContextWindow)
}

// toolProbe is a request that names one of two tools in tool_choice,
// the second: a server that ignores the name is seen calling the first.
func toolProbe(model string) []byte {
	return []byte(`{"model":` + quote(model) + `,"max_tokens":256,"temperature":0,` +
		`"messages":[{"role":"user","content":"What is the weather in Paris? Use the tool."}],` +
		`"tools":[{"type":"function","function":{"name":"get_time","description":"Current time of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},` +
		`{"type":"function","function":{"name":"get_weather","description":"Current weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],` +
		`"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`)
}

// asSent is a Chat request as the proxy sends it to this backend's
// server (package dialect).
func (c *checker) asSent(body []byte) []byte {
	if fitted, _ := dialect.Fit(nil, c.info.Server, dialect.Chat, body); fitted != nil {
		return fitted
	}
	return body
}

func (c *checker) toolCall() {
	body, status, err := c.post("/chat/completions", c.asSent(toolProbe(c.route.BackendModel)))
	if err != nil || status/100 != 2 {
		c.add(CheckToolCall, Fail, "the tool-call probe failed: "+c.redact(failure(status, body, err)),
			"check the backend's log; a server that rejects tool_choice needs tool calling turned on (vLLM --enable-auto-tool-choice --tool-call-parser <parser>, llama.cpp --jinja)")
		return
	}
	var resp chat.Response
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) == 0 {
		c.add(CheckToolCall, Fail, "the answer is not a Chat Completions response: "+c.redact(clip(body)), "check that api_base is a Chat Completions server")
		return
	}
	msg := resp.Choices[0].Message
	for _, tc := range msg.ToolCalls {
		if tc.Function.Name == "get_weather" {
			if json.Unmarshal([]byte(tc.Function.Arguments), new(map[string]any)) != nil {
				c.add(CheckToolCall, Warn, "called the named tool, with arguments that are not a JSON object: "+c.redact(tc.Function.Arguments),
					"use the server's tool-call parser for this model (vLLM --tool-call-parser)")
				return
			}
			c.add(CheckToolCall, OK, "called the named tool get_weather("+c.redact(tc.Function.Arguments)+"), not the other one offered", "")
			return
		}
	}
	if len(msg.ToolCalls) > 0 {
		c.add(CheckToolCall, Fail, fmt.Sprintf("tool_choice named get_weather, the model called %s instead: the server does not honour a named tool_choice", msg.ToolCalls[0].Function.Name),
			"serve the model with tool calling on and a server version that honours tool_choice (vLLM --enable-auto-tool-choice; llama.cpp --jinja)")
		return
	}
	text := ""
	if msg.Content != nil {
		text = *msg.Content
	}
	if c.textToolCall(text) {
		return
	}
	c.add(CheckToolCall, Fail, fmt.Sprintf("asked to call get_weather, the model answered with text instead: %q", c.redact(clipString(text, 120))),
		"the coding client works through tools: serve the model with tool calling on (vLLM --enable-auto-tool-choice --tool-call-parser <parser>; llama.cpp --jinja), or pick a model trained for tool use")
}

// streamed sends a small streamed completion and reads which field its
// reasoning comes in and how long its first token takes.
func (c *checker) streamed() {
	payload := []byte(`{"model":` + quote(c.route.BackendModel) + `,"max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Say hello."}]}`)
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.route.APIBase+"/chat/completions", bytes.NewReader(payload))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.route.APIKey)
	start := time.Now()
	resp, err := c.client.Do(req)
	if err != nil || resp.StatusCode/100 != 2 {
		var b []byte
		status := 0
		if resp != nil {
			b, _ = io.ReadAll(io.LimitReader(resp.Body, 2048))
			resp.Body.Close()
			status = resp.StatusCode
		}
		why := "the streamed probe failed: " + c.redact(failure(status, b, err))
		c.add(CheckReasoning, Skip, why, "")
		c.add(CheckLatency, Fail, why, "check the backend's log")
		return
	}
	defer resp.Body.Close()
	var first time.Duration
	field := ""
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			break
		}
		var chunk chat.Chunk
		if json.Unmarshal(data, &chunk) != nil || len(chunk.Choices) == 0 {
			continue
		}
		d := chunk.Choices[0].Delta
		if first == 0 && (d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" || len(d.ToolCalls) > 0) {
			first = time.Since(start)
		}
		if field == "" && d.ReasoningContent != "" {
			field = "reasoning_content"
		}
		if field == "" && d.Reasoning != "" {
			field = "reasoning"
		}
	}
	if field == "" {
		c.add(CheckReasoning, OK, "none seen (the model answered without reasoning)", "")
	} else {
		c.add(CheckReasoning, OK, "the model reasons in the \""+field+"\" field (read as thinking)", "")
	}
	switch {
	case first == 0:
		c.add(CheckLatency, Warn, "the stream carried no token", "check the backend's log")
	case first > SlowFirstToken:
		c.add(CheckLatency, Warn, first.Round(time.Millisecond).String()+": a cold or loaded backend",
			"pre-warm the backend with the warmer, or give it a GPU to itself")
	case first < time.Millisecond:
		c.add(CheckLatency, OK, first.Round(time.Microsecond).String(), "")
	default:
		c.add(CheckLatency, OK, first.Round(time.Millisecond).String(), "")
	}
}

// nativeMessages asks whether the server has its own Messages endpoint,
// with a request of one output token.
func (c *checker) nativeMessages() {
	payload := []byte(`{"model":` + quote(c.route.BackendModel) + `,"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`)
	root := strings.TrimSuffix(c.route.APIBase, "/v1")
	body, status, err := c.postURL(root+"/v1/messages", payload)
	switch {
	case err != nil:
		c.add(CheckMessages, Skip, "the probe failed: "+c.redact(err.Error()), "")
	case status/100 == 2 && isMessagesAnswer(body):
		c.add(CheckMessages, OK, "present: POST /v1/messages answers in the Messages format",
			"consider proxy_params.model: vendora/"+c.route.BackendModel+" to pass Messages requests through untranslated")
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		c.add(CheckMessages, OK, "absent: requests are translated to Chat Completions", "")
	default:
		c.add(CheckMessages, OK, fmt.Sprintf("unclear: POST /v1/messages answered %d", status), "")
	}
}

// isMessagesAnswer reports whether body is a Messages answer: a JSON
// object whose "type" is "message" (however the server spaces its JSON).
func isMessagesAnswer(body []byte) bool {
	var m struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &m) == nil && m.Type == "message"
}

func (c *checker) post(path string, payload []byte) ([]byte, int, error) {
	return c.postURL(c.route.APIBase+path, payload)
}

func (c *checker) postURL(url string, payload []byte) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.route.APIKey)
	req.Header.Set("x-api-key", c.route.APIKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return b, resp.StatusCode, err
}

func failure(status int, body []byte, err error) string {
	if err != nil {
		return rootCause(err).Error()
	}
	if msg := chat.ParseError(body); msg != "" {
		return fmt.Sprintf("%d: %s", status, clipString(msg, 200))
	}
	return fmt.Sprintf("%d: %s", status, clip(body))
}

func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func clip(b []byte) string { return clipString(string(bytes.TrimSpace(b)), 200) }

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
