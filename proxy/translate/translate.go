// Package translate converts between the Messages format and the Chat
// Completions format: requests Messages→Chat, responses Chat→Messages, and
// streams through an explicit state machine over Chat chunks. It also
// prepares Chat requests that pass through to a backend. It does no I/O:
// every function takes bytes and returns bytes.
package translate

import "fmt"

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
	// NoVision: the backend model cannot read images; each image becomes
	// a short text placeholder.
	NoVision bool
	// DropParams are the top-level members a Messages pass-through
	// removes, comma-separated (a string keeps Target comparable).
	DropParams string
}

// clampOutput bounds a requested output limit by MaxOutputTokens.
func (t Target) clampOutput(n int64) int64 {
	if m := int64(t.MaxOutputTokens); m > 0 && n > m {
		return m
	}
	return n
}

// Resolver maps the model alias of a request to its Target. Its error is
// returned unchanged (wrapped) by the translating functions, so callers can
// tell an unknown alias from a bad request with errors.As.
type Resolver func(alias string) (Target, error)

// BackendRequest is a request ready for the backend: its /chat/completions,
// or its /messages for MessagesToMessages and ChatToMessagesRequest.
// Body is a buffer from bufpool (as is ChatResponseModel's answer): the
// caller gives it back with bufpool.Put once nothing reads it, after it
// is sent. Nothing translate returns shares memory with its input.
type BackendRequest struct {
	Body        []byte
	Target      Target
	Stream      bool
	InputTokens int // estimated prompt tokens (Messages requests; Chat requests to a known window)
	// IncludeUsage: a Chat client's stream_options.include_usage, for a
	// stream translated back to it (ChatToMessagesRequest only).
	IncludeUsage bool
	MaxTokens    int // the output limit sent to the backend; 0 when the request set none
}

// RequestError is a request the proxy refuses: malformed JSON, a missing or
// invalid field, content the backend cannot read. Callers answer 400.
type RequestError struct {
	Msg string
}

func (e *RequestError) Error() string { return e.Msg }

func invalidf(format string, args ...any) error {
	return &RequestError{Msg: fmt.Sprintf(format, args...)}
}
