// Package ssecheck checks that a Messages event stream is well formed: the
// grammar a client's SDK relies on, not what the message says. Tests of
// any package, and the soak of the tools module, use it on what the proxy sends.
//
// The grammar:
//
//	stream  = message_start { ping | block } [ message_delta { ping } message_stop ] [ error ]
//	          ending in message_stop or error
//	block   = content_block_start { ping | content_block_delta } content_block_stop
//
// with: each event written "event: NAME\ndata: JSON\n\n", the JSON an
// object whose "type" is NAME and whose members are those of its type;
// blocks numbered 0, 1, 2… in order, one open at a time; each delta of its
// block's own type (text_delta in text, thinking_delta and signature_delta
// in thinking, input_json_delta in tool_use and server_tool_use,
// citations_delta in text); a block opened empty (a tool_use with an id
// and input {}; a server_tool_use alike, its id srvtoolu_…), but a
// web_search_tool_result, which opens whole and has no delta; message_delta only once no
// block is open, with a known stop reason and stop_sequence set exactly when
// the reason is stop_sequence; nothing after message_stop or error.
package ssecheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// Event is one event of a stream.
type Event struct {
	Name string
	Data []byte
}

// Parse splits a stream into its events. It insists on the proxy's own
// framing: every event has one "event" line and one "data" line, in that
// order, and ends with a blank line; nothing else is in the stream.
func Parse(stream []byte) ([]Event, error) {
	var events []Event
	for n := 1; len(stream) > 0; n++ {
		end := bytes.Index(stream, []byte("\n\n"))
		if end < 0 {
			return events, fmt.Errorf("event %d: %q does not end with a blank line", n, clip(stream))
		}
		block := stream[:end]
		stream = stream[end+2:]
		head, data, ok := bytes.Cut(block, []byte("\n"))
		name, okName := bytes.CutPrefix(head, []byte("event: "))
		payload, okData := bytes.CutPrefix(data, []byte("data: "))
		if !ok || !okName || !okData || bytes.ContainsAny(payload, "\r\n") || bytes.ContainsAny(name, "\r") {
			return events, fmt.Errorf("event %d: %q is not an \"event: NAME\" line and a \"data: JSON\" line", n, clip(block))
		}
		events = append(events, Event{Name: string(name), Data: payload})
	}
	return events, nil
}

// Text joins the text of a stream's text_delta deltas (those whose data
// decodes: Check reports the others).
func Text(events []Event) string {
	var b strings.Builder
	for _, ev := range events {
		var e messages.ContentBlockDeltaEvent
		if ev.Name == messages.EventContentBlockDelta && json.Unmarshal(ev.Data, &e) == nil && e.Delta.Type == messages.DeltaText && e.Delta.Text != nil {
			b.WriteString(*e.Delta.Text)
		}
	}
	return b.String()
}

// Check parses a stream and checks its grammar.
func Check(stream []byte) error {
	events, err := Parse(stream)
	if err != nil {
		return err
	}
	return CheckEvents(events)
}

// stopReasons are the stop reasons a message_delta may carry.
var stopReasons = map[string]bool{
	messages.StopEndTurn: true, messages.StopMaxTokens: true, messages.StopStopSequence: true,
	messages.StopToolUse: true, messages.StopPauseTurn: true, messages.StopRefusal: true,
}

// deltaTypes maps a block type to the delta types allowed in it.
var deltaTypes = map[string][]string{
	messages.BlockText:          {messages.DeltaText, messages.DeltaCitations},
	messages.BlockThinking:      {messages.DeltaThinking, messages.DeltaSignature},
	messages.BlockToolUse:       {messages.DeltaInputJSON},
	messages.BlockServerToolUse: {messages.DeltaInputJSON},
}

// strict decodes data into the type of its event: no unknown member, no
// duplicate, valid UTF-8.
var strict = json.RejectUnknownMembers(true)

// present lists which members an event's data has.
type present struct {
	Type         *string        `json:"type"`
	Index        jsontext.Value `json:"index"`
	Message      jsontext.Value `json:"message"`
	ContentBlock jsontext.Value `json:"content_block"`
	Delta        jsontext.Value `json:"delta"`
	Usage        jsontext.Value `json:"usage"`
	Error        jsontext.Value `json:"error"`
}

// checker is the grammar's state.
type checker struct {
	started   bool   // message_start came
	open      int    // index of the open block, -1 when none
	openType  string // its type
	blocks    int    // blocks started
	delta     bool   // message_delta came
	ended     bool   // message_stop or error came
	lastEvent string
}

// CheckEvents checks the grammar of a parsed stream.
func CheckEvents(events []Event) error {
	if len(events) == 0 {
		return errors.New("empty stream: no message_start")
	}
	c := checker{open: -1}
	for i, ev := range events {
		if err := c.event(ev); err != nil {
			return fmt.Errorf("event %d (%s %s): %w", i+1, ev.Name, clip(ev.Data), err)
		}
	}
	if !c.ended {
		return fmt.Errorf("the stream ends after %s, without message_stop or error", c.lastEvent)
	}
	return nil
}

func (c *checker) event(ev Event) error {
	c.lastEvent = ev.Name
	var p present
	if err := json.Unmarshal(ev.Data, &p); err != nil {
		return fmt.Errorf("data is not a JSON object: %v", err)
	}
	if p.Type == nil || *p.Type != ev.Name {
		return errors.New(`data's "type" is not the event's name`)
	}
	if c.ended {
		return errors.New("an event after the stream ended")
	}
	if !c.started && ev.Name != messages.EventMessageStart {
		return errors.New("the first event must be message_start")
	}
	need := func(members ...jsontext.Value) error {
		for _, m := range members {
			if m == nil {
				return errors.New("a required member is missing")
			}
		}
		return nil
	}
	switch ev.Name {
	case messages.EventMessageStart:
		if c.started {
			return errors.New("a second message_start")
		}
		c.started = true
		var e messages.MessageStartEvent
		if err := decode(ev.Data, &e, need(p.Message)); err != nil {
			return err
		}
		m := e.Message
		switch {
		case m.ID == "" || m.Type != "message" || m.Role != "assistant" || m.Model == "":
			return errors.New("message needs an id, type message, role assistant and a model")
		case m.Content == nil || len(m.Content) > 0:
			return errors.New("message_start's content must be []")
		case m.StopReason != nil || m.StopSequence != nil:
			return errors.New("message_start's stop_reason and stop_sequence must be null")
		case m.Usage.InputTokens < 0 || m.Usage.OutputTokens < 0:
			return errors.New("negative usage")
		}
	case messages.EventPing:
		var e messages.PingEvent
		if err := decode(ev.Data, &e, nil); err != nil {
			return err
		}
		if c.delta {
			// A ping between message_delta and message_stop is harmless,
			// and nothing the server gains from.
			return nil
		}
	case messages.EventContentBlockStart:
		var e messages.ContentBlockStartEvent
		if err := decode(ev.Data, &e, need(p.Index, p.ContentBlock)); err != nil {
			return err
		}
		if err := c.betweenBlocks(ev.Name); err != nil {
			return err
		}
		if e.Index != c.blocks {
			return fmt.Errorf("block index %d, want %d", e.Index, c.blocks)
		}
		if err := checkEmptyBlock(&e.ContentBlock); err != nil {
			return err
		}
		c.open, c.openType = e.Index, e.ContentBlock.Type
		c.blocks++
	case messages.EventContentBlockDelta:
		var e messages.ContentBlockDeltaEvent
		if err := decode(ev.Data, &e, need(p.Index, p.Delta)); err != nil {
			return err
		}
		if err := c.inOpenBlock(ev.Name, e.Index); err != nil {
			return err
		}
		return checkDelta(c.openType, &e.Delta)
	case messages.EventContentBlockStop:
		var e messages.ContentBlockStopEvent
		if err := decode(ev.Data, &e, need(p.Index)); err != nil {
			return err
		}
		if err := c.inOpenBlock(ev.Name, e.Index); err != nil {
			return err
		}
		c.open = -1
	case messages.EventMessageDelta:
		var e messages.MessageDeltaEvent
		if err := decode(ev.Data, &e, need(p.Delta, p.Usage)); err != nil {
			return err
		}
		if err := c.betweenBlocks(ev.Name); err != nil {
			return err
		}
		c.delta = true
		d := e.Delta
		switch {
		case d.StopReason == nil || !stopReasons[*d.StopReason]:
			return errors.New("message_delta needs a known stop_reason")
		case (*d.StopReason == messages.StopStopSequence) != (d.StopSequence != nil):
			return errors.New("stop_sequence must be set exactly when stop_reason is stop_sequence")
		case e.Usage.InputTokens < 0 || e.Usage.OutputTokens < 0 || e.Usage.CacheReadInputTokens < 0:
			return errors.New("negative usage")
		}
	case messages.EventMessageStop:
		var e messages.MessageStopEvent
		if err := decode(ev.Data, &e, nil); err != nil {
			return err
		}
		if !c.delta {
			return errors.New("message_stop before message_delta")
		}
		c.ended = true
	case messages.EventError:
		var e messages.ErrorResponse
		if err := decode(ev.Data, &e, need(p.Error)); err != nil {
			return err
		}
		if e.Error.Type == "" || e.Error.Message == "" {
			return errors.New("error needs a type and a message")
		}
		c.ended = true
	default:
		return errors.New("unknown event")
	}
	return nil
}

// betweenBlocks checks where a content_block_start or a message_delta
// (event name) comes: before message_delta, with no block open.
func (c *checker) betweenBlocks(name string) error {
	if c.delta {
		return fmt.Errorf("%s after message_delta", name)
	}
	if c.open >= 0 {
		return fmt.Errorf("%s while block %d is open (no content_block_stop)", name, c.open)
	}
	return nil
}

// inOpenBlock checks that a content_block_delta or content_block_stop
// (event name) is for the open block.
func (c *checker) inOpenBlock(name string, index int) error {
	if c.open < 0 || index != c.open {
		return fmt.Errorf("%s of block %d, but the open block is %d", name, index, c.open)
	}
	return nil
}

func decode(data []byte, v any, missing error) error {
	if missing != nil {
		return missing
	}
	if err := json.Unmarshal(data, v, strict); err != nil {
		return fmt.Errorf("data does not fit its event type: %v", err)
	}
	return nil
}

func checkEmptyBlock(b *messages.StreamBlock) error {
	empty := func(s *string) bool { return s != nil && *s == "" }
	switch b.Type {
	case messages.BlockText:
		if !empty(b.Text) || b.Thinking != nil || b.Signature != nil || b.ID != "" || b.Name != "" || b.Input != nil {
			return errors.New(`a text block must start as {"type":"text","text":""}`)
		}
	case messages.BlockThinking:
		if !empty(b.Thinking) || b.Signature == nil || b.Text != nil || b.ID != "" || b.Name != "" || b.Input != nil {
			return errors.New(`a thinking block must start as {"type":"thinking","thinking":"","signature":""}`)
		}
	case messages.BlockToolUse, messages.BlockServerToolUse:
		if b.ID == "" || b.Text != nil || b.Thinking != nil || b.Signature != nil || b.ToolUseID != "" || b.Content != nil ||
			!bytes.Equal(bytes.TrimSpace(b.Input), []byte("{}")) {
			return fmt.Errorf(`a %s block must start with an id, its name and "input":{}`, b.Type)
		}
		if b.Type == messages.BlockServerToolUse && !strings.HasPrefix(b.ID, "srvtoolu_") {
			return fmt.Errorf("a server_tool_use id must start with srvtoolu_, got %q", b.ID)
		}
	case messages.BlockWebSearchToolResult:
		// It comes whole: its results (or its error) in the start event.
		if !strings.HasPrefix(b.ToolUseID, "srvtoolu_") || (b.Content.Kind() != '[' && b.Content.Kind() != '{') ||
			b.Text != nil || b.Thinking != nil || b.ID != "" || b.Input != nil {
			return errors.New("a web_search_tool_result block must start whole, with the tool_use_id of its server_tool_use and its content")
		}
	default:
		return fmt.Errorf("unknown block type %q", b.Type)
	}
	return nil
}

func checkDelta(blockType string, d *messages.BlockDelta) error {
	allowed := false
	for _, t := range deltaTypes[blockType] {
		allowed = allowed || t == d.Type
	}
	if !allowed {
		return fmt.Errorf("%s in a %s block", d.Type, blockType)
	}
	if d.Type == messages.DeltaCitations {
		if d.Citation.Kind() != '{' || d.Text != nil || d.Thinking != nil || d.Signature != nil || d.PartialJSON != nil {
			return errors.New("citations_delta must carry its citation object and no other field")
		}
		return nil
	}
	if d.Citation != nil {
		return fmt.Errorf("%s must not carry a citation", d.Type)
	}
	var field *string
	set := 0
	for _, f := range []*string{d.Text, d.Thinking, d.Signature, d.PartialJSON} {
		if f != nil {
			set++
		}
	}
	switch d.Type {
	case messages.DeltaText:
		field = d.Text
	case messages.DeltaThinking:
		field = d.Thinking
	case messages.DeltaSignature:
		field = d.Signature
	case messages.DeltaInputJSON:
		field = d.PartialJSON
	}
	if field == nil || set != 1 {
		return fmt.Errorf("%s must carry its own field and no other", d.Type)
	}
	return nil
}

func clip(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
