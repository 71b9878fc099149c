package translate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// ChatOnMessagesResponse translates a non-stream Messages response into a
// Chat Completions response (the reverse of MessagesOnChatResponse): id
// "chatcmpl-"+…, model = alias, one choice whose message has the text
// blocks joined as content (null when there is none), the thinking blocks
// joined as reasoning_content, and one tool call per tool_use block (its
// input as the arguments text); finish_reason from the stop reason
// (MapStopReason); usage with the cached prompt tokens counted in
// prompt_tokens and named in prompt_tokens_details. created is the Unix
// time the caller stamps. A body that is not a Messages response is an
// error (not a *RequestError: the backend is at fault).
func ChatOnMessagesResponse(body []byte, alias string, created int64) ([]byte, *chat.Usage, error) {
	var resp messages.Response
	if err := json.Unmarshal(body, &resp, decodeOpts, jsontext.AllowInvalidUTF8(true)); err != nil {
		return nil, nil, fmt.Errorf("translate: backend response is not a message: %w", err)
	}
	if resp.Type != "" && resp.Type != "message" {
		return nil, nil, fmt.Errorf("translate: backend response is a %q, not a message", resp.Type)
	}
	var text, reasoning strings.Builder
	var calls []byte
	nCalls := 0
	for _, b := range resp.Content {
		switch b.Type {
		case messages.BlockText:
			text.WriteString(b.Text)
		case messages.BlockThinking:
			reasoning.WriteString(b.Text)
		case messages.BlockToolUse:
			if nCalls > 0 {
				calls = append(calls, ',')
			}
			calls = appendToolCall(calls, -1, b.ID, b.Name, argumentsOf(b.Input))
			nCalls++
		}
	}
	stop := ""
	if resp.StopReason != nil {
		stop = *resp.StopReason
	}
	out := append([]byte(`{"id":`), jsonquote.Append(nil, ChatID(resp.ID))...)
	out = append(out, `,"object":"chat.completion","created":`...)
	out = strconv.AppendInt(out, created, 10)
	out = append(out, `,"model":`...)
	out = jsonquote.Append(out, alias)
	out = append(out, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if text.Len() > 0 || nCalls == 0 {
		out = jsonquote.Append(out, text.String())
	} else {
		out = append(out, "null"...)
	}
	if reasoning.Len() > 0 {
		out = append(out, `,"reasoning_content":`...)
		out = jsonquote.Append(out, reasoning.String())
	}
	if nCalls > 0 {
		out = append(out, `,"tool_calls":[`...)
		out = append(out, calls...)
		out = append(out, ']')
	}
	out = append(out, `},"finish_reason":`...)
	out = jsonquote.Append(out, MapStopReason(stop, nCalls > 0))
	out = append(out, `}],"usage":`...)
	out = appendChatUsage(out, resp.Usage)
	return append(out, '}'), ChatUsage(resp.Usage), nil
}

// MapStopReason maps a Messages stop_reason to a Chat finish_reason:
// end_turn, stop_sequence and pause_turn → stop; max_tokens and
// model_context_window_exceeded → length; tool_use → tool_calls; refusal →
// content_filter. A message with tool calls ends in tool_calls whatever it
// says, so the client runs them.
func MapStopReason(reason string, hasToolCalls bool) string {
	switch {
	case reason == messages.StopToolUse || hasToolCalls && reason != messages.StopMaxTokens:
		return "tool_calls"
	case reason == messages.StopMaxTokens || reason == "model_context_window_exceeded":
		return "length"
	case reason == messages.StopRefusal:
		return "content_filter"
	}
	return "stop"
}

// ChatID derives a Chat completion id from a Messages id: "chatcmpl-" and
// the id without its "msg_" prefix, or a random one. An id that already
// is one (llama-server's /v1/messages answers "chatcmpl-…") stays as it is.
func ChatID(messageID string) string {
	if strings.HasPrefix(messageID, "chatcmpl-") && len(messageID) > len("chatcmpl-") {
		return messageID
	}
	id := strings.TrimPrefix(messageID, "msg_")
	if id == "" {
		id = randomHex(12)
	}
	return "chatcmpl-" + id
}

// argumentsOf renders a tool_use input as the arguments text of a tool call.
func argumentsOf(input jsontext.Value) string {
	if len(input) == 0 {
		return "{}"
	}
	v := jsontext.Value(append([]byte(nil), input...))
	if v.Compact() != nil {
		return string(input)
	}
	return string(v)
}

// appendToolCall appends a Chat tool call; index < 0 leaves out the index
// (a non-stream message's calls have none).
func appendToolCall(dst []byte, index int, id, name, args string) []byte {
	dst = append(dst, '{')
	if index >= 0 {
		dst = append(dst, `"index":`...)
		dst = strconv.AppendInt(dst, int64(index), 10)
		dst = append(dst, ',')
	}
	dst = append(dst, `"id":`...)
	dst = jsonquote.Append(dst, id)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = jsonquote.Append(dst, name)
	dst = append(dst, `,"arguments":`...)
	dst = jsonquote.Append(dst, args)
	return append(dst, "}}"...)
}

// ChatUsage gives Messages usage in the Chat form: the prompt is the
// input and both cache counts, the cached part named in
// prompt_tokens_details.
func ChatUsage(u messages.Usage) *chat.Usage {
	c := chatUsage(u)
	return &c
}

func chatUsage(u messages.Usage) chat.Usage {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	return chat.Usage{PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens,
		PromptTokensDetails: &chat.PromptTokensDetails{CachedTokens: u.CacheReadInputTokens}}
}

// appendChatUsage appends Messages usage as Chat usage (ChatUsage).
func appendChatUsage(dst []byte, u messages.Usage) []byte {
	c := chatUsage(u)
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.PromptTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.CompletionTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.TotalTokens), 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(c.PromptTokensDetails.CachedTokens), 10)
	return append(dst, "}}"...)
}
