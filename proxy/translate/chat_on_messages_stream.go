package translate

// The reverse stream translator turns one backend Messages stream (events
// message_start, content_block_*, message_delta, message_stop, ping,
// error) into the Chat chunks of one completion. Its states:
//
//	new ──message_start──▶ open        (the first chunk: role, content "")
//	open ──content_block_start / _delta / _stop──▶ open
//	     text_delta → content; thinking_delta → reasoning_content;
//	     tool_use start → a tool call (its index the count of calls before
//	     it, with id and name), input_json_delta → its arguments;
//	     signature_delta, ping and unknown events → nothing
//	open ──message_delta──▶ open       (stop reason and usage noted)
//	open ──message_stop──▶ ended       (the finish chunk, the usage chunk when
//	                                    asked for, data: [DONE])
//	new, open ──error event──▶ failed  (Feed returns *BackendError: the caller
//	                                    writes the error in the Chat shape)
//	ended, failed: Feed appends nothing.
//
// A content_block_* event before message_start opens the completion as
// message_start would. A tool_use block whose input came whole in its
// content_block_start (no input_json_delta) gets that input as its
// arguments when it stops. A stream that ends before message_stop is not
// ended (Ended reports false): the caller reports the break.

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/sse"
)

type reversePhase uint8

const (
	reverseNew reversePhase = iota
	reverseOpen
	reverseEnded
	reverseFailed
)

// ChatOnMessagesStream translates one backend Messages stream into the Chat
// chunks of one completion. Its methods append to dst and do no I/O. A
// ChatOnMessagesStream is not safe for concurrent use.
type ChatOnMessagesStream struct {
	alias        []byte // the alias as a JSON string
	created      int64
	includeUsage bool

	phase reversePhase
	err   error
	dec   sse.Decoder

	id     []byte // the chunk id as a JSON string
	blocks map[int]*reverseBlockState
	calls  int
	stop   string
	usage  messages.Usage
	ev     reverseEvent
}

// reverseBlockState is what the translator keeps of an open content block.
type reverseBlockState struct {
	kind      string
	call      int            // tool_use: the tool call's index
	input     jsontext.Value // tool_use: the input of content_block_start
	gotDeltas bool
}

// reverseEvent is the union of the Messages events' members the translator
// reads.
type reverseEvent struct {
	Type    string `json:"type"`
	Message *struct {
		ID    string         `json:"id"`
		Usage messages.Usage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock *struct {
		Type  string         `json:"type"`
		ID    string         `json:"id"`
		Name  string         `json:"name"`
		Text  string         `json:"text"`
		Input jsontext.Value `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string  `json:"type"`
		Text        string  `json:"text"`
		Thinking    string  `json:"thinking"`
		PartialJSON string  `json:"partial_json"`
		StopReason  *string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usageDelta         `json:"usage"`
	Error *messages.ErrorBody `json:"error"`
}

// usageDelta is the usage of a message_delta: each count it names
// replaces the one of message_start.
type usageDelta struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
}

func (d *usageDelta) applyTo(u *messages.Usage) {
	for _, f := range []struct {
		src *int
		dst *int
	}{{d.InputTokens, &u.InputTokens}, {d.OutputTokens, &u.OutputTokens},
		{d.CacheReadInputTokens, &u.CacheReadInputTokens}, {d.CacheCreationInputTokens, &u.CacheCreationInputTokens}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
}

// NewChatOnMessagesStream returns the translator of one Messages stream into Chat
// chunks naming the model alias, stamped created (Unix seconds);
// includeUsage adds the usage chunk the client asked for with
// stream_options.include_usage.
func NewChatOnMessagesStream(alias string, created int64, includeUsage bool) *ChatOnMessagesStream {
	return &ChatOnMessagesStream{alias: jsonquote.Append(nil, alias), created: created, includeUsage: includeUsage, blocks: map[int]*reverseBlockState{}}
}

// Done reports whether the completion ended or failed: the caller may stop
// reading.
func (r *ChatOnMessagesStream) Done() bool { return r.phase >= reverseEnded }

// Ended reports whether the backend's stream came to message_stop.
func (r *ChatOnMessagesStream) Ended() bool { return r.phase == reverseEnded }

// BackendUsage returns the usage the backend's stream reported so far, in
// the Chat form (ChatUsage); nil before its message_start.
func (r *ChatOnMessagesStream) BackendUsage() *chat.Usage {
	if r.phase == reverseNew {
		return nil
	}
	return ChatUsage(r.usage)
}

// Feed feeds raw backend bytes, split anywhere, and appends the chunks
// they complete. An error event returns a *BackendError; an event too
// large to buffer sse.ErrEventTooLarge; either is returned again by every
// later Feed.
func (r *ChatOnMessagesStream) Feed(dst, p []byte) ([]byte, error) {
	if r.err != nil {
		return dst, r.err
	}
	if r.phase >= reverseEnded {
		return dst, nil
	}
	if err := r.dec.Feed(p); err != nil {
		r.err = err
		return dst, err
	}
	for r.phase < reverseEnded {
		ev, ok := r.dec.Next()
		if !ok {
			break
		}
		dst = r.event(dst, ev.Type, ev.Data)
	}
	return dst, r.err
}

// Finish reads an event the input left unterminated, at the end of the
// backend's stream.
func (r *ChatOnMessagesStream) Finish(dst []byte) ([]byte, error) {
	if r.err != nil || r.phase >= reverseEnded {
		return dst, r.err
	}
	if ev, ok := r.dec.End(); ok {
		dst = r.event(dst, ev.Type, ev.Data)
	}
	return dst, r.err
}

func (r *ChatOnMessagesStream) event(dst []byte, name string, data []byte) []byte {
	data = bytes.TrimSpace(data)
	r.ev = reverseEvent{}
	if name == messages.EventError {
		// Any error event, in the Messages shape or not (llama-server's
		// {"code","message","type"}): the server's message goes on.
		be := parseBackendError(data)
		if be == nil {
			be = &BackendError{Message: "the backend reported an error without a message"}
		}
		r.err, r.phase = be, reverseFailed
		return dst
	}
	if len(data) == 0 || json.Unmarshal(data, &r.ev, chunkOptions) != nil {
		return dst // not an event of the format: a server's own notice
	}
	typ := r.ev.Type
	if typ == "" {
		typ = name
	}
	if typ == messages.EventError || r.ev.Error != nil && typ != messages.EventMessageStart {
		be := &BackendError{Message: "the backend reported an error without a message"}
		if e := r.ev.Error; e != nil {
			be.Type = e.Type
			if e.Message != "" {
				be.Message = e.Message
			}
		}
		r.err, r.phase = be, reverseFailed
		return dst
	}
	switch typ {
	case messages.EventMessageStart:
		if r.phase != reverseNew {
			return dst // a second message_start: nothing new in it
		}
		id := ""
		if m := r.ev.Message; m != nil {
			id, r.usage = m.ID, m.Usage
		}
		return r.open(dst, id)
	case messages.EventContentBlockStart:
		dst = r.open(dst, "")
		cb := r.ev.ContentBlock
		if cb == nil {
			return dst
		}
		st := &reverseBlockState{kind: cb.Type}
		r.blocks[r.ev.Index] = st
		switch cb.Type {
		case messages.BlockToolUse:
			st.call, st.input = r.calls, cb.Input
			r.calls++
			id := cb.ID
			if id == "" {
				id = NewToolUseID()
			}
			return r.chunk(dst, func(d []byte) []byte {
				d = append(d, `"tool_calls":[`...)
				return append(appendToolCall(d, st.call, id, cb.Name, ""), ']')
			})
		case messages.BlockText:
			if cb.Text != "" {
				return r.content(dst, "content", cb.Text)
			}
		}
		return dst
	case messages.EventContentBlockDelta:
		dst = r.open(dst, "")
		d := r.ev.Delta
		if d == nil {
			return dst
		}
		switch d.Type {
		case messages.DeltaText:
			return r.content(dst, "content", d.Text)
		case messages.DeltaThinking:
			return r.content(dst, "reasoning_content", d.Thinking)
		case messages.DeltaInputJSON:
			st := r.blocks[r.ev.Index]
			if st == nil || st.kind != messages.BlockToolUse || d.PartialJSON == "" {
				return dst
			}
			st.gotDeltas = true
			return r.arguments(dst, st.call, d.PartialJSON)
		}
		return dst
	case messages.EventContentBlockStop:
		st := r.blocks[r.ev.Index]
		delete(r.blocks, r.ev.Index)
		if st != nil && st.kind == messages.BlockToolUse && !st.gotDeltas {
			if args := argumentsOf(st.input); args != "{}" {
				return r.arguments(dst, st.call, args)
			}
		}
		return dst
	case messages.EventMessageDelta:
		if d := r.ev.Delta; d != nil && d.StopReason != nil {
			r.stop = *d.StopReason
		}
		if u := r.ev.Usage; u != nil {
			u.applyTo(&r.usage)
		}
		return dst
	case messages.EventMessageStop:
		return r.end(dst)
	}
	return dst
}

// open starts the completion with its first chunk, once.
func (r *ChatOnMessagesStream) open(dst []byte, messageID string) []byte {
	if r.phase != reverseNew {
		return dst
	}
	r.phase = reverseOpen
	r.id = jsonquote.Append(nil, ChatID(messageID))
	return r.chunk(dst, func(d []byte) []byte { return append(d, `"role":"assistant","content":""`...) })
}

// end writes the finish chunk, the usage chunk when asked for, and [DONE].
func (r *ChatOnMessagesStream) end(dst []byte) []byte {
	dst = r.open(dst, "")
	r.phase = reverseEnded
	dst = r.head(dst)
	dst = append(dst, `[{"index":0,"delta":{},"finish_reason":`...)
	dst = jsonquote.Append(dst, MapStopReason(r.stop, r.calls > 0))
	dst = append(dst, "}]}\n\n"...)
	if r.includeUsage {
		dst = r.head(dst)
		dst = append(dst, `[],"usage":`...)
		dst = appendChatUsage(dst, r.usage)
		dst = append(dst, "}\n\n"...)
	}
	return append(dst, "data: [DONE]\n\n"...)
}

// head appends a chunk up to the value of its choices.
func (r *ChatOnMessagesStream) head(dst []byte) []byte {
	dst = append(dst, `data: {"id":`...)
	dst = append(dst, r.id...)
	dst = append(dst, `,"object":"chat.completion.chunk","created":`...)
	dst = strconv.AppendInt(dst, r.created, 10)
	dst = append(dst, `,"model":`...)
	dst = append(dst, r.alias...)
	return append(dst, `,"choices":`...)
}

// chunk appends a chunk whose delta's members delta writes.
func (r *ChatOnMessagesStream) chunk(dst []byte, delta func([]byte) []byte) []byte {
	dst = r.head(dst)
	dst = append(dst, `[{"index":0,"delta":{`...)
	dst = delta(dst)
	return append(dst, "},\"finish_reason\":null}]}\n\n"...)
}

func (r *ChatOnMessagesStream) content(dst []byte, field, text string) []byte {
	if text == "" {
		return dst
	}
	return r.chunk(dst, func(d []byte) []byte {
		d = append(append(append(d, '"'), field...), `":`...)
		return jsonquote.Append(d, text)
	})
}

func (r *ChatOnMessagesStream) arguments(dst []byte, call int, args string) []byte {
	return r.chunk(dst, func(d []byte) []byte {
		d = append(d, `"tool_calls":[{"index":`...)
		d = strconv.AppendInt(d, int64(call), 10)
		d = append(d, `,"function":{"arguments":`...)
		d = jsonquote.Append(d, args)
		return append(d, "}}]"...)
	})
}
