package translate

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// RawArgumentsKey is the key under which a tool_use input keeps tool-call
// arguments that are not a JSON object: {"raw_arguments": "<the text>"}.
// The client then reports invalid tool parameters to the model, which can
// retry, instead of the whole answer failing.
const RawArgumentsKey = "raw_arguments"

// MessagesOnChatResponse translates a non-stream Chat response into a Messages
// response: id "msg_"+…, model = alias, content in order thinking (from
// reasoning_content or reasoning), text, one tool_use per tool call, the
// stop reason mapped (MapFinishReason), usage always present. Only the first
// choice is used. A body that is not a Chat response is an error (not a
// *RequestError: the backend is at fault).
func MessagesOnChatResponse(chatBody []byte, alias string) ([]byte, error) {
	out, _, err := MessagesOnChatResponseWithUsage(chatBody, alias)
	return out, err
}

// MessagesOnChatResponseWithUsage is MessagesOnChatResponse that also returns the backend's
// usage (nil when it sent none), read in the same decode.
func MessagesOnChatResponseWithUsage(chatBody []byte, alias string) ([]byte, *chat.Usage, error) {
	var resp chat.Response
	if err := json.Unmarshal(chatBody, &resp, decodeOpts); err != nil {
		return nil, nil, fmt.Errorf("translate: backend response is not a chat completion: %w", err)
	}
	out := messages.Response{
		ID:      MessageID(resp.ID),
		Type:    "message",
		Role:    "assistant",
		Model:   alias,
		Content: []messages.ResponseBlock{},
	}
	stop, seq := messages.StopEndTurn, ""
	if len(resp.Choices) > 0 {
		ch := &resp.Choices[0]
		m := &ch.Message
		reasoning := m.ReasoningContent
		if reasoning == "" {
			reasoning = m.Reasoning
		}
		if reasoning != "" {
			out.Content = append(out.Content, messages.ResponseBlock{Type: messages.BlockThinking, Text: reasoning})
		}
		// A refusal is text, after any content, as the stream gives it.
		text := m.Refusal
		if m.Content != nil {
			text = *m.Content + m.Refusal
		}
		if text != "" {
			out.Content = append(out.Content, messages.ResponseBlock{Type: messages.BlockText, Text: text})
		}
		ids := make(map[string]bool, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			id := tc.ID
			if id == "" || ids[id] {
				id = NewToolUseID() // none, or a second call under a used id
			}
			ids[id] = true
			out.Content = append(out.Content, messages.ResponseBlock{
				Type:  messages.BlockToolUse,
				ID:    id,
				Name:  tc.Function.Name,
				Input: ToolInput(tc.Function.Arguments),
			})
		}
		stop, seq = stopReason(ch.FinishReason, ch.StopReason, len(m.ToolCalls) > 0, m.Refusal != "")
	}
	out.StopReason = &stop
	if stop == messages.StopStopSequence {
		out.StopSequence = &seq
	}
	out.Usage = MapUsage(resp.Usage)
	b, err := json.Marshal(&out, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return nil, nil, fmt.Errorf("translate: encoding the message: %w", err)
	}
	return b, resp.Usage, nil
}

// MapFinishReason maps a Chat finish_reason to a Messages stop_reason:
// stop → end_turn, or stop_sequence when the backend names the stop string
// that ended the answer (vLLM's non-standard choices[].stop_reason, a
// string; a number there is a stop token id, not a sequence); length →
// max_tokens; tool_calls and function_call → tool_use; content_filter →
// refusal. An answer that carries tool calls but says stop (or nothing), as
// some servers do, ends with tool_use so the client runs the tools.
// Anything else is end_turn. seq is the matched stop sequence.
func MapFinishReason(finish string, vllmStop jsontext.Value, hasToolCalls bool) (reason, seq string) {
	switch finish {
	case "length":
		return messages.StopMaxTokens, ""
	case "tool_calls", "function_call":
		return messages.StopToolUse, ""
	case "content_filter":
		return messages.StopRefusal, ""
	}
	if hasToolCalls {
		return messages.StopToolUse, ""
	}
	if finish == "stop" && vllmStop.Kind() == '"' {
		var s string
		if json.Unmarshal(vllmStop, &s) == nil && s != "" {
			return messages.StopStopSequence, s
		}
	}
	return messages.StopEndTurn, ""
}

// stopReason is MapFinishReason for an answer that may hold a refusal:
// a refusal ends it with "refusal", unless it has tool calls to run.
func stopReason(finish string, vllmStop jsontext.Value, hasToolCalls, refused bool) (reason, seq string) {
	reason, seq = MapFinishReason(finish, vllmStop, hasToolCalls)
	if refused && reason != messages.StopToolUse {
		return messages.StopRefusal, ""
	}
	return reason, seq
}

// MapUsage maps Chat usage to Messages usage: input_tokens is the prompt
// less what the backend served from its cache, cache_read_input_tokens that
// cached part, output_tokens the completion. A nil usage is all zeros.
func MapUsage(u *chat.Usage) messages.Usage {
	if u == nil {
		return messages.Usage{}
	}
	cached := u.CachedTokens()
	in := u.PromptTokens - cached
	if in < 0 {
		in = 0
	}
	return messages.Usage{InputTokens: in, OutputTokens: u.CompletionTokens, CacheReadInputTokens: cached}
}

// ToolInput turns the arguments text of a tool call into a tool_use input:
// a JSON object as it is; empty arguments as {}; an object that was encoded
// twice (a JSON string holding an object) unwrapped; anything else kept as
// text under RawArgumentsKey.
func ToolInput(args string) jsontext.Value {
	a := strings.TrimSpace(args)
	if a == "" {
		return jsontext.Value("{}")
	}
	v := jsontext.Value(a)
	if v.IsValid(jsontext.AllowDuplicateNames(true)) {
		switch v.Kind() {
		case '{':
			return v
		case '"':
			var s string
			if json.Unmarshal(v, &s) == nil {
				w := jsontext.Value(strings.TrimSpace(s))
				if w.Kind() == '{' && w.IsValid(jsontext.AllowDuplicateNames(true)) {
					return w
				}
			}
		}
	}
	b := jsonquote.Append([]byte(`{"`+RawArgumentsKey+`":`), jsontext.Value(bytes.ToValidUTF8([]byte(args), []byte("\uFFFD"))))
	return append(b, '}')
}

// MessageID derives a Messages id from a Chat completion id: "msg_" and
// the id without its "chatcmpl-" prefix, or a random one.
func MessageID(chatID string) string {
	id := strings.TrimPrefix(chatID, "chatcmpl-")
	if id == "" {
		return "msg_" + randomHex(12)
	}
	return "msg_" + id
}

// NewToolUseID makes an id for a tool call that came without one.
func NewToolUseID() string { return "toolu_" + randomHex(12) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
