package translate

import (
	"bytes"
	"strings"
	"testing"
)

const nativeStream = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"qwen3\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\r\n\r\n" +
	": a comment\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"h\u00e9\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// TestNativeStreamRelay feeds a Messages stream split at every offset: the
// output is the input with message_start's model replaced, handed out in
// whole events only.
func TestNativeStreamRelay(t *testing.T) {
	want := strings.Replace(nativeStream, `"model":"qwen3"`, `"model":"alias"`, 1)
	for cut := 0; cut <= len(nativeStream); cut++ {
		n := NewMessagesOnMessagesStream("alias")
		var out []byte
		for _, part := range []string{nativeStream[:cut], nativeStream[cut:]} {
			start := len(out)
			var err error
			out, err = n.Feed(out, []byte(part))
			if err != nil {
				t.Fatal(err)
			}
			if got := out[start:]; len(got) > 0 && !endsWithBlankLine(got) {
				t.Fatalf("cut %d: output ends inside an event: %q", cut, got)
			}
		}
		if string(out) != want {
			t.Fatalf("cut %d:\n got %q\nwant %q", cut, out, want)
		}
		if !n.Done() || !n.Ended() || n.BackendErr() != nil {
			t.Fatalf("cut %d: done %v ended %v err %v", cut, n.Done(), n.Ended(), n.BackendErr())
		}
		if more, _ := n.Feed(nil, []byte("event: ping\ndata: {}\n\n")); len(more) > 0 {
			t.Fatalf("bytes after message_stop relayed: %q", more)
		}
	}
}

func TestNativeStreamModelAddedAndErrors(t *testing.T) {
	n := NewMessagesOnMessagesStream("a\"b")
	out, _ := n.Feed(nil, []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"))
	want := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"a\\\"b\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"
	if string(out) != want {
		t.Fatalf("got  %q\nwant %q", out, want)
	}
	if !n.Done() || n.Ended() || n.BackendErr() == nil || n.BackendErr().Message != "busy" {
		t.Fatalf("done %v ended %v err %v", n.Done(), n.Ended(), n.BackendErr())
	}
	if got := n.Fail(nil, "api_error", "x"); len(got) != 0 {
		t.Fatalf("Fail after the end appended %q", got)
	}
	broken := NewMessagesOnMessagesStream("a")
	broken.Feed(nil, []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\nevent: content_block_start\ndata: {\"type\""))
	if broken.Done() || broken.Ended() {
		t.Fatal("a stream cut mid-event counts as ended")
	}
	if got := string(broken.Fail(nil, "api_error", "cut")); got != "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"cut\"}}\n\n" {
		t.Fatalf("Fail = %q", got)
	}
}

// endsWithBlankLine reports whether b ends with an empty line: its last
// line ending follows another line ending, or b is that ending alone.
func endsWithBlankLine(b []byte) bool {
	cut := func(b []byte) ([]byte, bool) {
		for _, e := range []string{"\r\n", "\n", "\r"} {
			if rest, ok := bytes.CutSuffix(b, []byte(e)); ok {
				return rest, true
			}
		}
		return b, false
	}
	rest, ok := cut(b)
	if !ok {
		return false
	}
	_, ok = cut(rest)
	return ok || len(rest) == 0
}

// TestNativeStreamSkippedStartKeepsItsUsage: when the relay leaves out the
// backend's message_start (a retry in a mixed pool: the client already has
// one), that event's input-token count still reaches BackendUsage.
func TestNativeStreamSkippedStartKeepsItsUsage(t *testing.T) {
	in := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":80,\"cache_read_input_tokens\":24,\"output_tokens\":1}}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":28}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for _, skip := range []bool{false, true} {
		n := NewMessagesOnMessagesStream("alias")
		if skip {
			n.SkipStart()
		}
		out, err := n.Feed(nil, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if skip == bytes.Contains(out, []byte("message_start")) {
			t.Errorf("skip=%v: message_start relayed: %v", skip, !skip)
		}
		u := n.BackendUsage()
		if u == nil || u.PromptTokens != 104 || u.CachedTokens() != 24 || u.CompletionTokens != 28 {
			t.Errorf("skip=%v: usage %+v, want prompt 104 (80 + 24 cached), completion 28", skip, u)
		}
	}
}
