// Package translate converts requests and answers between the Messages,
// Responses and Chat Completions formats, and normalizes those that stay
// in their format. It does no I/O: every function takes bytes and returns
// bytes. Files are named <client>_on_<backend>_{request,response,stream}.go
// (the client's format on the backend's) and define
// <Client>On<Backend>{Request,Response,Stream}; each direction's stream is
// one explicit state machine.
//
//   - messages_on_chat_*: a Messages client, a Chat backend
//     (MessagesOnChatRequest; MessagesOnChatResponse; MessagesOnChatStream).
//     _request_blocks and _request_encode hold the request's content
//     blocks and its encoding.
//   - chat_on_messages_*: a Chat client, a Messages backend
//     (ChatOnMessagesRequest; ChatOnMessagesResponse; ChatOnMessagesStream).
//   - responses_on_chat_*: a Responses client, a Chat backend
//     (ResponsesOnChatRequest; ResponsesOnChatResponse; ResponsesOnChatStream).
//   - responses_on_messages_*: a Responses client, a Messages backend,
//     through the Chat format (ResponsesOnMessagesRequest,
//     ResponsesOnMessagesStream).
//   - chat_on_chat_*, messages_on_messages_*: the same-format
//     normalizers, which pass the body through with only the model, the
//     output limit and what the backend cannot take rewritten
//     (ChatOnChatRequest, ChatResponseModel, ChatOnChatStream;
//     MessagesOnMessagesRequest, MessagesResponseModel,
//     MessagesOnMessagesStream).
//
// Beside them: request_read.go reads what every route reads first of a
// request (its body decoded with jsonv2 into its wire type, the errors
// worded; its model resolved to a Target); chat_body.go is the one writer
// of Chat request bodies, which the Messages and Responses translations
// both hand their turns to, with the raw JSON strings its parts are made
// of; chat_stream_lanes.go reads a backend's Chat stream for the two
// stream translators from Chat; members.go finds a
// body's top-level members with the validating scanner
// (internal/jsonscan) and splices the normalizers' edits; tokens.go and
// window.go estimate prompts and fit the output limit to the context
// window.
package translate

import (
	"errors"
	"fmt"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// Target is what the proxy's configuration says about the backend model an
// alias routes to.
type Target struct {
	Alias                   string
	BackendModel            string
	SupportsSystemMessage   bool
	SupportsReasoningEffort bool
	MaxOutputTokens         int // 0: no clamp
	// ContextWindow is the backend model's context window in tokens (0:
	// unknown). A request's max_tokens is clamped to fit beside its
	// estimated prompt (MaxOutputTokens, when set, wins), and a prompt
	// that cannot fit is refused with a *ContextOverflowError.
	ContextWindow int
	// PromptScale, when set, corrects the estimate of the prompt for the
	// window's checks: the backend's count is about PromptScale/1000
	// times the estimate (what it reported for earlier requests).
	PromptScale int
	// NoVision: the backend model cannot read images; each image becomes
	// a short text placeholder.
	NoVision bool
	// DropParams are the top-level members a Messages pass-through
	// removes, comma-separated (a string keeps Target comparable).
	DropParams string
	// TextCalls are the families of tool calls written as text that are
	// recovered from the answer (proxy_params.tool_calls_in_text; 0: off),
	// TextReasoning how reasoning written as text is
	// (proxy_params.reasoning_in_text). See text_calls.go.
	TextCalls     textcall.Set
	TextReasoning textcall.Reasoning
	// Memo is the client's (internal/memo; one for each connection and
	// key): what was computed of the bytes it sent before (the estimates
	// of long texts, the tools text calls read); nil: nothing is
	// remembered. It changes no result, only what is computed again.
	Memo *memo.Memo
}

// Resolver maps the model alias of a request to its Target. Its error is
// returned unchanged (wrapped) by the translating functions, so callers can
// tell an unknown alias from a bad request with errors.As.
//
// The empty alias, which no request names (one without a model is
// refused first), asks what is known of the client before its model: a
// Target with only its Memo. The decode remembers there the schemas it
// validated; a resolver that knows nothing of the client answers it as
// any alias, or with an error, and the decode remembers nothing.
type Resolver func(alias string) (Target, error)

// BackendRequest is a request ready for the backend: its /chat/completions,
// or its /messages for MessagesOnMessagesRequest and ChatOnMessagesRequest.
// Body may come from bufpool (as does ChatResponseModel's answer); a
// body sent to a backend is not given back (upstream lets it go once
// sent, and the garbage collector takes it). Nothing translate returns
// shares memory with its input.
type BackendRequest struct {
	Body        []byte
	Target      Target
	Stream      bool
	InputTokens int // estimated prompt tokens (Messages requests; Chat requests to a known window)
	// IncludeUsage: a Chat client's stream_options.include_usage, for a
	// stream translated back to it (ChatOnMessagesRequest only).
	IncludeUsage bool
	MaxTokens    int // the output limit sent to the backend; 0 when the request set none
	// Tools are the tools the request offered, for the calls the backend
	// may write as text (text_calls.go); nil when none or when
	// Target.TextCalls is 0.
	Tools []textcall.Tool
}

// RequestError is a request the proxy refuses: malformed JSON, a missing or
// invalid field, content the backend cannot read. Callers answer 400.
type RequestError struct {
	Msg string
	// Compaction marks the refusal of a Responses request's compaction
	// or compaction_trigger item, made before its model is resolved: the
	// server opens the proxy's own compaction items and answers a
	// trigger (server/responses_compaction.go), and translates again.
	Compaction bool
}

func (e *RequestError) Error() string { return e.Msg }

// CompactionRefused reports whether err is the refusal of a compaction or
// compaction_trigger item (RequestError.Compaction).
func CompactionRefused(err error) bool {
	var re *RequestError
	return errors.As(err, &re) && re.Compaction
}

func invalidf(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}
