package translate

// The Responses stream translator turns one backend Chat stream into the
// events of one Responses answer, each with its sequence_number (0, 1, 2…
// in the order written). It is a state machine in two layers, as the
// Messages one is (messages_on_chat_stream.go).
//
// The response:
//
//	new ──Start, Ping, Feed, Fail──▶ open     (response.created, response.in_progress)
//	open ──Feed: [DONE]; or finish_reason and then usage──▶ ended
//	open ──Finish (EOF, with or without [DONE])──▶ ended
//	     (the open item closed, waiting items written, then response.completed,
//	      or response.incomplete when the backend hit its token limit)
//	open ──Feed: an error object──▶ open, Feed returns *BackendError until…
//	new, open ──Fail──▶ failed                 (response.failed)
//	ended, failed: every method appends nothing.
//
// The output items, while the response is open: the backend's content is
// sorted into lanes as chatLanes says (chat_stream_lanes.go), in order: a
// reasoning item, an output_text or a refusal part, a function_call or a
// custom_tool_call. Each lane is one output item, except that text and
// refusal lanes that follow one another are the parts of ONE message item
// (openai-go's ResponseOutputMessage: text, then the refusal), at
// content_index 0, 1… Items open strictly in order and one at a time;
// output_index counts the items.
//
//   - opening an item writes response.output_item.added; opening a
//     message or reasoning part writes response.content_part.added, then
//     the content kept so far as one delta; content of the open part goes
//     out at once as deltas (output_text, refusal, reasoning_text);
//   - closing a part writes its .done events (output_text.done,
//     refusal.done or reasoning_text.done, and content_part.done); the next
//     part of the message may then open; closing an item writes its other
//     .done events (function_call_arguments.done;
//     custom_tool_call_input.done) and response.output_item.done with the
//     whole item;
//   - a tool call's arguments are held until it closes: a function_call's
//     go out as one function_call_arguments.delta, as ToolInput makes them
//     (a JSON object, or the text under raw_arguments), the same arguments
//     the non-stream answer gives; a custom_tool_call's input is the
//     "input" string of its arguments object, as one
//     custom_tool_call_input.delta;
//   - a refusal (delta.refusal) is a refusal part: of the message the text
//     before it opened, or of a message of its own; the response still
//     completes;
//   - a made-up call_id is "call_<response id>_<n>".
//
// While the backend is silent, Ping writes an SSE comment, which clients
// skip.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dragoman-dev/dragoman/proxy/internal/apierror"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// ResponsesOnChatStream translates one backend Chat stream into the events of
// one Responses answer. Its methods append events to dst and return it;
// they do no I/O. A ResponsesOnChatStream is not safe for concurrent use.
type ResponsesOnChatStream struct {
	alias, id string
	base      string // the id without resp_: item ids are <kind>_<base>_<output_index>
	createdAt int64
	call      *ResponsesCall
	inputEst  int

	seq      int
	items    []outItem // by output_index, as the items open
	laneItem []int     // by lane, as the lanes open: the output_index of its item
	// openRef is what a delta event of the open lane, a message or
	// reasoning part, has between its sequence number and its text: the
	// part's reference and the "delta" member's name.
	openRef []byte
	chatLanes
}

// outItem is one output item of the stream: lanes[first:first+n], the
// parts of a message or the one lane of another item.
type outItem struct {
	id       string
	first, n int
}

// isMessagePart reports whether a lane of kind k is a part of a message
// item.
func isMessagePart(k laneKind) bool { return k == laneText || k == laneRefusal }

// NewResponsesOnChatStream returns the translator of one backend stream into
// Responses events. responseID is "resp_…" (NewResponseID); alias is the
// model the client asked for; call is what the request's translation
// returned (nil: no custom or namespaced tools); inputTokens estimates the
// prompt for a backend that never reports usage.
func NewResponsesOnChatStream(alias, responseID string, createdAt int64, call *ResponsesCall, inputTokens int) *ResponsesOnChatStream {
	base := strings.TrimPrefix(responseID, "resp_")
	st := &ResponsesOnChatStream{alias: alias, id: responseID, base: base, createdAt: createdAt, call: call, inputEst: max(inputTokens, 0),
		chatLanes: chatLanes{refusalKind: laneRefusal, idPrefix: "call_" + base + "_"}}
	st.w = st
	return st
}

// Start appends response.created and response.in_progress. Later calls
// append nothing.
func (s *ResponsesOnChatStream) Start(dst []byte) []byte {
	if s.phase != phaseNew {
		return dst
	}
	s.phase = phaseOpen
	r := newResponse(s.id, s.alias, s.createdAt, responses.StatusInProgress, s.call)
	dst = s.head(dst, responses.EventCreated)
	dst = append(dst, `,"response":`...)
	at := len(dst)
	dst = appendResponse(dst, &r)
	snap := len(dst) - at // the same snapshot in both events, written once
	dst = s.tail(dst)
	dst = s.head(dst, responses.EventInProgress)
	dst = append(dst, `,"response":`...)
	dst = append(dst, dst[at:at+snap]...)
	return s.tail(dst)
}

// Ping appends a keep-alive comment, implying Start. After the response
// ended or failed it appends nothing.
func (s *ResponsesOnChatStream) Ping(dst []byte) []byte {
	dst = s.Start(dst)
	if s.phase != phaseOpen {
		return dst
	}
	return append(dst, ": keepalive\n\n"...)
}

// failBackend ends the stream as Fail does when the backend's last event
// was an error object: with server_error.
func (s *ResponsesOnChatStream) failBackend(dst []byte, message string) []byte {
	return s.Fail(dst, apierror.ServerError, message)
}

// Fail appends response.failed, its error carrying code and message, and
// ends the stream. Start is implied; after the response ended Fail appends
// nothing.
func (s *ResponsesOnChatStream) Fail(dst []byte, code, message string) []byte {
	return failOnce(dst, s.Start, failPhase(&s.phase), func(dst []byte) []byte {
		if code == "" {
			code = apierror.ServerError
		}
		r := s.snapshot(responses.StatusFailed)
		r.Error = &responses.ResponseError{Code: code, Message: message}
		return s.lifecycle(dst, responses.EventFailed, &r)
	})
}

// push gives content to lane i: out at once if the lane is open, unless
// it is a tool call's.
func (s *ResponsesOnChatStream) push(dst []byte, i int, content string) []byte {
	l := &s.lanes[i]
	l.text = append(l.text, content...)
	if l.state == laneOpen {
		return s.flush(dst, i)
	}
	return dst
}

// item is output item k: empty and in progress as it opens, whole once
// its last lane closed.
func (s *ResponsesOnChatStream) item(k int) responses.OutputItem {
	it := &s.items[k]
	l := &s.lanes[it.first]
	status, text := responses.StatusInProgress, ""
	if s.lanes[it.first+it.n-1].state == laneClosed {
		status, text = responses.StatusCompleted, string(l.text)
	}
	n := "_" + s.base + "_" + strconv.Itoa(k)
	switch l.kind {
	case laneText, laneRefusal:
		var parts []responses.OutputPart
		if status == responses.StatusCompleted {
			for _, p := range s.lanes[it.first : it.first+it.n] {
				parts = append(parts, lanePart(p.kind, string(p.text)))
			}
		}
		return messageItem("msg"+n, status, parts...)
	case laneThinking:
		return reasoningItem("rs"+n, text)
	}
	return callItem(s.call, n, l.id, l.name, text, status)
}

// lanePart is the content part of a message or reasoning lane.
func lanePart(k laneKind, text string) responses.OutputPart {
	switch k {
	case laneThinking:
		return responses.OutputPart{Type: "reasoning_text", Text: text}
	case laneRefusal:
		return responses.NewRefusal(text)
	}
	return responses.NewOutputText(text)
}

// openNext opens the next lane: a part of the open message when both are
// message parts (closing the open part first), else a new item (closing
// the open item, if any, first).
func (s *ResponsesOnChatStream) openNext(dst []byte) []byte {
	i := s.next
	l := &s.lanes[i]
	if i > 0 && s.lanes[i-1].state == laneOpen && isMessagePart(s.lanes[i-1].kind) && isMessagePart(l.kind) {
		dst = s.closePart(dst, i-1)
		s.items[len(s.items)-1].n++
		l.state = laneOpen
	} else {
		dst = s.closeOpen(dst)
		k := len(s.items)
		s.items = append(s.items, outItem{first: i, n: 1})
		l.state = laneOpen
		item := s.item(k)
		s.items[k].id = item.ID
		dst = s.head(dst, responses.EventOutputItemAdded)
		dst = s.appendIndex(dst, k)
		dst = append(dst, `,"item":`...)
		dst = appendItem(dst, &item)
		dst = s.tail(dst)
	}
	s.next++
	s.laneItem = append(s.laneItem, len(s.items)-1)
	if l.kind != laneTool {
		dst = s.head(dst, responses.EventContentPartAdded)
		dst = s.appendPartRef(dst, i)
		dst = append(dst, `,"part":`...)
		dst = appendPart(dst, lanePart(l.kind, ""))
		dst = s.tail(dst)
		s.openRef = append(s.appendPartRef(s.openRef[:0], i), `,"delta":`...)
	}
	return s.flush(dst, i)
}

// flush writes what the open message or reasoning item i (the open lane,
// whose reference openRef holds) got and has not sent, as one delta. A
// tool call's arguments wait for its close.
func (s *ResponsesOnChatStream) flush(dst []byte, i int) []byte {
	l := &s.lanes[i]
	if l.sent == len(l.text) || l.kind == laneTool {
		return dst
	}
	d := l.text[l.sent:]
	l.sent = len(l.text)
	dst = append(dst, textEvents[l.kind].deltaHead...)
	dst = s.appendSeq(dst)
	dst = append(dst, s.openRef...)
	dst = jsonquote.Append(dst, d)
	if l.kind == laneText {
		dst = append(dst, `,"logprobs":[]`...)
	}
	return s.tail(dst)
}

// textEvents are the events of a message or reasoning item's part: its
// delta, its done, and the member of the done that holds the whole;
// deltaHead is what head writes for a delta.
var textEvents = [...]struct{ delta, done, member, deltaHead string }{
	laneText:     {responses.EventOutputTextDelta, responses.EventOutputTextDone, "text", eventHead(responses.EventOutputTextDelta)},
	laneThinking: {responses.EventReasoningTextDelta, responses.EventReasoningTextDone, "text", eventHead(responses.EventReasoningTextDelta)},
	laneRefusal:  {responses.EventRefusalDelta, responses.EventRefusalDone, "refusal", eventHead(responses.EventRefusalDelta)},
}

// closePart closes lane i, a message or reasoning part: its .done event
// and content_part.done.
func (s *ResponsesOnChatStream) closePart(dst []byte, i int) []byte {
	l := &s.lanes[i]
	l.state = laneClosed
	text := string(l.text)
	ev := textEvents[l.kind]
	dst = s.head(dst, ev.done)
	dst = s.appendPartRef(dst, i)
	dst = append(dst, `,"`...)
	dst = append(dst, ev.member...)
	dst = append(dst, `":`...)
	dst = jsonquote.Append(dst, text)
	if l.kind == laneText {
		dst = append(dst, `,"logprobs":[]`...)
	}
	dst = s.tail(dst)
	dst = s.head(dst, responses.EventContentPartDone)
	dst = s.appendPartRef(dst, i)
	dst = append(dst, `,"part":`...)
	dst = appendPart(dst, lanePart(l.kind, text))
	return s.tail(dst)
}

// closeOpen closes the open item, if any: the item of the last lane
// started.
func (s *ResponsesOnChatStream) closeOpen(dst []byte) []byte {
	i := s.next - 1
	if i < 0 || s.lanes[i].state != laneOpen {
		return dst
	}
	l := &s.lanes[i]
	k := s.laneItem[i]
	if l.kind != laneTool {
		dst = s.closePart(dst, i)
	}
	l.state = laneClosed
	item := s.item(k)
	switch {
	case l.kind != laneTool:
	case item.Input != nil:
		if *item.Input != "" {
			dst = s.itemEvent(dst, responses.EventCustomToolInputDelta, i, "delta", *item.Input)
		}
		dst = s.itemEvent(dst, responses.EventCustomToolInputDone, i, "input", *item.Input)
	default:
		dst = s.itemEvent(dst, responses.EventFunctionArgumentsDelta, i, "delta", *item.Arguments)
		dst = s.head(dst, responses.EventFunctionArgumentsDone)
		dst = s.appendItemRef(dst, i)
		dst = append(dst, `,"name":`...)
		dst = jsonquote.Append(dst, item.Name)
		dst = append(dst, `,"arguments":`...)
		dst = jsonquote.Append(dst, *item.Arguments)
		dst = s.tail(dst)
	}
	dst = s.head(dst, responses.EventOutputItemDone)
	dst = s.appendIndex(dst, k)
	dst = append(dst, `,"item":`...)
	dst = appendItem(dst, &item)
	return s.tail(dst)
}

// end writes every item out, then response.completed or
// response.incomplete.
func (s *ResponsesOnChatStream) end(dst []byte) []byte {
	if s.phase != phaseOpen {
		return dst
	}
	s.phase = phaseEnded
	dst = slices.Grow(dst, s.endSize())
	for s.next < len(s.lanes) {
		dst = s.openNext(dst)
	}
	dst = s.closeOpen(dst)
	r := s.snapshot(responses.StatusCompleted)
	setFinish(&r, s.finish)
	if s.usage != nil {
		r.Usage = responsesUsage(s.usage)
	} else {
		out := (s.outBytes + 3) / 4
		r.Usage = &responses.Usage{InputTokens: s.inputEst, OutputTokens: out, TotalTokens: s.inputEst + out}
	}
	name := responses.EventCompleted
	if r.Status == responses.StatusIncomplete {
		name = responses.EventIncomplete
	}
	return s.lifecycle(dst, name, &r)
}

// endSize is about what end appends: the content of a lane not yet
// closed goes out up to four times (its .done event, content_part.done or
// the arguments' delta, output_item.done, and the response's output), a
// closed lane's once (the response's output); each lane's events and
// item take about 1 KB, and the response around them another 1 KB. Room
// made for it at once spares the buffer several reallocations on the way.
func (s *ResponsesOnChatStream) endSize() int {
	n := 1 << 10
	for i := range s.lanes {
		l := &s.lanes[i]
		if l.state == laneClosed {
			n += len(l.text) + 1<<9
		} else {
			n += 4*len(l.text) + 1<<10
		}
	}
	return n
}

// snapshot is the response with its closed items.
func (s *ResponsesOnChatStream) snapshot(status string) responses.Response {
	r := newResponse(s.id, s.alias, s.createdAt, status, s.call)
	for k, it := range s.items {
		if s.lanes[it.first+it.n-1].state == laneClosed {
			r.Output = append(r.Output, s.item(k))
		}
	}
	return r
}

func (s *ResponsesOnChatStream) lifecycle(dst []byte, name string, r *responses.Response) []byte {
	dst = s.head(dst, name)
	dst = append(dst, `,"response":`...)
	dst = appendResponse(dst, r)
	return s.tail(dst)
}

// head starts an event: its name, and its data up to the sequence number.
func (s *ResponsesOnChatStream) head(dst []byte, name string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, name...)
	dst = append(dst, "\ndata: {\"type\":\""...)
	dst = append(dst, name...)
	dst = append(dst, `","sequence_number":`...)
	return s.appendSeq(dst)
}

// eventHead is what head writes before the sequence number, as one
// string.
func eventHead(name string) string {
	return "event: " + name + "\ndata: {\"type\":\"" + name + `","sequence_number":`
}

// appendSeq appends the next sequence number.
func (s *ResponsesOnChatStream) appendSeq(dst []byte) []byte {
	dst = strconv.AppendInt(dst, int64(s.seq), 10)
	s.seq++
	return dst
}

func (s *ResponsesOnChatStream) tail(dst []byte) []byte { return append(dst, "}\n\n"...) }

func (s *ResponsesOnChatStream) appendIndex(dst []byte, i int) []byte {
	dst = append(dst, `,"output_index":`...)
	return strconv.AppendInt(dst, int64(i), 10)
}

// itemEvent appends an event of lane i's item with one more member, a
// string.
func (s *ResponsesOnChatStream) itemEvent(dst []byte, name string, i int, member, value string) []byte {
	dst = s.head(dst, name)
	dst = s.appendItemRef(dst, i)
	dst = append(dst, `,"`...)
	dst = append(dst, member...)
	dst = append(dst, `":`...)
	dst = jsonquote.Append(dst, value)
	return s.tail(dst)
}

// appendItemRef appends the id and output_index of lane i's item.
func (s *ResponsesOnChatStream) appendItemRef(dst []byte, i int) []byte {
	k := s.laneItem[i]
	dst = append(dst, `,"item_id":`...)
	dst = jsonquote.Append(dst, s.items[k].id)
	return s.appendIndex(dst, k)
}

// appendPartRef appends the item reference and content_index of lane i, a
// message or reasoning part.
func (s *ResponsesOnChatStream) appendPartRef(dst []byte, i int) []byte {
	dst = s.appendItemRef(dst, i)
	dst = append(dst, `,"content_index":`...)
	return strconv.AppendInt(dst, int64(i-s.items[s.laneItem[i]].first), 10)
}
