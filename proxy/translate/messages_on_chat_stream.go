package translate

// The stream translator turns one backend Chat stream (SSE "data:" chunks,
// "data: [DONE]") into the Messages events of one message. It is a state
// machine in two layers.
//
// The message:
//
//	new ──Start, Ping, Feed, Fail──▶ open          (message_start out)
//	open ──Feed: [DONE]; or finish_reason and then usage──▶ ended
//	open ──Finish (EOF, with or without [DONE])──▶ ended
//	     (the open block closed, waiting blocks flushed, message_delta, message_stop)
//	open ──Feed: an error object──▶ open, Feed returns *BackendError until…
//	new, open ──Fail──▶ failed                      (event: error out)
//	ended, failed: every method appends nothing.
//
// The content blocks, while the message is open: the backend's content is
// sorted into lanes as chatLanes says (chat_stream_lanes.go), one per block; a
// lane's number is its block index. Opening a lane writes
// content_block_start, then the content it got while waiting as one delta;
// content of the open text or thinking lane goes out at once as deltas;
// closing writes content_block_stop. Since a block starts only at index
// next and stops only while open, a delta for a wrong index, a second
// start, a stop twice or a missing stop cannot be written.
//
//   - A tool lane's arguments are held, not streamed: they go out as one
//     input_json_delta when the lane closes, as ToolInput makes them, the
//     same input the non-stream path gives. So the input a client
//     accumulates is always a JSON object; a tool_use's input stays {}
//     only when the backend sent no arguments.
//   - A made-up tool id is "toolu_<message id>_<n>".
//   - A refusal (delta.refusal) is text: it goes to the text lane, and the
//     message ends with stop_reason "refusal" (unless it has tool calls).
//
// A thinking block starts with "thinking":"","signature":"" and gets no
// signature_delta: a local model signs nothing, and the SDK accumulators
// need none.

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// BackendError is an error object a backend sent in its stream in place of
// a chunk. The caller ends the client's stream with MessagesOnChatStream.Fail.
type BackendError struct {
	Type    string // the backend's error type, e.g. "server_error"; may be ""
	Message string
}

func (e *BackendError) Error() string {
	if e.Type == "" {
		return "backend error: " + e.Message
	}
	return "backend error (" + e.Type + "): " + e.Message
}

type streamPhase uint8

const (
	phaseNew streamPhase = iota
	phaseOpen
	phaseEnded
	phaseFailed
)

// MessagesOnChatStream translates one backend Chat stream into the Messages events of
// one message. Its methods append events to dst and return it; they do no
// I/O. A MessagesOnChatStream is not safe for concurrent use.
type MessagesOnChatStream struct {
	alias, id   string
	inputTokens int

	chatLanes
}

// NewMessagesOnChatStream returns the translator of one backend stream into Messages
// events for the client. messageID is "msg_..." chosen by the caller; alias
// is the model name the client asked for; inputTokens is an estimate used
// in message_start's usage (a Chat stream reports usage only at its end).
func NewMessagesOnChatStream(alias, messageID string, inputTokens int) *MessagesOnChatStream {
	st := &MessagesOnChatStream{alias: alias, id: messageID, inputTokens: max(inputTokens, 0),
		chatLanes: chatLanes{refusalKind: laneText, idPrefix: "toolu_" + strings.TrimPrefix(messageID, "msg_") + "_"}}
	st.w = st
	return st
}

// Start appends message_start, the first event of the stream. Later calls
// append nothing.
func (s *MessagesOnChatStream) Start(dst []byte) []byte {
	if s.phase != phaseNew {
		return dst
	}
	s.phase = phaseOpen
	dst = appendEventHead(dst, messages.EventMessageStart)
	dst = append(dst, `{"type":"message_start","message":{"id":`...)
	dst = jsonquote.Append(dst, s.id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonquote.Append(dst, s.alias)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(s.inputTokens), 10)
	dst = append(dst, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`...)
	return appendEventEnd(dst)
}

// Ping appends a ping event, implying Start. After the message ended or
// failed it appends nothing.
func (s *MessagesOnChatStream) Ping(dst []byte) []byte {
	dst = s.Start(dst)
	if s.phase != phaseOpen {
		return dst
	}
	return AppendPing(dst)
}

// AppendPing appends a Messages ping event.
func AppendPing(dst []byte) []byte {
	dst = appendEventHead(dst, messages.EventPing)
	dst = append(dst, `{"type": "ping"}`...)
	return appendEventEnd(dst)
}

// failBackend ends the stream as Fail does when the backend's last event
// was an error object: with api_error.
func (s *MessagesOnChatStream) failBackend(dst []byte, message string) []byte {
	return s.Fail(dst, messages.APIError, message)
}

// Fail appends an error event in the Messages error shape and ends the
// stream: after it nothing more is appended. errType is a Messages error
// type ("api_error" when empty). Start is implied; after the message ended
// Fail appends nothing.
func (s *MessagesOnChatStream) Fail(dst []byte, errType, message string) []byte {
	return failOnce(dst, s.Start, failPhase(&s.phase), func(dst []byte) []byte { return appendErrorEvent(dst, errType, message) })
}

// push gives content to lane i: text and thinking out at once if the lane
// is open, held if it waits; tool arguments held until the lane closes.
func (s *MessagesOnChatStream) push(dst []byte, i int, content string) []byte {
	l := &s.lanes[i]
	if l.state == laneOpen && l.kind != laneTool {
		return appendBlockDelta(dst, i, l.kind, content)
	}
	l.text = append(l.text, content...)
	return dst
}

// openNext closes the open lane, if any, and opens the next one.
func (s *MessagesOnChatStream) openNext(dst []byte) []byte {
	dst = s.closeOpen(dst)
	i := s.next
	s.next++
	l := &s.lanes[i]
	l.state = laneOpen
	dst = appendBlockStart(dst, i, l.kind, l.id, l.name)
	if len(l.text) > 0 && l.kind != laneTool {
		dst = appendBlockDelta(dst, i, l.kind, l.text)
		l.text = nil
	}
	return dst
}

// closeOpen closes the open lane, if any: the last one started. A tool
// lane's input goes out first, in one delta.
func (s *MessagesOnChatStream) closeOpen(dst []byte) []byte {
	i := s.next - 1
	if i < 0 || s.lanes[i].state != laneOpen {
		return dst
	}
	l := &s.lanes[i]
	if l.kind == laneTool && len(bytes.TrimSpace(l.text)) > 0 {
		dst = appendBlockDelta(dst, i, laneTool, ToolInput(string(l.text)))
		l.text = nil
	}
	l.state = laneClosed
	return appendBlockStop(dst, i)
}

// appendBlockStart appends the content_block_start of a block of a lane
// kind, opened empty (a tool_use block with its id and name).
func appendBlockStart(dst []byte, index int, kind laneKind, id, name string) []byte {
	dst = appendEventHead(dst, messages.EventContentBlockStart)
	dst = append(dst, `{"type":"content_block_start","index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	switch kind {
	case laneText:
		dst = append(dst, `,"content_block":{"type":"text","text":""}}`...)
	case laneThinking:
		dst = append(dst, `,"content_block":{"type":"thinking","thinking":"","signature":""}}`...)
	case laneTool:
		dst = append(dst, `,"content_block":{"type":"tool_use","id":`...)
		dst = jsonquote.Append(dst, id)
		dst = append(dst, `,"name":`...)
		dst = jsonquote.Append(dst, name)
		dst = append(dst, `,"input":{}}}`...)
	}
	return appendEventEnd(dst)
}

// appendBlockStop appends the content_block_stop of block index.
func appendBlockStop(dst []byte, index int) []byte {
	dst = appendEventHead(dst, messages.EventContentBlockStop)
	dst = append(dst, `{"type":"content_block_stop","index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, '}')
	return appendEventEnd(dst)
}

// appendBlockDelta appends a content_block_delta of a lane kind's own
// delta type.
func appendBlockDelta[T ~string | ~[]byte](dst []byte, index int, kind laneKind, content T) []byte {
	dst = appendEventHead(dst, messages.EventContentBlockDelta)
	dst = append(dst, `{"type":"content_block_delta","index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	switch kind {
	case laneText:
		dst = append(dst, `,"delta":{"type":"text_delta","text":`...)
	case laneThinking:
		dst = append(dst, `,"delta":{"type":"thinking_delta","thinking":`...)
	case laneTool:
		dst = append(dst, `,"delta":{"type":"input_json_delta","partial_json":`...)
	}
	dst = jsonquote.Append(dst, content)
	dst = append(dst, `}}`...)
	return appendEventEnd(dst)
}

// end writes the end of the message: every lane out, the open one closed,
// message_delta and message_stop.
func (s *MessagesOnChatStream) end(dst []byte) []byte {
	if s.phase != phaseOpen {
		return dst
	}
	s.phase = phaseEnded
	for s.next < len(s.lanes) {
		dst = s.openNext(dst)
	}
	dst = s.closeOpen(dst)

	reason, seq := stopReason(s.finish, s.vllmStop, s.hasToolCalls(), s.refused)
	usage := MapUsage(s.usage)
	if s.usage == nil {
		usage = messages.Usage{InputTokens: s.inputTokens, OutputTokens: (s.outBytes + 3) / 4}
	}
	dst = appendEventHead(dst, messages.EventMessageDelta)
	dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":`...)
	dst = jsonquote.Append(dst, reason)
	dst = append(dst, `,"stop_sequence":`...)
	if reason == messages.StopStopSequence {
		dst = jsonquote.Append(dst, seq)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `},"usage":{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(usage.InputTokens), 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(usage.OutputTokens), 10)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(usage.CacheReadInputTokens), 10)
	dst = append(dst, `}}`...)
	dst = appendEventEnd(dst)

	dst = appendEventHead(dst, messages.EventMessageStop)
	dst = append(dst, `{"type":"message_stop"}`...)
	return appendEventEnd(dst)
}
