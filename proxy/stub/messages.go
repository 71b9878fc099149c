package stub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// With Options.Protocol "messages" the stub also serves the Messages
// format at POST /v1/messages (and /v1/messages/count_tokens), as
// llama-server, vLLM, SGLang, Ollama and LM Studio do: the same answers,
// chosen by the same markers, rendered as a message or as its events
// (message_start, a ping, one block per thinking, text and tool call,
// message_delta, message_stop). A thinking block carries the signature
// "stub-signature".

// Protocols the stub can serve besides Chat Completions.
const (
	ProtocolChat     = "chat"
	ProtocolMessages = "messages"
)

type messagesRequest struct {
	Model      string            `json:"model"`
	System     json.RawMessage   `json:"system"`
	Messages   []messagesMessage `json:"messages"`
	MaxTokens  *int              `json:"max_tokens"`
	Stream     bool              `json:"stream"`
	Tools      []messagesTool    `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

type messagesMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type messagesTool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type messagesBlock struct {
	Type      string          `json:"type"`
	Name      string          `json:"name"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// asChat restates a Messages request as the Chat request decide reads:
// tool results become tool messages, tools and tool_choice their Chat
// forms.
func (m *messagesRequest) asChat() chatRequest {
	req := chatRequest{Model: m.Model, MaxTokens: m.MaxTokens, Stream: m.Stream}
	if len(m.System) > 0 {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: m.System})
	}
	for _, msg := range m.Messages {
		var blocks []messagesBlock
		if json.Unmarshal(msg.Content, &blocks) != nil {
			req.Messages = append(req.Messages, chatMessage{Role: msg.Role, Content: msg.Content})
			continue
		}
		text := []map[string]string{}
		results := false
		var calls chatMessage
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				var c chatToolCall
				c.Function.Name = b.Name
				calls.ToolCalls = append(calls.ToolCalls, c)
			case "text":
				text = append(text, map[string]string{"type": "text", "text": b.Text})
			case "tool_result":
				req.Messages = append(req.Messages, chatMessage{Role: "tool", Content: b.Content, ToolCallID: b.ToolUseID})
				results = true
			}
		}
		// A turn of tool results alone still ends with a user turn, so the
		// user text of an earlier turn does not choose the answer.
		if len(text) > 0 || results || len(calls.ToolCalls) > 0 {
			raw, _ := json.Marshal(text)
			req.Messages = append(req.Messages, chatMessage{Role: msg.Role, Content: raw, ToolCalls: calls.ToolCalls})
		}
	}
	for _, t := range m.Tools {
		var ct chatTool
		ct.Function.Name, ct.Function.Parameters = t.Name, t.InputSchema
		req.Tools = append(req.Tools, ct)
	}
	if c := m.ToolChoice; c != nil {
		switch c.Type {
		case "any":
			req.ToolChoice = json.RawMessage(`"required"`)
		case "none":
			req.ToolChoice = json.RawMessage(`"none"`)
		case "tool":
			req.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
		}
	}
	return req
}

func writeMessagesError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	var m messagesRequest
	s.serve(w, r, &m, writeMessagesError, func() (done bool) {
		if m.Model == "" || len(m.Messages) == 0 || m.MaxTokens == nil {
			writeMessagesError(w, http.StatusBadRequest, "invalid_request_error", "model, messages and max_tokens are required")
			return true
		}
		now := time.Now()
		if s.loading(now) {
			writeMessagesError(w, http.StatusServiceUnavailable, "overloaded_error", "Loading model")
			return true
		}
		if !sleep(r, s.coldWait(now)) || !sleep(r, s.opts.FirstTokenDelay) {
			return false
		}
		req := m.asChat()
		a := decide(&req)
		writeCallsAsText(&a, s.textCallsFormat(&req))
		if a.fixture != "" {
			writeMessagesError(w, http.StatusBadRequest, "invalid_request_error", "stub:fixture replays Chat streams only")
			return true
		}
		if m.Stream {
			return s.messagesStream(w, r, &m, &a)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(messageOf(&m, &a))
		return true
	})
}

func (s *Server) countMessageTokens(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	i := s.record(r, body)
	defer s.finish(i, false)
	var m messagesRequest
	if err := json.Unmarshal(body, &m); err != nil || m.Model == "" {
		writeMessagesError(w, http.StatusBadRequest, "invalid_request_error", "model and messages are required")
		return
	}
	req := m.asChat()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]int{"input_tokens": countTokens(messagesText(req.Messages))})
}

var stopReasons = map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}

func outputTokens(a *answer) int {
	return countTokens(a.reasoning) + countTokens(a.text) + len(a.calls)*8
}

// messageOf renders an answer as a non-stream Messages response.
func messageOf(m *messagesRequest, a *answer) map[string]any {
	content := []map[string]any{}
	if a.reasoning != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": a.reasoning, "signature": "stub-signature"})
	}
	if a.text != "" {
		content = append(content, map[string]any{"type": "text", "text": a.text})
	}
	for _, c := range a.calls {
		content = append(content, map[string]any{"type": "tool_use", "id": toolUseID(c.ID), "name": c.Name, "input": json.RawMessage(c.Arguments)})
	}
	return map[string]any{
		"id": "msg_stub", "type": "message", "role": "assistant", "model": m.Model, "content": content,
		"stop_reason": stopReasons[a.finish], "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": a.promptTokens, "output_tokens": outputTokens(a)},
	}
}

// toolUseID turns the stub's Chat call id (call_stub_N) into a tool_use id.
func toolUseID(id string) string { return "toolu_" + id[len("call_"):] }

// messagesStream writes the answer as Messages events; it reports whether
// the stream ran to its end.
func (s *Server) messagesStream(w http.ResponseWriter, r *http.Request, m *messagesRequest, a *answer) bool {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(name string, v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return sleep(r, s.opts.EventDelay)
	}
	index := 0
	block := func(start map[string]any, deltas []map[string]any) bool {
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start}) {
			return false
		}
		for _, d := range deltas {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d}) {
				return false
			}
		}
		index++
		return send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index - 1})
	}
	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_stub", "type": "message", "role": "assistant", "model": m.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": a.promptTokens, "output_tokens": 1}}}) {
		return false
	}
	if !send("ping", map[string]any{"type": "ping"}) {
		return false
	}
	if a.reasoning != "" {
		var deltas []map[string]any
		for _, piece := range split(a.reasoning, 2) {
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": piece})
		}
		deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": "stub-signature"})
		if !block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, deltas) {
			return false
		}
	}
	if a.text != "" {
		var deltas []map[string]any
		for _, piece := range s.textPieces(a.text) {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": piece})
		}
		if a.failMidstream {
			for _, d := range deltas {
				if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d}) {
					return false
				}
			}
			return send("error", map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "stub: failure mid-stream"}})
		}
		if a.die {
			send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
			panic(http.ErrAbortHandler)
		}
		if !block(map[string]any{"type": "text", "text": ""}, deltas) {
			return false
		}
	}
	for _, c := range a.calls {
		half := len(c.Arguments) / 2
		deltas := []map[string]any{
			{"type": "input_json_delta", "partial_json": c.Arguments[:half]},
			{"type": "input_json_delta", "partial_json": c.Arguments[half:]},
		}
		if !block(map[string]any{"type": "tool_use", "id": toolUseID(c.ID), "name": c.Name, "input": map[string]any{}}, deltas) {
			return false
		}
	}
	if !send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReasons[a.finish], "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": a.promptTokens, "output_tokens": outputTokens(a)}}) {
		return false
	}
	return send("message_stop", map[string]any{"type": "message_stop"})
}
