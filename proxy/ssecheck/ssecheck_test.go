package ssecheck

import (
	"strings"
	"testing"
)

// Events of a well-formed stream, by short name.
var ev = map[string]string{
	"start":      `event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`,
	"ping":       `event: ping` + "\n" + `data: {"type": "ping"}`,
	"text0":      `event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	"textd0":     `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
	"stop0":      `event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
	"think1":     `event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	"thinkd1":    `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
	"sigd1":      `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
	"stop1":      `event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":1}`,
	"tool2":      `event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_1","name":"Bash","input":{}}}`,
	"toold2":     `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`,
	"stop2":      `event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":2}`,
	"mdelta":     `event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":0}}`,
	"mstop":      `event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	"error":      `event: error` + "\n" + `data: {"type":"error","error":{"type":"api_error","message":"boom"}}`,
	"text1":      `event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	"textd1":     `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"x"}}`,
	"textd2":     `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"x"}}`,
	"json0":      `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}`,
	"think0d":    `event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}`,
	"mdeltaEnd":  `event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":0}}`,
	"mdeltaSeq":  `event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":0}}`,
	"mdeltaSeqN": `event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":0}}`,
	"mdeltaEndS": `event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":"END"},"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":0}}`,
	"mdeltaBad":  `event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"done","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":0}}`,
	"mdeltaNoU":  `event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}`,
}

func stream(names ...string) []byte {
	var b strings.Builder
	for _, n := range names {
		e, ok := ev[n]
		if !ok {
			e = n // a literal event
		}
		b.WriteString(e)
		b.WriteString("\n\n")
	}
	return []byte(b.String())
}

func TestValid(t *testing.T) {
	for name, s := range map[string][]byte{
		"every block type": stream("start", "ping", "text0", "textd0", "ping", "stop0", "think1", "thinkd1", "sigd1", "stop1", "tool2", "toold2", "stop2", "mdelta", "mstop"),
		"no blocks":        stream("start", "mdeltaEnd", "mstop"),
		"empty block":      stream("start", "text0", "stop0", "mdeltaEnd", "mstop"),
		"stop sequence":    stream("start", "mdeltaSeq", "mstop"),
		"ping at the end":  stream("start", "ping", "mdeltaEnd", "ping", "mstop"),
		"error mid-block":  stream("start", "text0", "textd0", "error"),
		"error at once":    stream("start", "error"),
	} {
		if err := Check(s); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Each rule of the grammar, broken once: Check must name the fault.
func TestInvalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream []byte
		want   string
	}{
		{"empty", nil, "empty stream"},
		{"ping first", stream("ping", "start", "mdeltaEnd", "mstop"), "first event must be message_start"},
		{"block first", stream("text0", "stop0", "mdeltaEnd", "mstop"), "first event must be message_start"},
		{"second message_start", stream("start", "start", "mdeltaEnd", "mstop"), "second message_start"},
		{"index skips 0", stream("start", "text1", "textd1", "stop1", "mdeltaEnd", "mstop"), "block index 1, want 0"},
		{"index repeats", stream("start", "text0", "stop0", "text0", "stop0", "mdeltaEnd", "mstop"), "block index 0, want 1"},
		{"two blocks open", stream("start", "text0", "text1", "stop1", "stop0", "mdeltaEnd", "mstop"), "while block 0 is open"},
		{"delta for another block", stream("start", "text0", "textd1", "stop0", "mdeltaEnd", "mstop"), "content_block_delta of block 1, but the open block is 0"},
		{"delta after stop", stream("start", "text0", "stop0", "textd0", "mdeltaEnd", "mstop"), "open block is -1"},
		{"delta with no block", stream("start", "textd0", "mdeltaEnd", "mstop"), "open block is -1"},
		{"input_json_delta in text", stream("start", "text0", "json0", "stop0", "mdeltaEnd", "mstop"), "input_json_delta in a text block"},
		{"thinking_delta in text", stream("start", "text0", "think0d", "stop0", "mdeltaEnd", "mstop"), "thinking_delta in a text block"},
		{"text_delta in tool_use", stream("start", "text0", "stop0", "text1", "stop1", "tool2", "textd2", "stop2", "mdelta", "mstop"), "text_delta in a tool_use block"},
		{"stop of another block", stream("start", "text0", "stop1", "mdeltaEnd", "mstop"), "content_block_stop of block 1, but the open block is 0"},
		{"missing content_block_stop", stream("start", "text0", "textd0", "mdeltaEnd", "mstop"), "no content_block_stop"},
		{"message_stop without message_delta", stream("start", "mstop"), "message_stop before message_delta"},
		{"second message_delta", stream("start", "mdeltaEnd", "mdeltaEnd", "mstop"), "message_delta after message_delta"},
		{"block after message_delta", stream("start", "mdeltaEnd", "text0", "stop0", "mstop"), "content_block_start after message_delta"},
		{"event after message_stop", stream("start", "mdeltaEnd", "mstop", "ping"), "after the stream ended"},
		{"event after error", stream("start", "error", "mdeltaEnd", "mstop"), "after the stream ended"},
		{"no end", stream("start", "text0", "textd0", "stop0"), "without message_stop or error"},
		{"no message_stop", stream("start", "mdeltaEnd"), "without message_stop or error"},
		{"unknown stop_reason", stream("start", "mdeltaBad", "mstop"), "known stop_reason"},
		{"stop_sequence without its reason", stream("start", "mdeltaEndS", "mstop"), "stop_sequence must be set exactly"},
		{"stop_sequence reason without a sequence", stream("start", "mdeltaSeqN", "mstop"), "stop_sequence must be set exactly"},
		{"message_delta without usage", stream("start", "mdeltaNoU", "mstop"), "required member is missing"},
		{"type differs from the name", stream("start", "event: ping\ndata: {\"type\":\"message_stop\"}", "mdeltaEnd", "mstop"), `"type" is not the event's name`},
		{"data not JSON", stream("start", "event: ping\ndata: {\"type\":\"ping\"", "mdeltaEnd", "mstop"), "not a JSON object"},
		{"unknown event", stream("start", "event: pong\ndata: {\"type\":\"pong\"}", "mdeltaEnd", "mstop"), "unknown event"},
		{"unknown member", stream("start", "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0,\"extra\":1}", "mdeltaEnd", "mstop"), "does not fit its event type"},
		{"missing index", stream("start", "text0", "event: content_block_stop\ndata: {\"type\":\"content_block_stop\"}", "mdeltaEnd", "mstop"), "required member is missing"},
		{"unknown block type", stream("start", "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"image\"}}", "stop0", "mdeltaEnd", "mstop"), `unknown block type "image"`},
		{"text block not empty", stream("start", "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"x\"}}", "stop0", "mdeltaEnd", "mstop"), "text block must start"},
		{"thinking block without signature", stream("start", "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}", "stop0", "mdeltaEnd", "mstop"), "thinking block must start"},
		{"tool_use with input", stream("start", "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c\",\"name\":\"n\",\"input\":{\"a\":1}}}", "stop0", "mdelta", "mstop"), "tool_use block must start"},
		{"tool_use without id", stream("start", "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"name\":\"n\",\"input\":{}}}", "stop0", "mdelta", "mstop"), "tool_use block must start"},
		{"delta without its field", stream("start", "text0", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"partial_json\":\"x\"}}", "stop0", "mdeltaEnd", "mstop"), "must carry its own field"},
		{"message_start with content", stream(strings.Replace(ev["start"], `"content":[]`, `"content":[{"type":"text","text":""}]`, 1), "mdeltaEnd", "mstop"), "content must be []"},
		{"message_start with a stop reason", stream(strings.Replace(ev["start"], `"stop_reason":null`, `"stop_reason":"end_turn"`, 1), "mdeltaEnd", "mstop"), "must be null"},
		{"message_start without model", stream(strings.Replace(ev["start"], `"model":"m"`, `"model":""`, 1), "mdeltaEnd", "mstop"), "needs an id"},
		{"error without message", stream("start", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"\"}}"), "needs a type and a message"},
		{"no event line", []byte("data: {\"type\":\"ping\"}\n\n"), `is not an "event: NAME" line`},
		{"data on two lines", []byte(ev["start"] + "\ndata: {}\n\n"), `is not an "event: NAME" line`},
		{"crlf", []byte(strings.ReplaceAll(string(stream("start", "mdeltaEnd", "mstop")), "\n", "\r\n")), "does not end with a blank line"},
		{"no final blank line", stream("start", "mdeltaEnd", "mstop")[:len(stream("start", "mdeltaEnd", "mstop"))-1], "does not end with a blank line"},
	} {
		err := Check(tc.stream)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Check = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	events, err := Parse(stream("start", "text0", "textd0", "stop0", "think1", "thinkd1", "stop1", "text1", "textd1", "stop1", "tool2", "toold2", "stop2", "mdelta", "mstop"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Text(events); got != "Hix" {
		t.Fatalf("Text = %q, want the two text deltas Hi and x, not the thinking or tool input", got)
	}
}

func TestParse(t *testing.T) {
	events, err := Parse(stream("start", "ping"))
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Name != "message_start" || events[1].Name != "ping" || string(events[1].Data) != `{"type": "ping"}` {
		t.Fatalf("Parse = %q", events)
	}
}
