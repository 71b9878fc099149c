package stub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

type chatRequest struct {
	Model      string          `json:"model"`
	Messages   []chatMessage   `json:"messages"`
	MaxTokens  *int            `json:"max_tokens"`
	Stream     bool            `json:"stream"`
	Tools      []chatTool      `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
}

type chatToolCall struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type chatTool struct {
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type toolCall struct {
	ID, Name, Arguments string
}

// answer is what the stub says, before it is rendered as one response or
// as a stream.
type answer struct {
	reasoning      string
	reasoningField string // "reasoning" or "reasoning_content"
	text           string
	calls          []toolCall
	finish         string
	fixture        string // replay this backend fixture instead
	failMidstream  bool
	die            bool
	promptTokens   int
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	s.serve(w, r, &req, writeError, func() (done bool) {
		if req.Model == "" || len(req.Messages) == 0 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "model and messages are required")
			return true
		}
		if s.opts.StrictModel && req.Model != s.opts.Model {
			writeError(w, http.StatusNotFound, "NotFoundError", "The model `"+req.Model+"` does not exist.")
			return true
		}
		if msg := s.overWindow(&req); msg != "" {
			writeError(w, http.StatusBadRequest, "BadRequestError", msg)
			return true
		}
		now := time.Now()
		if s.loading(now) {
			b, _ := fixtures.Backend("error-loading-503.json")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(b)
			return true
		}
		if !sleep(r, s.coldWait(now)) || !sleep(r, s.opts.FirstTokenDelay) {
			return false
		}
		a := decide(&req)
		writeCallsAsText(&a, s.textCallsFormat(&req))
		if s.opts.ContextWindow > 0 {
			a.promptTokens = windowPrompt(&req) // the count its window is checked with
		}
		if s.opts.NoTools && len(a.calls) > 0 {
			a.calls, a.finish = nil, "stop"
			a.text = "I would rather describe what I would do than call a tool."
		}
		if req.Stream {
			return s.stream(w, r, &req, &a)
		}
		s.respond(w, &req, &a)
		return true
	})
}

// serve reads and records a request, decodes its JSON body into req and
// runs answer, which reports whether it answered to the end (false: the
// client went away); the record says so. A body that is not JSON gets a
// 400 written by fail, in the format's own error shape.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, req any, fail func(w http.ResponseWriter, status int, typ, msg string), answer func() (done bool)) {
	body, err := io.ReadAll(r.Body)
	i := s.record(r, body)
	cancelled := true
	defer func() { s.finish(i, cancelled) }()
	if err != nil {
		return
	}
	if err := json.Unmarshal(body, req); err != nil {
		cancelled = false
		fail(w, http.StatusBadRequest, "invalid_request_error", "bad JSON: "+err.Error())
		return
	}
	cancelled = !answer()
}

// overWindow is vLLM's refusal of a request over ContextWindow, or "".
// The prompt counts a token per 4 bytes of message text, as the
// cl100k-style tokenizers of local models roughly do.
func (s *Server) overWindow(req *chatRequest) string {
	window := s.opts.ContextWindow
	if window <= 0 {
		return ""
	}
	prompt := windowPrompt(req)
	if prompt >= window {
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. None", window, prompt)
	}
	if req.MaxTokens != nil && prompt+*req.MaxTokens > window {
		return fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d). None", *req.MaxTokens, window, prompt, *req.MaxTokens, window, prompt)
	}
	return ""
}

// windowPrompt is the prompt as a stub with a window counts it: a token
// per 4 bytes of message text and 4 a message.
func windowPrompt(req *chatRequest) int {
	return (len(messagesText(req.Messages))+3)/4 + 4*len(req.Messages)
}

func decide(req *chatRequest) answer {
	a := answer{finish: "stop", promptTokens: countTokens(messagesText(req.Messages))}
	last := lastUserText(req.Messages)
	switch {
	case strings.Contains(last, "stub:fixture:"):
		name := strings.Fields(last[strings.Index(last, "stub:fixture:")+len("stub:fixture:"):])
		if len(name) > 0 {
			a.fixture = name[0]
		}
	case offers(req, "web_search") && !noTools(req.ToolChoice) && searchAgain(req, last):
		a.calls = []toolCall{searchCall(req, last)}
	case strings.Contains(last, "stub:websearch") && offers(req, "WebSearch") && !called(req, "WebSearch"):
		q, _ := json.Marshal(map[string]string{"query": markerArg(last, "stub:websearch")})
		a.calls = []toolCall{{ID: "call_stub_websearch", Name: "WebSearch", Arguments: string(q)}}
	case strings.Contains(last, "stub:websearch") && offers(req, "ToolSearch") && !called(req, "ToolSearch") && !called(req, "WebSearch"):
		a.calls = []toolCall{{ID: "call_stub_toolsearch", Name: "ToolSearch", Arguments: `{"query":"select:WebSearch","max_results":1}`}}
	case strings.Contains(last, "stub:parallel") && len(req.Tools) > 0:
		a.calls = []toolCall{makeCall(req.Tools[0], "call_stub_1"), makeCall(req.Tools[0], "call_stub_2")}
		a.calls[1].Arguments = strings.Replace(a.calls[1].Arguments, "stub-", "stub2-", -1)
	case asksForSummary(last):
		a.text = summaryOf(req)
	case hasSummary(last):
		a.text = "Continuing from the summary: " + clip(last[strings.Index(last, summaryMark):], 120)
	case strings.Contains(last, "stub:shell") && len(req.Tools) > 0 && !hasToolResult(req.Messages):
		a.calls = []toolCall{shellCall(req, last[strings.Index(last, "stub:shell")+len("stub:shell"):])}
	case (strings.Contains(last, "stub:tool") || wantsTool(req.ToolChoice)) && len(req.Tools) > 0:
		a.calls = []toolCall{makeCall(pickTool(req), "call_stub_1")}
	case strings.Contains(last, "stub:reasoning_content"):
		a.reasoning, a.reasoningField = "The user wants a greeting.", "reasoning_content"
		a.text = "Hello!"
	case strings.Contains(last, "stub:reasoning"):
		a.reasoning, a.reasoningField = "The user wants a greeting.", "reasoning"
		a.text = "Hello!"
	case strings.Contains(last, "stub:error-midstream"):
		a.text, a.failMidstream = "Start", true
	case strings.Contains(last, "stub:die"):
		a.text, a.die = "Start of an answer that never ends", true
	case hasToolResult(req.Messages):
		a.text = "Got the tool result: " + clip(toolResultText(req.Messages), 200)
	default:
		a.text = "Hello from stub-backend. You said: " + clip(last, 80)
	}
	// stub:thinking puts a thinking step before any other answer (tool
	// calls included), as a thinking model does.
	if strings.Contains(last, "stub:thinking") && a.reasoning == "" {
		a.reasoning, a.reasoningField = "Two calls are needed.", "reasoning_content"
	}
	if len(a.calls) > 0 {
		a.finish = "tool_calls"
	}
	if req.MaxTokens != nil && *req.MaxTokens > 0 && a.fixture == "" {
		words := strings.SplitAfter(a.text, " ")
		if len(a.calls) == 0 && len(words) > *req.MaxTokens {
			a.text = strings.Join(words[:*req.MaxTokens], "")
			a.finish = "length"
		}
	}
	return a
}

// shellCall calls the client's shell tool (Codex's exec_command,
// shell_command or shell) with the command that follows "stub:shell" on its
// line; without such a tool, the first tool as stub:tool does.
func shellCall(req *chatRequest, rest string) toolCall {
	cmd, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	for _, t := range req.Tools {
		var args any
		switch t.Function.Name {
		case "exec_command":
			args = map[string]string{"cmd": cmd}
		case "shell_command", "Bash": // Codex's; the coding client's
			args = map[string]string{"command": cmd}
		case "shell":
			args = map[string][]string{"command": {"bash", "-lc", cmd}}
		default:
			continue
		}
		b, _ := json.Marshal(args)
		return toolCall{ID: "call_stub_shell", Name: t.Function.Name, Arguments: string(b)}
	}
	return makeCall(req.Tools[0], "call_stub_1")
}

// offers reports whether the request offers a tool of that name.
func offers(req *chatRequest, name string) bool {
	for _, t := range req.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// called reports whether an assistant turn of the history called name.
func called(req *chatRequest, name string) bool {
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.Function.Name == name {
				return true
			}
		}
	}
	return false
}

func noTools(choice json.RawMessage) bool { return string(choice) == `"none"` }

// searchAgain says whether a model offered web_search calls it now: once,
// before any result; every turn for stub:search-repeat (the same query)
// and stub:search-many (a new query each time).
func searchAgain(req *chatRequest, last string) bool {
	if strings.Contains(last, "stub:search-repeat") || strings.Contains(last, "stub:search-many") {
		return true
	}
	return !called(req, "web_search")
}

// searchCall calls web_search with the query after "stub:search" (or
// Claude Code's "Perform a web search for the query: …"), or the whole
// text; stub:search-many numbers its queries.
func searchCall(req *chatRequest, last string) toolCall {
	var q string
	switch {
	case strings.Contains(last, "stub:search-many"):
		n := 1
		for _, m := range req.Messages {
			if m.Role == "tool" {
				n++
			}
		}
		q = fmt.Sprintf("%s %d", markerArg(last, "stub:search-many"), n)
	case strings.Contains(last, "stub:search-repeat"):
		q = markerArg(last, "stub:search-repeat")
	case strings.Contains(last, "stub:search"):
		q = markerArg(last, "stub:search")
	case strings.Contains(last, "the query:"):
		q = markerArg(last, "the query:")
	default:
		q = strings.TrimSpace(last)
	}
	b, _ := json.Marshal(map[string]string{"query": q})
	return toolCall{ID: "call_stub_search", Name: "web_search", Arguments: string(b)}
}

// markerArg is the rest of the line after marker, trimmed.
func markerArg(text, marker string) string {
	rest := text[strings.Index(text, marker)+len(marker):]
	line, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
	return strings.TrimSpace(line)
}

func wantsTool(choice json.RawMessage) bool {
	s := string(choice)
	return s == `"required"` || strings.Contains(s, `"function"`)
}

func pickTool(req *chatRequest) chatTool {
	var named struct {
		Function struct{ Name string } `json:"function"`
	}
	if json.Unmarshal(req.ToolChoice, &named) == nil {
		for _, t := range req.Tools {
			if t.Function.Name == named.Function.Name {
				return t
			}
		}
	}
	return req.Tools[0]
}

// makeCall builds arguments that fit the tool's schema: every string
// property gets "stub-<name>", numbers 1, booleans true.
func makeCall(t chatTool, id string) toolCall {
	var schema struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	json.Unmarshal(t.Function.Parameters, &schema)
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		key, _ := json.Marshal(n)
		b.Write(key)
		b.WriteString(": ")
		switch strings.Trim(string(schema.Properties[n].Type), `"`) {
		case "number", "integer":
			b.WriteString("1")
		case "boolean":
			b.WriteString("true")
		case "array":
			b.WriteString("[]")
		case "object":
			b.WriteString("{}")
		default:
			v, _ := json.Marshal("stub-" + n)
			b.Write(v)
		}
	}
	b.WriteByte('}')
	return toolCall{ID: id, Name: t.Function.Name, Arguments: b.String()}
}

// contentText flattens a Chat content value: a string or a list of parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func lastUserText(msgs []chatMessage) string { return lastText(msgs, "user") }

func hasToolResult(msgs []chatMessage) bool {
	return len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" || (len(msgs) > 1 && msgs[len(msgs)-2].Role == "tool")
}

func toolResultText(msgs []chatMessage) string { return lastText(msgs, "tool") }

// lastText is the text of the last message in role, or "".
func lastText(msgs []chatMessage, role string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == role {
			return contentText(msgs[i].Content)
		}
	}
	return ""
}

func messagesText(msgs []chatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(contentText(m.Content))
		b.WriteByte(' ')
	}
	return b.String()
}

// countTokens is the stub's tokenizer: one token per word or punctuation run.
func countTokens(s string) int {
	n := len(strings.Fields(s))
	if n == 0 && s != "" {
		n = 1
	}
	return n
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

func (s *Server) respond(w http.ResponseWriter, req *chatRequest, a *answer) {
	if a.fixture != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "stub:fixture replays streams only: set stream true")
		return
	}
	msg := map[string]any{"role": "assistant", "content": a.text}
	if a.reasoning != "" {
		msg[a.reasoningField] = a.reasoning
	}
	if len(a.calls) > 0 {
		msg["content"] = nil
		calls := make([]map[string]any, len(a.calls))
		for i, c := range a.calls {
			calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		}
		msg["tool_calls"] = calls
	}
	completion := countTokens(a.text) + len(a.calls)*8
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-stub", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": a.finish}},
		"usage":   map[string]any{"prompt_tokens": a.promptTokens, "completion_tokens": completion, "total_tokens": a.promptTokens + completion},
	})
}

// stream writes the answer as Chat chunks; it reports whether the stream
// ran to its end.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *chatRequest, a *answer) bool {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if a.fixture != "" {
		b, err := fixtures.Backend(a.fixture)
		if err != nil {
			fmt.Fprintf(w, "data: {\"error\":{\"message\":\"stub: no fixture %s\",\"type\":\"invalid_request_error\"}}\n\n", a.fixture)
			return true
		}
		w.Write(b)
		return true
	}
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return sleep(r, s.opts.EventDelay)
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": req.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return false
	}
	if a.reasoning != "" {
		for _, piece := range split(a.reasoning, 2) {
			if !send(chunk(map[string]any{a.reasoningField: piece}, nil)) {
				return false
			}
		}
	}
	for _, piece := range s.textPieces(a.text) {
		if !send(chunk(map[string]any{"content": piece}, nil)) {
			return false
		}
	}
	if a.failMidstream {
		return send(map[string]any{"error": map[string]any{"message": "stub: failure mid-stream", "type": "server_error", "code": 500}})
	}
	if a.die {
		panic(http.ErrAbortHandler)
	}
	for _, d := range callDeltas(a.calls) {
		if !send(chunk(map[string]any{"tool_calls": []any{d}}, nil)) {
			return false
		}
	}
	if !send(chunk(map[string]any{}, a.finish)) {
		return false
	}
	completion := countTokens(a.text) + len(a.calls)*8
	if !send(map[string]any{"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": req.Model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": a.promptTokens, "completion_tokens": completion, "total_tokens": a.promptTokens + completion}}) {
		return false
	}
	_, err := io.WriteString(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
	return err == nil
}

// callDeltas splits each call's arguments in two fragments, interleaving
// the calls after their first fragments as servers do.
func callDeltas(calls []toolCall) []map[string]any {
	var first, rest []map[string]any
	for i, c := range calls {
		half := len(c.Arguments) / 2
		first = append(first, map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Arguments[:half]}})
		rest = append(rest, map[string]any{"index": i, "function": map[string]any{"arguments": c.Arguments[half:]}})
	}
	return append(first, rest...)
}

// textPieces splits a text answer into the events of its stream: at most
// Events, exactly Events with PadEvents.
func (s *Server) textPieces(text string) []string {
	n := s.opts.Events
	if s.opts.PadEvents && text != "" && utf8.RuneCountInString(text) < n {
		r := []rune(text)
		for len(r) < n {
			r = append(r, r...)
		}
		text = string(r[:n])
	}
	return split(text, n)
}

// split cuts s into about n pieces on rune boundaries.
func split(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	size := (len(r) + n - 1) / n
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}
