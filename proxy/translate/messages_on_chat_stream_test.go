package translate

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
)

const (
	testAlias = "claude-sonnet-test"
	testMsgID = "msg_test"
)

// runStream translates a backend stream fed in pieces cut at the given
// offsets. It returns the events and Feed's error.
func runStream(in []byte, cuts []int) ([]byte, error) {
	return feedCut(NewMessagesOnChatStream(testAlias, testMsgID, 42), in, cuts, messages.APIError)
}

// chatStreamTranslator is what the translators of a backend's Chat stream
// (MessagesOnChatStream, ResponsesOnChatStream) share.
type chatStreamTranslator interface {
	Start(dst []byte) []byte
	Feed(dst, p []byte) ([]byte, error)
	Finish(dst []byte) []byte
	Fail(dst []byte, errType, message string) []byte
}

// feedCut feeds in to s in pieces cut at the given offsets, as the server
// does: Feed each piece, then Finish, or Fail with failType when Feed
// reports an error. It returns the events and Feed's error.
func feedCut(s chatStreamTranslator, in []byte, cuts []int, failType string) ([]byte, error) {
	out := s.Start(nil)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		var err error
		if out, err = s.Feed(out, in[prev:c]); err != nil {
			msg := err.Error()
			var be *BackendError
			if errors.As(err, &be) {
				msg = be.Message
			}
			return s.Fail(out, failType, msg), err
		}
		prev = c
	}
	return s.Finish(out), nil
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := fixtures.Backend(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func randomCuts(r *rand.Rand, n int) []int {
	cuts := make([]int, r.IntN(n/4+2))
	for i := range cuts {
		cuts[i] = r.IntN(n + 1)
	}
	slices.Sort(cuts)
	return cuts
}

// TestStreamGolden feeds every backend fixture whole, one byte at a time,
// split at every single offset and in random splits: the events must be
// the same bytes each time, match the golden file, and be well formed.
func TestStreamGolden(t *testing.T) {
	names := fixtures.BackendStreams()
	if len(names) < 10 {
		t.Fatalf("only %d backend stream fixtures", len(names))
	}
	r := rand.New(rand.NewPCG(7, 11))
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			in := fixture(t, name)
			want, wantErr := runStream(in, nil)
			if err := ssecheck.Check(want); err != nil {
				t.Fatalf("grammar: %v\n%s", err, want)
			}
			golden(t, filepath.Join("testdata", "stream", strings.TrimSuffix(name, ".sse")+".events"), want)

			check := func(how string, cuts []int) {
				t.Helper()
				got, err := runStream(in, cuts)
				if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
					t.Fatalf("%s (cuts %v): events differ from the whole feed:\n got:\n%s\nwant:\n%s", how, cuts, got, want)
				}
			}
			ones := make([]int, 0, len(in))
			for i := 1; i < len(in); i++ {
				ones = append(ones, i)
			}
			check("one byte at a time", ones)
			for i := 0; i <= len(in); i++ {
				check("one split", []int{i})
			}
			for range 300 {
				check("random splits", randomCuts(r, len(in)))
			}
		})
	}
}

// accumulate reads a stream the way the official Go SDK does: its SSE
// decoder, its event union, Message.Accumulate.
func accumulate(t testing.TB, stream []byte) (anthropic.Message, error) {
	t.Helper()
	res := &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(stream)),
	}
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	return msg, s.Err()
}

type wantBlock struct {
	typ, text, id, name, input string
}

func blocksOf(m anthropic.Message) []wantBlock {
	var got []wantBlock
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			got = append(got, wantBlock{typ: "text", text: b.Text})
		case "thinking":
			got = append(got, wantBlock{typ: "thinking", text: b.Thinking})
		case "tool_use":
			got = append(got, wantBlock{typ: "tool_use", id: b.ID, name: b.Name, input: string(b.Input)})
		default:
			got = append(got, wantBlock{typ: b.Type})
		}
	}
	return got
}

// TestStreamFixturesSDK checks what the SDK makes of each fixture's
// events: the content blocks, the stop reason, the usage.
func TestStreamFixturesSDK(t *testing.T) {
	for _, tc := range []struct {
		fixture    string
		blocks     []wantBlock
		stop       string
		in, out    int64
		cacheRead  int64
		streamErr  string // the SDK's stream error, for a failed stream
		backendErr string // Feed's *BackendError message
	}{
		{fixture: "text-with-usage.sse", blocks: []wantBlock{{typ: "text", text: "Hello, world é世😀"}}, stop: "end_turn", in: 15, out: 6, cacheRead: 16},
		{fixture: "empty-first-choices.sse", blocks: []wantBlock{{typ: "text", text: "Hi"}}, stop: "end_turn", in: 42, out: 1},
		{fixture: "tool-call-fragments.sse", blocks: []wantBlock{{typ: "tool_use", id: "call_a1", name: "Bash", input: `{"command": "ls -la", "description": "List files"}`}}, stop: "tool_use", in: 812, out: 24},
		{fixture: "parallel-tool-calls.sse", blocks: []wantBlock{
			{typ: "tool_use", id: "call_b1", name: "Read", input: `{"file_path": "/src/a.go"}`},
			{typ: "tool_use", id: "call_b2", name: "Read", input: `{"file_path": "/src/b.go"}`},
		}, stop: "tool_use", in: 42, out: 13},
		{fixture: "parallel-tool-calls-same-index.sse", blocks: []wantBlock{
			{typ: "tool_use", id: "call_c1", name: "Bash", input: `{"command":"date"}`},
			{typ: "tool_use", id: "call_c2", name: "Bash", input: `{"command":"uptime"}`},
		}, stop: "tool_use", in: 42, out: 10},
		{fixture: "text-then-tool-call.sse", blocks: []wantBlock{
			{typ: "text", text: "Let me check."},
			{typ: "tool_use", id: "call_d1", name: "Bash", input: `{"command": "git status"}`},
		}, stop: "tool_use", in: 42, out: 10},
		{fixture: "reasoning-content.sse", blocks: []wantBlock{{typ: "thinking", text: "The user wants a greeting."}, {typ: "text", text: "Hello!"}}, stop: "end_turn", in: 20, out: 9},
		{fixture: "reasoning-field.sse", blocks: []wantBlock{{typ: "thinking", text: "The user wants a greeting."}, {typ: "text", text: "Hello!"}}, stop: "end_turn", in: 20, out: 9},
		{fixture: "no-content-finish.sse", blocks: nil, stop: "end_turn", in: 12, out: 0},
		{fixture: "length-finish.sse", blocks: []wantBlock{{typ: "text", text: "Once upon a"}}, stop: "max_tokens", in: 42, out: 3},
		{fixture: "tool-args-not-json.sse", blocks: []wantBlock{
			{typ: "tool_use", id: "call_e1", name: "Bash", input: `{"raw_arguments":"not-json{"}`},
			{typ: "tool_use", id: "call_e2", name: "Write", input: `{"raw_arguments":"{\"file_path\": \"/src/a.go\", \"content\": \"package a\\n\\nfunc"}`},
		}, stop: "max_tokens", in: 90, out: 32},
		{fixture: "tool-call-reused-id.sse", blocks: []wantBlock{
			{typ: "tool_use", id: "call_f1", name: "get_weather", input: `{"city":"SF"}`},
			{typ: "tool_use", id: "toolu_test_1", name: "get_weather", input: `{"city":"CHI"}`},
		}, stop: "tool_use", in: 40, out: 20},
		{fixture: "refusal.sse", blocks: []wantBlock{{typ: "text", text: "I'm sorry, I can't help with that."}}, stop: "refusal", in: 25, out: 9},
		{fixture: "error-midstream.sse", blocks: []wantBlock{{typ: "text", text: "Start"}}, streamErr: "CUDA out of memory", backendErr: "CUDA out of memory"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			events, err := runStream(fixture(t, tc.fixture), nil)
			if tc.backendErr != "" {
				var be *BackendError
				if !errors.As(err, &be) || be.Message != tc.backendErr || be.Type != "server_error" {
					t.Fatalf("Feed error = %#v, want *BackendError %q of type server_error", err, tc.backendErr)
				}
			} else if err != nil {
				t.Fatalf("Feed: %v", err)
			}
			msg, err := accumulate(t, events)
			if tc.streamErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.streamErr) {
					t.Fatalf("SDK stream error = %v, want one with %q", err, tc.streamErr)
				}
				if !bytes.HasSuffix(events, []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"CUDA out of memory\"}}\n\n")) {
					t.Fatalf("the stream must end with the error event:\n%s", events)
				}
			} else if err != nil {
				t.Fatalf("SDK stream: %v\n%s", err, events)
			}
			if got := blocksOf(msg); !slices.Equal(got, tc.blocks) {
				t.Fatalf("blocks = %+v\nwant %+v", got, tc.blocks)
			}
			if msg.ID != testMsgID || msg.Model != testAlias || msg.Role != "assistant" {
				t.Fatalf("message id %q model %q role %q", msg.ID, msg.Model, msg.Role)
			}
			if tc.streamErr != "" {
				return
			}
			if string(msg.StopReason) != tc.stop || msg.StopSequence != "" {
				t.Fatalf("stop_reason %q stop_sequence %q, want %q", msg.StopReason, msg.StopSequence, tc.stop)
			}
			u := msg.Usage
			if u.InputTokens != tc.in || u.OutputTokens != tc.out || u.CacheReadInputTokens != tc.cacheRead {
				t.Fatalf("usage in %d out %d cache read %d, want %d %d %d", u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, tc.in, tc.out, tc.cacheRead)
			}
		})
	}
}

// eventsOf parses a stream for tests that look at single events.
func eventsOf(t testing.TB, stream []byte) []ssecheck.Event {
	t.Helper()
	if err := ssecheck.Check(stream); err != nil {
		t.Fatalf("grammar: %v\n%s", err, stream)
	}
	events, err := ssecheck.Parse(stream)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// deltas lists the content of each content_block_delta, as "index:text".
func deltas(t testing.TB, events []ssecheck.Event) []string {
	var out []string
	for _, e := range events {
		if e.Name != messages.EventContentBlockDelta {
			continue
		}
		var d messages.ContentBlockDeltaEvent
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, p := range []*string{d.Delta.Text, d.Delta.Thinking, d.Delta.PartialJSON} {
			if p != nil {
				s = *p
			}
		}
		out = append(out, string(rune('0'+d.Index))+":"+s)
	}
	return out
}

// A call's arguments are held until its block closes, then go out in one
// delta: a fragment relayed as it came could not be taken back if the
// arguments turned out not to be an object (see messages_on_chat_stream.go).
func TestStreamToolArgumentsGoOutWhole(t *testing.T) {
	events := eventsOf(t, must(runStream(fixture(t, "tool-call-fragments.sse"), nil)))
	want := []string{`0:{"command": "ls -la", "description": "List files"}`}
	if got := deltas(t, events); !slices.Equal(got, want) {
		t.Fatalf("deltas = %q, want the arguments in one %q", got, want)
	}
}

func TestStreamMessageDeltaUsage(t *testing.T) {
	events := eventsOf(t, must(runStream(fixture(t, "text-with-usage.sse"), nil)))
	var md messages.MessageDeltaEvent
	for _, e := range events {
		if e.Name == messages.EventMessageDelta {
			if err := json.Unmarshal(e.Data, &md); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := messages.DeltaUsage{InputTokens: 15, OutputTokens: 6, CacheReadInputTokens: 16}
	if md.Usage != want {
		t.Fatalf("message_delta usage %+v, want %+v", md.Usage, want)
	}
	if md.Delta.StopReason == nil || *md.Delta.StopReason != "end_turn" || md.Delta.StopSequence != nil {
		t.Fatalf("message_delta %+v", md.Delta)
	}
	var start messages.MessageStartEvent
	if err := json.Unmarshal(events[0].Data, &start); err != nil {
		t.Fatal(err)
	}
	if u := start.Message.Usage; u.InputTokens != 42 || u.OutputTokens != 1 {
		t.Fatalf("message_start usage %+v, want the estimate 42 and output 1", u)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// chunks writes a backend stream of the given chunk JSONs, then [DONE].
func chunks(js ...string) []byte {
	var b []byte
	for _, j := range js {
		b = append(b, "data: "...)
		b = append(b, j...)
		b = append(b, "\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

func tc(index int, id, name, args string) string {
	s := `{"index":` + string(rune('0'+index))
	if id != "" {
		s += `,"id":"` + id + `","type":"function"`
	}
	f := `"arguments":` + string(must(json.Marshal(args)))
	if name != "" {
		f = `"name":"` + name + `",` + f
	}
	return s + `,"function":{` + f + `}}`
}

func toolChunk(calls ...string) string {
	return `{"choices":[{"index":0,"delta":{"tool_calls":[` + strings.Join(calls, ",") + `]}}]}`
}

func textChunk(field, s string) string {
	return `{"choices":[{"index":0,"delta":{"` + field + `":` + string(must(json.Marshal(s))) + `}}]}`
}

func finishChunk(reason string, extra string) string {
	return `{"choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"` + extra + `}]}`
}

// translateAll translates a stream fed whole and checks the result with
// the grammar and the SDK.
func translateAll(t *testing.T, in []byte) ([]ssecheck.Event, anthropic.Message) {
	t.Helper()
	out, err := runStream(in, nil)
	if err != nil {
		t.Fatalf("Feed: %v", err)
	}
	events := eventsOf(t, out)
	msg, err := accumulate(t, out)
	if err != nil {
		t.Fatalf("SDK: %v", err)
	}
	return events, msg
}

func names(events []ssecheck.Event) string {
	var s []string
	for _, e := range events {
		n := strings.TrimPrefix(strings.TrimPrefix(e.Name, "content_block_"), "message_")
		s = append(s, n)
	}
	return strings.Join(s, " ")
}

func TestStreamInterleavedCallsWaitForTheOpenOne(t *testing.T) {
	in := chunks(
		toolChunk(tc(0, "call_1", "Read", `{"path": "/a`)),
		toolChunk(tc(1, "call_2", "Read", `{"path": `)),
		toolChunk(tc(0, "", "", `.go"}`)),
		toolChunk(tc(1, "", "", `"/b.go"}`)),
		finishChunk("tool_calls", ""),
	)
	events, msg := translateAll(t, in)
	want := []wantBlock{
		{typ: "tool_use", id: "call_1", name: "Read", input: `{"path": "/a.go"}`},
		{typ: "tool_use", id: "call_2", name: "Read", input: `{"path": "/b.go"}`},
	}
	if got := blocksOf(msg); !slices.Equal(got, want) {
		t.Fatalf("blocks %+v, want %+v", got, want)
	}
	// Call 2 waits until call 1's object closes; each call's arguments go
	// out whole as its block closes.
	wantDeltas := []string{`0:{"path": "/a.go"}`, `1:{"path": "/b.go"}`}
	if got := deltas(t, events); !slices.Equal(got, wantDeltas) {
		t.Fatalf("deltas %q, want %q", got, wantDeltas)
	}
	if got, want := names(events), "start start delta stop start delta stop delta stop"; got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func TestStreamSequentialCallsStreamAtOnce(t *testing.T) {
	// A call whose object is whole gives way to the next at once: its
	// input goes out and the second block opens before the backend
	// finishes.
	s := NewMessagesOnChatStream(testAlias, testMsgID, 1)
	out := s.Start(nil)
	for _, c := range []string{toolChunk(tc(0, "call_1", "A", `{"a":1}`)), toolChunk(tc(1, "call_2", "B", `{"x":`))} {
		out = must(s.Feed(out, []byte("data: "+c+"\n\n")))
	}
	if !bytes.Contains(out, []byte(`"index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}`)) ||
		!bytes.Contains(out, []byte(`"index":1,"content_block":{"type":"tool_use","id":"call_2"`)) {
		t.Fatalf("the first call must go out and the second start before the end:\n%s", out)
	}
}

func TestStreamTextWaitsBehindAnOpenCall(t *testing.T) {
	in := chunks(
		toolChunk(tc(0, "call_1", "Bash", `{"cmd":`)),
		textChunk("content", "(thinking aloud)"),
		toolChunk(tc(0, "", "", `"ls"}`)),
		textChunk("content", " more"),
		finishChunk("tool_calls", ""),
	)
	_, msg := translateAll(t, in)
	want := []wantBlock{
		{typ: "tool_use", id: "call_1", name: "Bash", input: `{"cmd":"ls"}`},
		{typ: "text", text: "(thinking aloud) more"},
	}
	if got := blocksOf(msg); !slices.Equal(got, want) {
		t.Fatalf("blocks %+v, want %+v", got, want)
	}
}

func TestStreamUnfinishedCallsAllReachTheClient(t *testing.T) {
	// Call 1's object never closes (the answer was cut): call 2 waits to
	// the end and still goes out whole.
	in := chunks(
		toolChunk(tc(0, "call_1", "A", `{"a": "x`)),
		toolChunk(tc(1, "call_2", "B", `{"b": 1}`)),
		finishChunk("length", ""),
	)
	_, msg := translateAll(t, in)
	if len(msg.Content) != 2 || msg.Content[1].ID != "call_2" || string(msg.Content[1].Input) != `{"b": 1}` || msg.StopReason != "max_tokens" {
		t.Fatalf("message %+v", msg)
	}
	// The cut call's arguments reach the client as text under
	// raw_arguments, as the non-stream path gives them.
	if got := toolInputOf(t, must(runStream(in, nil)), "call_1"); got != `{"raw_arguments":"{\"a\": \"x"}` {
		t.Fatalf("the cut call's input is %s", got)
	}
}

func TestStreamToolCallIDs(t *testing.T) {
	for _, tcase := range []struct {
		name string
		in   []byte
		want []wantBlock
	}{
		{"id repeated on every fragment", chunks(
			toolChunk(tc(0, "call_1", "A", `{"a":`)),
			toolChunk(tc(0, "call_1", "", `1}`)),
		), []wantBlock{{typ: "tool_use", id: "call_1", name: "A", input: `{"a":1}`}}},
		{"no id at all", chunks(
			toolChunk(tc(0, "", "A", `{}`)),
			toolChunk(tc(1, "", "B", `{}`)),
		), []wantBlock{{typ: "tool_use", id: "toolu_test_1", name: "A", input: `{}`}, {typ: "tool_use", id: "toolu_test_2", name: "B", input: `{}`}}},
		{"same id at two indices", chunks(
			toolChunk(tc(0, "call_x", "A", `{"a":`), tc(1, "call_x", "B", `{"b":`)),
			toolChunk(tc(0, "", "", `1}`), tc(1, "", "", `2}`)),
		), []wantBlock{{typ: "tool_use", id: "call_x", name: "A", input: `{"a":1}`}, {typ: "tool_use", id: "toolu_test_1", name: "B", input: `{"b":2}`}}},
		{"new id at a used index", chunks(
			toolChunk(tc(0, "call_1", "A", `{"a":1}`)),
			toolChunk(tc(0, "call_2", "B", `{"b":`)),
			toolChunk(tc(0, "", "", `2}`)),
		), []wantBlock{{typ: "tool_use", id: "call_1", name: "A", input: `{"a":1}`}, {typ: "tool_use", id: "call_2", name: "B", input: `{"b":2}`}}},
		{"name comes late", chunks(
			toolChunk(tc(0, "call_1", "", `{"a":`)),
			toolChunk(tc(0, "", "Late", `1}`)),
		), []wantBlock{{typ: "tool_use", id: "call_1", name: "Late", input: `{"a":1}`}}},
		{"no arguments at all", chunks(
			toolChunk(tc(0, "call_1", "Now", ``)),
		), []wantBlock{{typ: "tool_use", id: "call_1", name: "Now", input: `{}`}}},
		{"whitespace after a whole object that gave way", chunks(
			toolChunk(tc(0, "call_1", "A", `{"a":1}`)),
			toolChunk(tc(1, "call_2", "B", `{}`)),
			toolChunk(tc(0, "", "", ` `)),
		), []wantBlock{{typ: "tool_use", id: "call_1", name: "A", input: `{"a":1}`}, {typ: "tool_use", id: "call_2", name: "B", input: `{}`}}},
		{"braces inside strings", chunks(
			toolChunk(tc(0, "call_1", "A", `{"s":"}{\"}"`)),
			toolChunk(tc(1, "call_2", "B", `{}`)),
			toolChunk(tc(0, "", "", `,"t":1}`)),
		), []wantBlock{{typ: "tool_use", id: "call_1", name: "A", input: `{"s":"}{\"}","t":1}`}, {typ: "tool_use", id: "call_2", name: "B", input: `{}`}}},
	} {
		t.Run(tcase.name, func(t *testing.T) {
			_, msg := translateAll(t, tcase.in)
			if got := blocksOf(msg); !slices.Equal(got, tcase.want) {
				t.Fatalf("blocks %+v\nwant %+v", got, tcase.want)
			}
			if msg.StopReason != "tool_use" {
				t.Fatalf("stop_reason %q: an answer with tool calls ends in tool_use", msg.StopReason)
			}
		})
	}
}

func TestStreamBlocksInOrder(t *testing.T) {
	in := chunks(
		textChunk("reasoning", "think"),
		textChunk("content", ""),
		textChunk("content", "say"),
		textChunk("reasoning_content", "again"),
		textChunk("content", "more"),
		`{"choices":[{"index":0,"delta":{"reasoning_content":"both","reasoning":"both","content":"x"}}]}`,
	)
	_, msg := translateAll(t, in)
	want := []wantBlock{
		{typ: "thinking", text: "think"}, {typ: "text", text: "say"},
		{typ: "thinking", text: "again"}, {typ: "text", text: "more"},
		{typ: "thinking", text: "both"}, {typ: "text", text: "x"},
	}
	if got := blocksOf(msg); !slices.Equal(got, want) {
		t.Fatalf("blocks %+v\nwant %+v", got, want)
	}
}

func TestStreamStopReasons(t *testing.T) {
	for _, tcase := range []struct {
		finish, extra, stop, seq string
	}{
		{"stop", "", "end_turn", ""},
		{"stop", `,"stop_reason":"END"`, "stop_sequence", "END"},
		{"stop", `,"stop_reason":151645`, "end_turn", ""},
		{"length", "", "max_tokens", ""},
		{"tool_calls", "", "tool_use", ""},
		{"function_call", "", "tool_use", ""},
		{"content_filter", "", "refusal", ""},
		{"something_new", "", "end_turn", ""},
	} {
		_, msg := translateAll(t, chunks(textChunk("content", "x"), finishChunk(tcase.finish, tcase.extra)))
		if string(msg.StopReason) != tcase.stop || msg.StopSequence != tcase.seq {
			t.Errorf("finish %s%s: stop_reason %q stop_sequence %q, want %q %q", tcase.finish, tcase.extra, msg.StopReason, msg.StopSequence, tcase.stop, tcase.seq)
		}
	}
	// A server that says "stop" after a tool call.
	_, msg := translateAll(t, chunks(toolChunk(tc(0, "c", "A", "{}")), finishChunk("stop", "")))
	if msg.StopReason != "tool_use" {
		t.Errorf("tool call finished with stop: stop_reason %q, want tool_use", msg.StopReason)
	}
}

func TestStreamWaitsForUsageAfterFinish(t *testing.T) {
	s := NewMessagesOnChatStream(testAlias, testMsgID, 5)
	out := must(s.Feed(nil, []byte("data: "+textChunk("content", "hi")+"\n\ndata: "+finishChunk("stop", "")+"\n\n")))
	if s.Done() || bytes.Contains(out, []byte("message_delta")) {
		t.Fatalf("message_delta before the usage chunk or [DONE]:\n%s", out)
	}
	out = must(s.Feed(out, []byte(`data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`+"\n\n")))
	if !s.Done() || !bytes.Contains(out, []byte(`"usage":{"input_tokens":9,"output_tokens":2,"cache_read_input_tokens":0}`)) {
		t.Fatalf("the usage after the finish ends the message (Done %v):\n%s", s.Done(), out)
	}
	n := len(out)
	out = must(s.Feed(out, []byte("data: [DONE]\n\n")))
	out = s.Finish(out)
	if len(out) != n {
		t.Fatalf("[DONE] and Finish after the end appended %q", out[n:])
	}
	eventsOf(t, out)
}

func TestStreamUsageBeforeFinishIsNotFinal(t *testing.T) {
	// vLLM's continuous usage stats: usage in every chunk.
	u := func(n int) string {
		return `,"usage":{"prompt_tokens":9,"completion_tokens":` + string(rune('0'+n)) + `,"total_tokens":0}`
	}
	s := NewMessagesOnChatStream(testAlias, testMsgID, 5)
	out := must(s.Feed(nil, []byte(`data: {"choices":[{"index":0,"delta":{"content":"a"}}]`+u(1)+"}\n\n")))
	if s.Done() {
		t.Fatal("usage before the finish must not end the message")
	}
	out = must(s.Feed(out, []byte(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]`+u(2)+"}\n\n")))
	if !s.Done() || !bytes.Contains(out, []byte(`"output_tokens":2`)) {
		t.Fatalf("finish with usage ends the message:\n%s", out)
	}
	eventsOf(t, out)
}

func TestStreamEOF(t *testing.T) {
	for name, in := range map[string]string{
		"no [DONE]":               "data: " + textChunk("content", "hi") + "\n\ndata: " + finishChunk("stop", "") + "\n\n",
		"last event unterminated": "data: " + textChunk("content", "h") + "\n\ndata: " + textChunk("content", "i"),
		"last line cut":           "data: " + textChunk("content", "hi") + "\n\ndata: {\"choi",
	} {
		t.Run(name, func(t *testing.T) {
			_, msg := translateAll(t, []byte(in))
			if got := blocksOf(msg); !slices.Equal(got, []wantBlock{{typ: "text", text: "hi"}}) || msg.StopReason != "end_turn" {
				t.Fatalf("message %+v", msg)
			}
		})
	}
	// An error object as the unterminated last event fails the stream.
	s := NewMessagesOnChatStream(testAlias, testMsgID, 1)
	out := must(s.Feed(nil, []byte("data: "+textChunk("content", "hi")+"\n\ndata: {\"error\":{\"message\":\"gone\"}}")))
	out = s.Finish(out)
	if names(eventsOf(t, out)) != "start start delta error" || !bytes.Contains(out, []byte(`"message":"gone"`)) {
		t.Fatalf("unterminated error at EOF:\n%s", out)
	}
	// Nothing at all: a valid empty message, usage estimated.
	events, msg := translateAll(t, nil)
	if len(msg.Content) != 0 || names(events) != "start delta stop" || msg.Usage.InputTokens != 42 {
		t.Fatalf("empty stream: %q %+v", names(events), msg)
	}
}

func TestStreamLifecycle(t *testing.T) {
	s := NewMessagesOnChatStream(testAlias, testMsgID, 3)
	out := s.Start(nil)
	if n := len(out); n == 0 || len(s.Start(out)) != n {
		t.Fatal("Start must write message_start once")
	}
	out = s.Ping(out)
	if !bytes.HasSuffix(out, []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")) {
		t.Fatalf("Ping wrote %q", out)
	}
	out = s.Finish(out)
	n := len(out)
	out = s.Finish(out)
	out = s.Ping(out)
	out = s.Fail(out, "api_error", "late")
	out = must(s.Feed(out, chunks(textChunk("content", "late"))))
	if len(out) != n {
		t.Fatalf("after Finish, methods appended %q", out[n:])
	}
	eventsOf(t, out)

	// Fail first: it implies message_start, and ends everything.
	s = NewMessagesOnChatStream(testAlias, testMsgID, 3)
	out = s.Fail(nil, "", "backend went away")
	n = len(out)
	out = s.Finish(s.Ping(out))
	out = must(s.Feed(out, chunks(textChunk("content", "late"))))
	if len(out) != n {
		t.Fatalf("after Fail, methods appended %q", out[n:])
	}
	events := eventsOf(t, out)
	if names(events) != "start error" || !bytes.Contains(events[1].Data, []byte(`"type":"api_error"`)) {
		t.Fatalf("Fail before anything: %s", out)
	}

	// Ping before Start implies it.
	s = NewMessagesOnChatStream(testAlias, testMsgID, 3)
	if out := s.Finish(s.Ping(nil)); names(eventsOf(t, out)) != "start ping delta stop" {
		t.Fatalf("Ping first: %s", out)
	}
}

func TestStreamBackendErrors(t *testing.T) {
	for name, line := range map[string]string{
		"object":          `{"error":{"message":"boom","type":"server_error","code":500}}`,
		"string":          `{"error":"boom"}`,
		"detail":          `{"detail":"boom"}`,
		"object, no text": `{"error":{"type":"server_error"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := NewMessagesOnChatStream(testAlias, testMsgID, 3)
			out, err := s.Feed(nil, []byte("data: "+textChunk("content", "a")+"\n\ndata: "+line+"\n\ndata: "+textChunk("content", "b")+"\n\n"))
			var be *BackendError
			if !errors.As(err, &be) || be.Message == "" {
				t.Fatalf("Feed error = %v, want a *BackendError", err)
			}
			if name != "object, no text" && be.Message != "boom" {
				t.Fatalf("message %q", be.Message)
			}
			if bytes.Contains(out, []byte(`"text":"b"`)) {
				t.Fatal("nothing after the error may be translated")
			}
			if _, err2 := s.Feed(out, []byte("data: [DONE]\n\n")); err2 != err {
				t.Fatalf("the error must stick: %v", err2)
			}
			out = s.Fail(out, "api_error", be.Message)
			eventsOf(t, out)
		})
	}
}

func TestStreamOddInput(t *testing.T) {
	for _, tcase := range []struct {
		name, in string
		text     string
	}{
		{"crlf", strings.ReplaceAll(string(chunks(textChunk("content", "a"), textChunk("content", "b"))), "\n", "\r\n"), "ab"},
		{"comments and keep-alives", ": ping\n\ndata: " + textChunk("content", "a") + "\n\n: x\n\n", "a"},
		{"no blank line between chunks", "data: " + textChunk("content", "a") + "\ndata: " + textChunk("content", "b") + "\n\n", "ab"},
		{"not JSON", "data: hello\n\ndata: " + textChunk("content", "a") + "\n\n", "a"},
		{"invalid UTF-8", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\xff\xfeb\"}}]}\n\n", "a\uFFFD\uFFFDb"},
		{"lone surrogate", `data: {"choices":[{"index":0,"delta":{"content":"a\ud83d b"}}]}` + "\n\n", "a\uFFFD b"},
		{"control characters", "data: " + textChunk("content", "a\x00\x1f\"\\\n\u2028") + "\n\n", "a\x00\x1f\"\\\n\u2028"},
		{"other choices ignored", `data: {"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]}` + "\n\n", "yes"},
		{"bom", "\xEF\xBB\xBFdata: " + textChunk("content", "a") + "\n\n", "a"},
	} {
		t.Run(tcase.name, func(t *testing.T) {
			_, msg := translateAll(t, []byte(tcase.in))
			if got := blocksOf(msg); !slices.Equal(got, []wantBlock{{typ: "text", text: tcase.text}}) {
				t.Fatalf("blocks %+v, want text %q", got, tcase.text)
			}
		})
	}
}

func TestStreamEscapesCallerStrings(t *testing.T) {
	s := NewMessagesOnChatStream("a\"b\\c\xff", "msg_\n", 1)
	out := s.Finish(nil)
	msg, err := accumulate(t, out)
	eventsOf(t, out)
	if err != nil || msg.Model != "a\"b\\c\uFFFD" || msg.ID != "msg_\n" {
		t.Fatalf("model %q id %q err %v", msg.Model, msg.ID, err)
	}
}

func TestStreamTooLargeEvent(t *testing.T) {
	s := NewMessagesOnChatStream(testAlias, testMsgID, 1)
	big := bytes.Repeat([]byte("x"), 1<<20)
	var err error
	out := s.Start(nil)
	out, err = s.Feed(out, []byte("data: "))
	for i := 0; i < 20 && err == nil; i++ {
		out, err = s.Feed(out, big)
	}
	if err == nil {
		t.Fatal("an endless event must fail the stream")
	}
	eventsOf(t, s.Fail(out, "api_error", err.Error()))
}

// FuzzStream feeds random backend bytes, whole and split at a random
// point: the translator must not panic, both feeds must give the same
// events, and they must be well formed after Finish (or Fail).
func FuzzStream(f *testing.F) {
	for _, name := range fixtures.BackendStreams() {
		b := fixture(f, name)
		f.Add(b, uint16(len(b)/3))
	}
	f.Add(chunks(
		toolChunk(tc(0, "call_1", "Read", `{"path": "/a`)),
		toolChunk(tc(1, "call_2", "Read", `{"path": `)),
		textChunk("content", "x"),
		toolChunk(tc(0, "", "", `.go"}`)),
		finishChunk("tool_calls", ""),
	), uint16(100))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"[1\"}}]}}]}\n\n"), uint16(7))
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		whole, errWhole := runStream(in, nil)
		c := int(cut) % (len(in) + 1)
		split, errSplit := runStream(in, []int{c})
		if !bytes.Equal(whole, split) || (errWhole == nil) != (errSplit == nil) {
			t.Fatalf("split at %d differs:\n%s\n---\n%s", c, whole, split)
		}
		if err := ssecheck.Check(whole); err != nil {
			t.Fatalf("grammar: %v\n%s", err, whole)
		}
		checkToolInputsAreObjects(t, whole)
	})
}

// checkToolInputsAreObjects checks the Messages stream contract: the input
// a client accumulates for every tool_use block (its input_json_delta
// fragments joined, or the {} of content_block_start when there are none)
// parses as a JSON object.
func checkToolInputsAreObjects(t *testing.T, stream []byte) {
	t.Helper()
	events, err := ssecheck.Parse(stream)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[int]*strings.Builder{}
	for _, e := range events {
		switch e.Name {
		case messages.EventContentBlockStart:
			var s messages.ContentBlockStartEvent
			if json.Unmarshal(e.Data, &s) == nil && s.ContentBlock.Type == messages.BlockToolUse {
				inputs[s.Index] = new(strings.Builder)
			}
		case messages.EventContentBlockDelta:
			var d messages.ContentBlockDeltaEvent
			if json.Unmarshal(e.Data, &d) == nil && d.Delta.PartialJSON != nil {
				inputs[d.Index].WriteString(*d.Delta.PartialJSON)
			}
		}
	}
	for i, b := range inputs {
		in := b.String()
		if in == "" {
			continue // input stays the {} of content_block_start
		}
		var obj map[string]jsontext.Value
		if err := json.Unmarshal([]byte(in), &obj, jsontext.AllowDuplicateNames(true)); err != nil {
			t.Fatalf("tool_use block %d: accumulated input %q is not a JSON object: %v", i, in, err)
		}
	}
}

// BenchmarkStream translates a whole fixture per op. ns/event and
// cpu-ns/event divide by the Messages events it gives; cpu-ns counts the
// process's CPU time, which a busy machine inflates less than wall time.
func BenchmarkStream(b *testing.B) {
	for _, name := range []string{"text-with-usage.sse", "tool-call-fragments.sse"} {
		b.Run(strings.TrimSuffix(name, ".sse"), func(b *testing.B) {
			in := fixture(b, name)
			events := float64(bytes.Count(must(runStream(in, nil)), []byte("\n\n")))
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			var dst []byte
			start := cpuTime()
			for b.Loop() {
				s := NewMessagesOnChatStream(testAlias, testMsgID, 42)
				dst, _ = s.Feed(dst[:0], in)
				dst = s.Finish(dst)
			}
			n := float64(b.N) * events
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/event")
			if cpu := cpuTime() - start; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/event")
			}
			b.ReportMetric(events, "events/op")
		})
	}
}

// FuzzStreamChunks builds backend streams from the fuzzer's bytes, op by
// op: text, reasoning, fragments of up to three interleaved tool calls
// (new ids at used indices too), several in one chunk, and an end. Beyond
// the grammar it checks what the client gets: each tool_use's input is a
// JSON object, the very one the backend sent when it sent one; every call
// has its block, under an id of its own; and the text and the thinking
// come through whole.
func FuzzStreamChunks(f *testing.F) {
	f.Add([]byte{2, 10, 3, 11, 0, 1, 2, 4})
	f.Add([]byte{26, 3, 18, 0, 7, 13, 5})
	f.Add([]byte{1, 1, 0, 0, 1, 2, 2, 2, 2, 6})
	f.Fuzz(func(t *testing.T, ops []byte) {
		textPieces := []string{"", "a", "é", "世😀", "{", "\"", "\\"}
		argPieces := []string{`{"a":`, `1`, `}`, `"x"`, ` `, `{`, `[`, `"}{"`, `,"b":2}`, `]`}
		var (
			js             []string
			text, thinking string
			args           = map[string]string{} // call id → arguments sent
			names          = map[string]string{}
			latest         [3]string // the latest call id at each index
			calls          int
			end            string
		)
		fragment := func(op byte) string {
			i := int(op>>3) % 3
			id, name := "", ""
			if latest[i] == "" || op&0x80 != 0 {
				calls++
				latest[i] = "call_" + string(rune('a'+calls))
				id, name = latest[i], "T"+string(rune('a'+calls))
				names[id] = name
			}
			a := argPieces[int(op>>2)%len(argPieces)]
			args[latest[i]] += a
			return tc(i, id, name, a)
		}
	loop:
		for n, op := range ops {
			switch op % 8 {
			case 0:
				p := textPieces[int(op>>3)%len(textPieces)]
				text += p
				js = append(js, textChunk("content", p))
			case 1:
				p := textPieces[int(op>>3)%len(textPieces)]
				thinking += p
				field := "reasoning_content"
				if op&0x40 != 0 {
					field = "reasoning"
				}
				js = append(js, textChunk(field, p))
			case 2, 3:
				js = append(js, toolChunk(fragment(op)))
			case 4:
				js = append(js, finishChunk([]string{"stop", "length", "tool_calls", "content_filter"}[int(op>>3)%4], ""))
				end = "finish"
				break loop
			case 5:
				js = append(js, finishChunk("stop", ""), `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)
				end = "usage"
				break loop
			case 6:
				end = "done"
				break loop
			case 7:
				// Text, then a fragment, in one delta.
				p := textPieces[int(op>>3)%len(textPieces)]
				text += p
				frag := fragment(ops[(n+1)%len(ops)] | 2)
				js = append(js, `{"choices":[{"index":0,"delta":{"content":`+string(must(json.Marshal(p)))+`,"tool_calls":[`+frag+`]}}]}`)
			}
		}
		in := chunks(js...)
		if end != "done" {
			in = bytes.TrimSuffix(in, []byte("data: [DONE]\n\n"))
		}
		out, err := runStream(in, nil)
		if err != nil {
			t.Fatalf("Feed: %v", err)
		}
		if err := ssecheck.Check(out); err != nil {
			t.Fatalf("grammar: %v\n%s", err, out)
		}
		if split, _ := runStream(in, []int{len(in) / 2}); !bytes.Equal(split, out) {
			t.Fatal("a split feed differs")
		}
		msg, err := accumulate(t, out)
		if err != nil {
			t.Fatal(err)
		}
		checkToolInputsAreObjects(t, out)
		var gotText, gotThinking string
		seen := map[string]bool{}
		for _, b := range msg.Content {
			switch b.Type {
			case "text":
				gotText += b.Text
			case "thinking":
				gotThinking += b.Thinking
			case "tool_use":
				if seen[b.ID] {
					t.Fatalf("tool_use id %s twice", b.ID)
				}
				seen[b.ID] = true
				want, ok := args[b.ID]
				if !ok {
					// A block of its own for a second object sent under a
					// call's id: its id is made up.
					if !strings.HasPrefix(b.ID, "toolu_test_") {
						t.Fatalf("tool_use %s: an id the backend never sent", b.ID)
					}
					continue
				}
				if b.Name != names[b.ID] {
					t.Fatalf("tool_use %s named %s, want %s", b.ID, b.Name, names[b.ID])
				}
				// Arguments that are one whole object arrive as they were
				// sent; anything else arrives as an object too, checked above.
				w := jsontext.Value(strings.TrimSpace(want))
				if w.Kind() == '{' && w.IsValid(jsontext.AllowDuplicateNames(true)) && toolInputOf(t, out, b.ID) != string(w) {
					t.Fatalf("tool_use %s input %q, the backend sent %q", b.ID, toolInputOf(t, out, b.ID), want)
				}
			}
		}
		for id := range args {
			if !seen[id] {
				t.Fatalf("call %s has no tool_use block", id)
			}
		}
		if gotText != text || gotThinking != thinking {
			t.Fatalf("text %q thinking %q, sent %q %q", gotText, gotThinking, text, thinking)
		}
	})
}

// toolInputOf concatenates the input_json_delta fragments of one tool_use
// block, as sent.
func toolInputOf(t testing.TB, stream []byte, id string) string {
	events, err := ssecheck.Parse(stream)
	if err != nil {
		t.Fatal(err)
	}
	index, in := -1, ""
	for _, e := range events {
		switch e.Name {
		case messages.EventContentBlockStart:
			var s messages.ContentBlockStartEvent
			if json.Unmarshal(e.Data, &s) == nil && s.ContentBlock.ID == id {
				index = s.Index
			}
		case messages.EventContentBlockDelta:
			var d messages.ContentBlockDeltaEvent
			if json.Unmarshal(e.Data, &d) == nil && d.Index == index && d.Delta.PartialJSON != nil {
				in += *d.Delta.PartialJSON
			}
		}
	}
	return in
}
