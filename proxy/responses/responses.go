// Package responses holds the Responses API wire format that Codex CLI and
// the OpenAI SDKs' Responses clients speak: the request (input items,
// tools), the response object and its output items, the stream events and
// the error shape.
//
// Union-typed members (tool_choice, text.format) are kept as raw JSON for
// the translator to read; input, message content and a tool call's output
// (a string or a list) decode into Input and Content. Texts the translator
// passes on (message text, tool descriptions, call arguments) stay quoted,
// as raw JSON strings.
package responses

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Request is a POST /v1/responses body. Members the proxy does not read
// (store, include, prompt_cache_key, metadata, client_metadata, truncation,
// …) are accepted and ignored.
type Request struct {
	Model              string         `json:"model"`
	Input              Input          `json:"input"`        // a string, or an array of items
	Instructions       jsontext.Value `json:"instructions"` // a string, or null
	Tools              []Tool         `json:"tools"`
	ToolChoice         jsontext.Value `json:"tool_choice"`
	ParallelToolCalls  *bool          `json:"parallel_tool_calls"`
	MaxOutputTokens    *int64         `json:"max_output_tokens"`
	Temperature        jsontext.Value `json:"temperature"`
	TopP               jsontext.Value `json:"top_p"`
	Reasoning          *Reasoning     `json:"reasoning"`
	Text               *TextConfig    `json:"text"`
	Stream             bool           `json:"stream"`
	PreviousResponseID *string        `json:"previous_response_id"`
	User               jsontext.Value `json:"user"`
}

// Input is the request's input: a string (Text, kept quoted) or a list of
// items (Items, not nil, maybe empty). A value of another kind stays raw in
// Text, for the translator to refuse in its own words; null and an absent
// member leave both zero.
type Input struct {
	Text  jsontext.Value
	Items []Item
}

// UnmarshalJSONFrom decodes a string or an array of items.
func (in *Input) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*in = Input{}
	return unmarshalUnion(dec, &in.Text, &in.Items)
}

// Content is a message's content or a tool call's output: a string (Text,
// kept quoted) or a list of parts (Parts, not nil, maybe empty). A value of
// another kind stays raw in Text, for the translator to refuse; null and an
// absent member leave both zero.
type Content struct {
	Text  jsontext.Value
	Parts []Part
}

// UnmarshalJSONFrom decodes a string or an array of parts.
func (c *Content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*c = Content{}
	return unmarshalUnion(dec, &c.Text, &c.Parts)
}

// unmarshalUnion decodes an array into list (never nil then), null into
// nothing, and any other value raw into text.
func unmarshalUnion[T any](dec *jsontext.Decoder, text *jsontext.Value, list *[]T) error {
	switch dec.PeekKind() {
	case '[':
		if err := json.UnmarshalDecode(dec, list); err != nil {
			return err
		}
		if *list == nil {
			*list = []T{}
		}
		return nil
	case 'n':
		_, err := dec.ReadValue()
		return err
	}
	v, err := dec.ReadValue()
	*text = v.Clone()
	return err
}

// Reasoning asks for reasoning effort and summaries.
type Reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// TextConfig shapes the text output; Format is {"type":"text"},
// {"type":"json_object"} or {"type":"json_schema","name","schema",…}.
type TextConfig struct {
	Format jsontext.Value `json:"format"`
}

// Item is one element of an input array. Type is "message" (or empty, with
// a Role), "function_call", "function_call_output", "custom_tool_call",
// "custom_tool_call_output", "reasoning", or a hosted tool's item.
//
// Arguments and Input are strings kept quoted (or values of another kind,
// for the translator to refuse): their text goes on to the backend as the
// client escaped it.
type Item struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	Role      string         `json:"role"`
	Content   Content        `json:"content"` // message: a string or parts; reasoning: reasoning_text parts
	CallID    string         `json:"call_id"`
	Name      string         `json:"name"`
	Namespace string         `json:"namespace"`
	Arguments jsontext.Value `json:"arguments"` // function_call
	Input     jsontext.Value `json:"input"`     // custom_tool_call
	Output    Content        `json:"output"`    // *_output: a string or parts
	Summary   []Part         `json:"summary"`   // reasoning
	// Encrypted is encrypted_content (reasoning, compaction): a string
	// kept quoted.
	Encrypted jsontext.Value `json:"encrypted_content"`
}

// Part is a content part: input_text, output_text, input_image, refusal,
// summary_text, reasoning_text.
type Part struct {
	Type     string         `json:"type"`
	Text     jsontext.Value `json:"text"` // a string, kept quoted
	Refusal  string         `json:"refusal"`
	ImageURL string         `json:"image_url"`
	FileID   string         `json:"file_id"`
	Detail   string         `json:"detail"`
}

// Tool is a tool offered to the model: "function" (Parameters is a JSON
// Schema), "custom" (free-form input, Format an optional grammar),
// "namespace" (a group of function and custom tools), or a hosted tool
// ("web_search", "file_search", …) that only OpenAI's servers run.
// Description is a string kept quoted (or a value of another kind, for the
// translator to refuse).
type Tool struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Description jsontext.Value `json:"description"`
	Parameters  jsontext.Value `json:"parameters"`
	Format      *CustomFormat  `json:"format"`
	Tools       []Tool         `json:"tools"`
}

// CustomFormat is a custom tool's input format: {"type":"text"} or
// {"type":"grammar","syntax":"lark"|"regex","definition":…}; Definition is
// a string kept quoted (or a value of another kind, for the translator to
// refuse).
type CustomFormat struct {
	Type       string         `json:"type"`
	Syntax     string         `json:"syntax"`
	Definition jsontext.Value `json:"definition"`
}

// Item types.
const (
	ItemMessage              = "message"
	ItemFunctionCall         = "function_call"
	ItemFunctionCallOutput   = "function_call_output"
	ItemCustomToolCall       = "custom_tool_call"
	ItemCustomToolCallOutput = "custom_tool_call_output"
	ItemReasoning            = "reasoning"
	// ItemCompaction holds a summary of the conversation before it, sealed
	// in encrypted_content (remote compaction); ItemCompactionTrigger, last
	// in input, asks for one.
	ItemCompaction        = "compaction"
	ItemCompactionTrigger = "compaction_trigger"
	ItemWebSearchCall     = "web_search_call"
)

// Response statuses and incomplete reasons.
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"

	ReasonMaxOutputTokens = "max_output_tokens"
	ReasonContentFilter   = "content_filter"
)

// Response is the response object: the whole answer of a non-stream
// request, and the snapshot in response.created, response.completed and
// the other lifecycle events.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"` // "response"
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	ToolChoice         string             `json:"tool_choice"`
	Tools              []struct{}         `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *Usage             `json:"usage"`
	Metadata           struct{}           `json:"metadata"`
}

// ResponseError is the error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// OutputItem is one item of a response's output: a message, a
// function_call, a custom_tool_call or a reasoning item. Members that
// belong to other types are left out.
type OutputItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Status    string        `json:"status,omitzero"`
	Role      string        `json:"role,omitzero"`              // message
	Content   *[]OutputPart `json:"content,omitzero"`           // message, reasoning
	CallID    string        `json:"call_id,omitzero"`           // function_call, custom_tool_call
	Name      string        `json:"name,omitzero"`              // function_call, custom_tool_call
	Namespace string        `json:"namespace,omitzero"`         // a tool of a namespace
	Arguments *string       `json:"arguments,omitzero"`         // function_call
	Input     *string       `json:"input,omitzero"`             // custom_tool_call
	Summary   *[]OutputPart `json:"summary,omitzero"`           // reasoning
	Encrypted *string       `json:"encrypted_content,omitzero"` // reasoning: never set, the proxy signs nothing
}

// OutputPart is a part of an output item: output_text (with annotations
// and logprobs, always empty here), refusal, reasoning_text or
// summary_text.
type OutputPart struct {
	Type        string      `json:"type"`
	Text        string      `json:"text"`
	Refusal     string      `json:"refusal,omitzero"` // refusal
	Annotations *[]struct{} `json:"annotations,omitzero"`
	Logprobs    *[]struct{} `json:"logprobs,omitzero"`
}

// PartRefusal is the type of a message's refusal part: the model declined
// to answer, and says so in its refusal, not in text.
const PartRefusal = "refusal"

// MarshalJSONTo encodes the part in its type's shape: a refusal part is
// {"type":"refusal","refusal":…}, without text.
func (p OutputPart) MarshalJSONTo(enc *jsontext.Encoder) error {
	if p.Type == PartRefusal {
		return json.MarshalEncode(enc, struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{p.Type, p.Refusal})
	}
	type part OutputPart // the same members, without this method
	return json.MarshalEncode(enc, (*part)(&p))
}

// NewOutputText returns an output_text part.
func NewOutputText(text string) OutputPart {
	return OutputPart{Type: "output_text", Text: text, Annotations: &[]struct{}{}, Logprobs: &[]struct{}{}}
}

// NewRefusal returns a refusal part.
func NewRefusal(refusal string) OutputPart { return OutputPart{Type: PartRefusal, Refusal: refusal} }

// Usage counts the tokens of a response.
type Usage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails splits the input tokens.
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails splits the output tokens.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Stream event types, in the order a stream sends them.
const (
	EventCreated                = "response.created"
	EventInProgress             = "response.in_progress"
	EventOutputItemAdded        = "response.output_item.added"
	EventContentPartAdded       = "response.content_part.added"
	EventOutputTextDelta        = "response.output_text.delta"
	EventOutputTextDone         = "response.output_text.done"
	EventRefusalDelta           = "response.refusal.delta"
	EventRefusalDone            = "response.refusal.done"
	EventContentPartDone        = "response.content_part.done"
	EventReasoningTextDelta     = "response.reasoning_text.delta"
	EventReasoningTextDone      = "response.reasoning_text.done"
	EventFunctionArgumentsDelta = "response.function_call_arguments.delta"
	EventFunctionArgumentsDone  = "response.function_call_arguments.done"
	EventCustomToolInputDelta   = "response.custom_tool_call_input.delta"
	EventCustomToolInputDone    = "response.custom_tool_call_input.done"
	EventOutputItemDone         = "response.output_item.done"
	EventCompleted              = "response.completed"
	EventIncomplete             = "response.incomplete"
	EventFailed                 = "response.failed"
)

// Error types of the error shape, {"error":{"message","type","param","code"}}.
const (
	InvalidRequestError = "invalid_request_error"
	AuthenticationError = "authentication_error"
	NotFoundError       = "not_found_error"
	RateLimitError      = "rate_limit_error"
	ServerError         = "server_error"
	TimeoutError        = "timeout"
	UnavailableError    = "service_unavailable"
)

// ErrorResponse is the error shape of the API.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody describes an error. Param names the request member at fault,
// when there is one.
type ErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// MarshalError renders an error in the API's error shape. code may be "".
func MarshalError(errType, code, message string) []byte {
	body := ErrorBody{Message: message, Type: errType}
	if code != "" {
		body.Code = &code
	}
	b, err := json.Marshal(ErrorResponse{Error: body}, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		panic("responses: marshal of a fixed struct failed: " + err.Error())
	}
	return b
}
