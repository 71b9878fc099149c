package translate

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// checkChunkDecode decodes data as chunkDecoder.decode does and with jsonv2 alone:
// the same chunk, or both an error. It reports whether the scanner took
// data (jsonv2 not needed).
func checkChunkDecode(t *testing.T, data []byte) (fast bool) {
	t.Helper()
	var want chat.Chunk
	werr := json.Unmarshal(data, &want, chunkDecodeOptions)
	// A reused chunk, its array holding an earlier chunk's choices, as
	// chatLanes reuses it.
	got := chat.Chunk{ID: "old", Choices: []chat.ChunkChoice{{Index: 3, FinishReason: "stop", Delta: chat.Delta{Content: "old", ToolCalls: make([]chat.ToolCallDelta, 1)}}}}
	// Twice: the second time the strings of the chunk before are there to
	// be kept.
	d := new(chunkDecoder)
	for range 2 {
		gerr := d.decode(data, &got)
		compareChunk(t, data, got, gerr, want, werr)
	}
	fd := &fastDecoder{sc: scanner{b: data}}
	var ck chat.Chunk
	fast = fd.chunk(&ck, "", "") && fd.sc.ws() == 0 && fd.sc.i == len(data)
	if fast && werr != nil {
		t.Fatalf("%q: the scanner took a chunk jsonv2 refuses (%v)", data, werr)
	}
	// The quick path takes only what the scanner's chunk takes, to the
	// same chunk.
	cd := &chunkDecoder{fastDecoder: fastDecoder{sc: scanner{b: data}}}
	var quick chat.Chunk
	if cd.quickChunk(&quick, "", "") && cd.sc.ws() == 0 && cd.sc.i == len(data) {
		if !fast {
			t.Fatalf("%q: the quick path took a chunk the scanner's chunk leaves to jsonv2", data)
		}
		compareChunk(t, data, quick, nil, ck, nil)
	}
	return fast
}

// checkChunkAgain decodes a, then b with the same decoder and chunk, as a
// stream's chunks are decoded: b as jsonv2 decodes it, whatever came
// before. It reports whether b was decoded as a's chunk again (only its
// text read).
func checkChunkAgain(t *testing.T, a, b []byte) (again bool) {
	t.Helper()
	var want chat.Chunk
	werr := json.Unmarshal(b, &want, chunkDecodeOptions)
	var got chat.Chunk
	d := new(chunkDecoder)
	_ = d.decode(a, &got)
	// decode's first step, then the rest of decode if it did not take b.
	again = d.again(b, &got)
	var gerr error
	if !again {
		gerr = d.decode(b, &got)
	}
	compareChunk(t, b, got, gerr, want, werr)
	return again
}

// textSwapped is data with its delta text string (where the quick path
// found it) replaced by text; ok is false when data has none.
func textSwapped(data []byte, text string) (b []byte, ok bool) {
	d := new(chunkDecoder)
	var ck chat.Chunk
	if d.decode(data, &ck) != nil || len(d.memo) == 0 {
		return nil, false
	}
	return slices.Concat(data[:d.memoAt], []byte(text), data[d.memoTo:]), true
}

// chunkTexts replace a chunk's delta text: strings (with escapes,
// multi-byte characters), and what is not one string, or more than one,
// or a string then other members.
var chunkTexts = []string{
	`""`, `"x"`, `"word7 "`, `"a\nb \"q\" \u00e9 \ud83d\ude00 é"`, `"é"`, `"\u0000"`, `"` + strings.Repeat("long text ", 40) + `"`,
	`null`, `1`, `"a" `, ` "a"`, `"a","content":"b"`, `"a","x":"`, `"a"}],"usage":{"total_tokens":1},"x":[{"y":"`,
	`"unterminated`, `"bad \x escape"`, "\"ctl \x01\"", "\"\xff\"", `"a""b"`, `"\"`, ``,
}

// TestChunkDecodeAgain: consecutive chunks of the fixtures, and chunks
// whose text is replaced (by strings, and by what is not one string), decode
// as jsonv2 decodes them; the text chunks of a stream after its first are
// decoded as the chunk before again.
func TestChunkDecodeAgain(t *testing.T) {
	// againIn counts the chunks of a stream decoded as the chunk before.
	againIn := func(stream []byte) int {
		again := 0
		var prev []byte
		for _, line := range bytes.Split(stream, []byte("\n")) {
			data, ok := bytes.CutPrefix(line, []byte("data:"))
			data = bytes.TrimSpace(data)
			if !ok || bytes.Equal(data, doneData) {
				continue
			}
			if prev != nil && checkChunkAgain(t, prev, data) {
				again++
			}
			prev = data
		}
		return again
	}
	again := 0
	for _, name := range fixtures.BackendStreams() {
		raw, _ := fixtures.Backend(name)
		again += againIn(raw)
	}
	if again < 3 {
		t.Errorf("%d chunks of the fixtures decoded as the chunk before again, want 3 or more", again)
	}
	// The bench's stub: a role chunk, 64 text chunks, all but the first
	// of them like the one before.
	if n := againIn(bytes.Join(stubStream(), nil)); n != 63 {
		t.Errorf("%d chunks of the stub's stream decoded as the chunk before again, want 63", n)
	}
	swapped, strs := 0, 0
	for _, data := range chunkData(t) {
		for _, text := range chunkTexts {
			b, ok := textSwapped(data, text)
			if !ok {
				continue
			}
			swapped++
			if checkChunkAgain(t, data, b) {
				strs++
			}
		}
	}
	if swapped == 0 || strs == 0 || strs == swapped {
		t.Errorf("%d of %d chunks with their text replaced decoded again: want some, not all", strs, swapped)
	}
}

// FuzzChunkDecodeAgain: a chunk decoded after another, whatever both are,
// decodes as jsonv2 decodes it; b is also tried as a's text (its delta's
// text string replaced by b).
func FuzzChunkDecodeAgain(f *testing.F) {
	data := chunkData(f)
	for i, a := range data {
		f.Add(a, data[(i+1)%len(data)])
		f.Add(a, []byte(chunkTexts[i%len(chunkTexts)]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkChunkAgain(t, a, b)
		if s, ok := textSwapped(a, string(b)); ok {
			checkChunkAgain(t, a, s)
		}
	})
}

// compareChunk compares copies of the chunks.
func compareChunk(t *testing.T, data []byte, got chat.Chunk, gerr error, want chat.Chunk, werr error) {
	t.Helper()
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%q: chunkDecoder.decode error %v, jsonv2 error %v", data, gerr, werr)
	}
	// No choices: a nil slice, an empty one or the reused array.
	if len(got.Choices) == 0 {
		got.Choices = nil
	}
	if len(want.Choices) == 0 {
		want.Choices = nil
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: chunkDecoder.decode differs from jsonv2:\n got %+v\nwant %+v", data, got, want)
	}
}

// chunkUsualShapes: the first samples, which the scanner takes.
const chunkUsualShapes = 10

var chunkDecodeSamples = []string{
	`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"logprobs":null}]}`,
	`{"choices":[{"delta":{"content":"a\nb \"q\" \u00e9 \ud83d\ude00 é"},"finish_reason":null,"index":0}],"created":0,"id":"chatcmpl-stub","model":"m","object":"chat.completion.chunk"}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"r","reasoning":null,"refusal":null,"tool_calls":null,"content":null}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}},{"index":-0,"function":{"arguments":"1}"}}]}}]}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"stop","stop_reason":151643}],"usage":null}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":1},"prompt_tokens_details":{"cached_tokens":4}}}`,
	`{"choices":null,"id":null,"model":null,"usage":null}`,
	` {"choices":[{"index":1,"delta":null,"finish_reason":"length","stop_reason":null},{"index":0,"delta":{"Content":"x","function_call":{"name":"g"}}}],"extra":{"a":[1,{"b":null}]}} `,
	`{}`,
	`{"detail":"not found"}`, // an error in another shape: an empty chunk, then parseBackendError
	// Shapes the scanner leaves to jsonv2 (after the first chunkUsualShapes).
	`{"error":{"message":"boom","type":"server_error"}}`,
	`{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[]}`,
	`{"choices":[{"index":1.0,"delta":{}}]}`,
	`{"choices":[{"index":1e2,"delta":{}}]}`,
	`{"choices":[{"index":99999999999999999999,"delta":{}}]}`,
	`{"choices":[{"index":"0","delta":{}}]}`,
	`{"choices":[{"index":0,"delta":{"content":5}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":{}}}]}`,
	`{"choices":[{"index":0,"delta":[]}]}`,
	`{"choices":{}}`,
	`{"usage":[]}`,
	`{"cho\u0069ces":[]}`,
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\"}}]}",
	`{"choices":[]} x`,
	`[]`, `null`, ``, `{`, `keep-alive`,
}

func chunkData(t testing.TB) [][]byte {
	var out [][]byte
	for _, name := range fixtures.BackendStreams() {
		b, err := fixtures.Backend(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && !bytes.Equal(bytes.TrimSpace(data), doneData) {
				out = append(out, bytes.TrimSpace(data))
			}
		}
	}
	for _, s := range chunkDecodeSamples {
		out = append(out, []byte(s))
	}
	return out
}

// TestChunkDecodeMatchesJSONv2: every chunk of the backend fixtures and
// the samples decode as jsonv2 decodes them, and the scanner takes the
// fixtures' chunks (all but their error objects) and the usual shapes.
func TestChunkDecodeMatchesJSONv2(t *testing.T) {
	for _, name := range fixtures.BackendStreams() {
		b, _ := fixtures.Backend(name)
		for _, line := range bytes.Split(b, []byte("\n")) {
			data, ok := bytes.CutPrefix(line, []byte("data:"))
			data = bytes.TrimSpace(data)
			if !ok || bytes.Equal(data, doneData) || bytes.Contains(data, []byte(`"error"`)) {
				continue
			}
			if !checkChunkDecode(t, data) {
				t.Errorf("%s: the scanner gave up on %s", name, data)
			}
		}
	}
	checkSamples(t, chunkDecodeSamples, chunkUsualShapes, checkChunkDecode)
}

// Random edits of the fixtures' chunks and the samples decode as jsonv2
// decodes them.
func TestChunkDecodeMatchesJSONv2Mutated(t *testing.T) {
	inserts := []string{`null`, `1`, `-2`, `1.5`, `"x"`, `{}`, `[]`, `,"a":1`, `,"content":"c"`, `,"index":1`, `"\u00e9"`, `,"tool_calls":[]`, `true`, `,"role":"user"`, `,"finish_reason":"stop"`, `,"delta":{}`, `,"usage":{}`, `,"function":{"name":"n"}`, `\n`, `\"`}
	checkMutated(t, chunkData(t), inserts, 17, checkChunkDecode)
}

// FuzzChunkDecode: chunkDecoder.decode decodes whatever data as jsonv2 does.
func FuzzChunkDecode(f *testing.F) {
	for _, d := range chunkData(f) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkChunkDecode(t, data) })
}

// checkChatResponseDecode decodes body as decodeChatResponse does and with
// jsonv2 alone: the same response, or both an error. It reports whether
// the scanner took body (jsonv2 not needed).
func checkChatResponseDecode(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	var want, got chat.Response
	werr := json.Unmarshal(body, &want, decodeOpts)
	gerr := decodeChatResponse(body, &got)
	if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
		t.Fatalf("%q: decodeChatResponse error %v, jsonv2 error %v", body, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeChatResponse differs from jsonv2:\n got %+v\nwant %+v", body, got, want)
	}
	d := &fastDecoder{sc: scanner{b: body}}
	var r chat.Response
	fast = d.chatResponse(&r) && d.sc.ws() == 0 && d.sc.i == len(body)
	if fast && werr != nil {
		t.Fatalf("%q: the scanner took an answer jsonv2 refuses (%v)", body, werr)
	}
	return fast
}

// chatResponseUsualShapes: the first samples, which the scanner takes.
const chatResponseUsualShapes = 9

var chatResponseDecodeSamples = []string{
	`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"Hello from stub-backend. You said: hi","role":"assistant"}}],"created":1795782830,"id":"chatcmpl-stub","model":"m","object":"chat.completion","usage":{"completion_tokens":6,"prompt_tokens":1,"total_tokens":7}}`,
	chatResp(`{"role":"assistant","content":"Hi","reasoning_content":"r","refusal":"no","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c","type":"function","function":{"name":"apply_patch","arguments":"not-json{"}}]}`, `"tool_calls"`, ""),
	chatResp(`{"role":"assistant","content":null,"reasoning":"r","tool_calls":[{"type":"function","function":{"name":"f","arguments":"[1]"}}]}`, `"length"`, `,"stop_reason":151643,"logprobs":null`),
	`{"id":null,"object":null,"created":null,"model":null,"choices":null,"usage":null}`,
	`{"choices":[{"index":0,"message":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":null,"prompt_tokens_details":null,"completion_tokens_details":{"reasoning_tokens":3,"x":1}}}`,
	`{"choices":[{"message":{"role":"assistant","content":"a\nb \"q\" \u00e9 \ud83d\ude00 é","tool_calls":[{"id":null,"type":null,"function":null}]}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}}`,
	` {"choices":[],"system_fingerprint":"x","extra":{"a":[1,{"b":null}]}} `,
	`{}`,
	`{"error":{"message":"boom","type":"server_error"}}`,
	// Shapes the scanner leaves to jsonv2 (after the first
	// chatResponseUsualShapes).
	`{"choices":[{"message":{"content":"a","content":"b"}}]}`,
	`{"choices":[],"choices":[]}`,
	`{"created":1.5}`,
	`{"created":"1"}`,
	`{"choices":[{"index":99999999999999999999}]}`,
	`{"choices":[{"message":{"content":5}}]}`,
	`{"choices":[{"message":{"tool_calls":{}}}]}`,
	`{"choices":[null]}`,
	`{"choices":{}}`,
	`{"usage":[]}`,
	`{"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}`,
	`{"cho\u0069ces":[]}`,
	"{\"choices\":[{\"message\":{\"content\":\"\xff\"}}]}",
	`{"choices":[]} x`,
	`[]`, `null`, ``, `{`,
}

// TestChatResponseDecodeMatchesJSONv2: the answers of the samples (and
// the stub's) decode as jsonv2 decodes them, and the scanner takes the
// usual shapes.
func TestChatResponseDecodeMatchesJSONv2(t *testing.T) {
	checkSamples(t, chatResponseDecodeSamples, chatResponseUsualShapes, checkChatResponseDecode)
}

// Random edits of the samples decode as jsonv2 decodes them.
func TestChatResponseDecodeMatchesJSONv2Mutated(t *testing.T) {
	inserts := []string{`null`, `1`, `-2`, `1.5`, `"x"`, `{}`, `[]`, `,"a":1`, `,"content":"c"`, `,"index":1`, `"\u00e9"`, `,"tool_calls":[]`, `true`, `,"role":"user"`, `,"finish_reason":"stop"`, `,"message":{}`, `,"usage":{}`, `,"function":{"name":"n"}`, `\n`, `\"`}
	bodies := withSamples(chatResponseDecodeSamples[:chatResponseUsualShapes])
	checkMutated(t, bodies, inserts, 17, checkChatResponseDecode)
}

// FuzzChatResponseDecode: decodeChatResponse decodes whatever body as
// jsonv2 does.
func FuzzChatResponseDecode(f *testing.F) {
	for _, s := range chatResponseDecodeSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkChatResponseDecode(t, body) })
}
