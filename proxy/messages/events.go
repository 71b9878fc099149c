package messages

import "github.com/go-json-experiment/json/jsontext"

// A Messages stream is a text/event-stream of events, each written as
// "event: NAME\ndata: JSON\n\n" where the JSON's "type" equals NAME:
//
//	message_start
//	  then per content block, in order, indices 0, 1, 2…, one open at a time:
//	  content_block_start, content_block_delta…, content_block_stop
//	message_delta
//	message_stop
//
// ping may come anywhere after message_start; error ends the stream at any
// point after message_start. There is no [DONE] line.

// Stream event names, which are also the "type" of each event's data.
const (
	EventMessageStart      = "message_start"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventPing              = "ping"
	EventError             = "error"
)

// Content block types a stream opens.
const (
	BlockText     = "text"
	BlockThinking = "thinking"
	BlockToolUse  = "tool_use"
	// A server tool's call and its result (web search): the call opens
	// with input {} and gets input_json_delta; the result opens whole and
	// gets no delta.
	BlockServerToolUse       = "server_tool_use"
	BlockWebSearchToolResult = "web_search_tool_result"
)

// Delta types of content_block_delta, each allowed in one block type:
// text_delta in text; thinking_delta and signature_delta in thinking;
// input_json_delta in tool_use.
const (
	DeltaText      = "text_delta"
	DeltaThinking  = "thinking_delta"
	DeltaSignature = "signature_delta"
	DeltaInputJSON = "input_json_delta"
	// DeltaCitations adds one citation to a text block.
	DeltaCitations = "citations_delta"
)

// Stop reasons of a message.
const (
	StopEndTurn      = "end_turn"
	StopMaxTokens    = "max_tokens"
	StopStopSequence = "stop_sequence"
	StopToolUse      = "tool_use"
	StopPauseTurn    = "pause_turn"
	StopRefusal      = "refusal"
)

// MessageStartEvent opens the stream with the message as it starts: no
// content yet, no stop reason, usage with the input tokens known so far.
type MessageStartEvent struct {
	Type    string        `json:"type"`
	Message StreamMessage `json:"message"`
}

// StreamMessage is the message of message_start.
type StreamMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"` // "message"
	Role         string           `json:"role"` // "assistant"
	Model        string           `json:"model"`
	Content      []jsontext.Value `json:"content"` // always empty
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        Usage            `json:"usage"`
}

// ContentBlockStartEvent opens content block Index.
type ContentBlockStartEvent struct {
	Type         string      `json:"type"`
	Index        int         `json:"index"`
	ContentBlock StreamBlock `json:"content_block"`
}

// StreamBlock is a content block as content_block_start opens it, empty:
// deltas fill it. Which fields it carries depends on Type.
type StreamBlock struct {
	Type      string         `json:"type"`
	Text      *string        `json:"text,omitzero"`         // text: ""
	Thinking  *string        `json:"thinking,omitzero"`     // thinking: ""
	Signature *string        `json:"signature,omitzero"`    // thinking: ""
	ID        string         `json:"id,omitempty"`          // tool_use, server_tool_use
	Name      string         `json:"name,omitempty"`        // tool_use, server_tool_use
	Input     jsontext.Value `json:"input,omitzero"`        // tool_use, server_tool_use: {}
	ToolUseID string         `json:"tool_use_id,omitempty"` // web_search_tool_result
	Content   jsontext.Value `json:"content,omitzero"`      // web_search_tool_result: the results, or the error object
}

// ContentBlockDeltaEvent adds to content block Index.
type ContentBlockDeltaEvent struct {
	Type  string     `json:"type"`
	Index int        `json:"index"`
	Delta BlockDelta `json:"delta"`
}

// BlockDelta is what a content_block_delta adds; the field set depends on
// Type: text_delta text, thinking_delta thinking, signature_delta
// signature, input_json_delta partial_json (a fragment of the tool input's
// JSON text; the fragments of a block concatenate to the whole input).
type BlockDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitzero"`
	Thinking    *string `json:"thinking,omitzero"`
	Signature   *string `json:"signature,omitzero"`
	PartialJSON *string `json:"partial_json,omitzero"`
	// Citation is the citation a citations_delta adds to a text block.
	Citation jsontext.Value `json:"citation,omitzero"`
}

// ContentBlockStopEvent closes content block Index.
type ContentBlockStopEvent struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// MessageDeltaEvent ends the message's content: its stop reason and final
// usage.
type MessageDeltaEvent struct {
	Type  string       `json:"type"`
	Delta MessageDelta `json:"delta"`
	Usage DeltaUsage   `json:"usage"`
}

// MessageDelta carries the stop reason; StopSequence is set only when
// StopReason is stop_sequence.
type MessageDelta struct {
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// DeltaUsage is the final usage of message_delta. Each count is a whole-
// message total that replaces the one of message_start.
type DeltaUsage struct {
	InputTokens          int            `json:"input_tokens"`
	OutputTokens         int            `json:"output_tokens"`
	CacheReadInputTokens int            `json:"cache_read_input_tokens"`
	ServerToolUse        *ServerToolUse `json:"server_tool_use,omitzero"`
}

// MessageStopEvent is the last event of a stream that ended well.
type MessageStopEvent struct {
	Type string `json:"type"`
}

// PingEvent keeps the client's idle timer from firing.
type PingEvent struct {
	Type string `json:"type"`
}

// An error event's data is an ErrorResponse: {"type":"error","error":{...}}.
