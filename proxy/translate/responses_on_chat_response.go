package translate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// NewResponseID makes the id of a Responses answer: "resp_" and 24 hex
// digits. The ids of its output items derive from it.
func NewResponseID() string { return "resp_" + randomHex(12) }

// ResponsesOnChatResponse translates a non-stream Chat response into a Responses
// response object: id responseID, model = alias, output in order a
// reasoning item (from reasoning_content or reasoning, as reasoning_text
// content), one message whose content is the text as an output_text part
// and the backend's refusal as a refusal part, then one function_call per tool
// call (or a custom_tool_call with the raw input, for a function that
// stands for a custom tool; see ResponsesOnChatRequest), its arguments a JSON
// object as ToolInput makes them and its call_id unique in the response (a
// call without an id, or under one an earlier call has, gets
// call_<item id>), as the stream gives them; status completed, or
// incomplete with the reason when the backend stopped at its token limit
// (max_output_tokens) or its content filter; usage always present. Only the
// first choice is used. It also returns the backend's usage (nil when it
// sent none), read in the same decode. A body that is not a Chat response
// is an error (the backend is at fault, not the client).
func ResponsesOnChatResponse(chatBody []byte, alias, responseID string, createdAt int64, call *ResponsesCall) ([]byte, *chat.Usage, error) {
	var resp chat.Response
	if err := json.Unmarshal(chatBody, &resp, decodeOpts); err != nil {
		return nil, nil, fmt.Errorf("translate: backend response is not a chat completion: %w", err)
	}
	out := newResponse(responseID, alias, createdAt, responses.StatusCompleted, call)
	ids := itemIDs{base: strings.TrimPrefix(responseID, "resp_")}
	finish := ""
	if len(resp.Choices) > 0 {
		ch := &resp.Choices[0]
		m := &ch.Message
		finish = ch.FinishReason
		reasoning := m.ReasoningContent
		if reasoning == "" {
			reasoning = m.Reasoning
		}
		if reasoning != "" {
			out.Output = append(out.Output, reasoningItem(ids.next("rs"), reasoning))
		}
		var parts []responses.OutputPart
		if m.Content != nil && *m.Content != "" {
			parts = append(parts, responses.NewOutputText(*m.Content))
		}
		if m.Refusal != "" {
			parts = append(parts, responses.NewRefusal(m.Refusal))
		}
		if len(parts) > 0 {
			out.Output = append(out.Output, messageItem(ids.next("msg"), responses.StatusCompleted, parts...))
		}
		var callIDs map[string]bool
		if len(m.ToolCalls) > 0 {
			callIDs = make(map[string]bool, len(m.ToolCalls))
		}
		for _, tc := range m.ToolCalls {
			id, callID := ids.next(""), tc.ID
			if callID == "" || callIDs[callID] {
				// None, or a second call under a used id: one of its own.
				for callID = "call" + id; callIDs[callID]; callID += "_" {
				}
			}
			callIDs[callID] = true
			out.Output = append(out.Output, callItem(call, id, callID, tc.Function.Name, tc.Function.Arguments, responses.StatusCompleted))
		}
	}
	setFinish(&out, finish)
	out.Usage = responsesUsage(resp.Usage)
	// Written into a pooled buffer (the caller may give it back), about
	// the size of the answer and the members around it.
	return appendResponse(bufpool.Get(len(chatBody)+1024), &out), resp.Usage, nil
}

// newResponse is the response object before its output, with what it
// echoes of the request.
func newResponse(id, alias string, createdAt int64, status string, call *ResponsesCall) responses.Response {
	var maxOut *int64
	if call != nil {
		maxOut = call.maxOutputTokens
	}
	return responses.Response{
		MaxOutputTokens:   maxOut,
		ID:                id,
		Object:            "response",
		CreatedAt:         createdAt,
		Status:            status,
		Model:             alias,
		Output:            []responses.OutputItem{},
		ParallelToolCalls: true,
		ToolChoice:        "auto",
		Tools:             []struct{}{},
		Truncation:        "disabled",
	}
}

// setFinish sets the status from the backend's finish reason.
func setFinish(r *responses.Response, finish string) {
	switch finish {
	case "length":
		r.Status = responses.StatusIncomplete
		r.IncompleteDetails = &responses.IncompleteDetails{Reason: responses.ReasonMaxOutputTokens}
	case "content_filter":
		r.Status = responses.StatusIncomplete
		r.IncompleteDetails = &responses.IncompleteDetails{Reason: responses.ReasonContentFilter}
	default:
		r.Status = responses.StatusCompleted
	}
}

// itemIDs numbers the output items of one response: msg_<base>_0,
// rs_<base>_1, fc_<base>_2…
type itemIDs struct {
	base string
	n    int
}

func (g *itemIDs) next(prefix string) string {
	id := prefix + "_" + g.base + "_" + strconv.Itoa(g.n)
	g.n++
	return id
}

// messageItem is a message item whose content is parts once completed,
// empty while in progress.
func messageItem(id, status string, parts ...responses.OutputPart) responses.OutputItem {
	content := []responses.OutputPart{}
	if status == responses.StatusCompleted {
		content = append(content, parts...)
	}
	return responses.OutputItem{Type: responses.ItemMessage, ID: id, Status: status, Role: "assistant", Content: &content}
}

func reasoningItem(id, text string) responses.OutputItem {
	content := []responses.OutputPart{}
	if text != "" {
		content = append(content, responses.OutputPart{Type: "reasoning_text", Text: text})
	}
	return responses.OutputItem{Type: responses.ItemReasoning, ID: id, Summary: &[]responses.OutputPart{}, Content: &content}
}

// callItem is the item of one tool call. id is the item id without its
// prefix (fc_ or ctc_, added here); a call without a backend id gets
// call_<id>. args are the call's arguments as the backend sent them: once
// completed, a function_call's are a JSON object (ToolInput), a
// custom_tool_call's input is read from them (customInput).
func callItem(call *ResponsesCall, id, callID, chatName, args, status string) responses.OutputItem {
	namespace, name, custom := call.callName(chatName)
	if callID == "" {
		callID = "call" + id
	}
	if custom {
		input := customInput(args)
		return responses.OutputItem{Type: responses.ItemCustomToolCall, ID: "ctc" + id, Status: status, CallID: callID, Name: name, Namespace: namespace, Input: &input}
	}
	if status == responses.StatusCompleted {
		args = string(ToolInput(args))
	}
	return responses.OutputItem{Type: responses.ItemFunctionCall, ID: "fc" + id, Status: status, CallID: callID, Name: name, Namespace: namespace, Arguments: &args}
}

// customInput reads a custom tool's raw input back from the arguments of
// the Chat function that stands for it: {"input": "…"}. Arguments of
// another shape are passed on as they are, so nothing the model wrote is
// lost.
func customInput(args string) string {
	var v map[string]jsontext.Value
	if json.Unmarshal([]byte(args), &v) == nil && len(v) == 1 {
		var s string
		if raw, ok := v[customInputKey]; ok && json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return args
}

// responsesUsage maps Chat usage; nil is all zeros.
func responsesUsage(u *chat.Usage) *responses.Usage {
	out := &responses.Usage{}
	if u == nil {
		return out
	}
	out.InputTokens = u.PromptTokens
	out.InputTokensDetails.CachedTokens = u.CachedTokens()
	out.OutputTokens = u.CompletionTokens
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	out.TotalTokens = u.TotalTokens
	if out.TotalTokens == 0 {
		out.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return out
}
