package translate

import (
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
)

// Three defects found by running peers' test data through the Messages
// path (issue 17), each checked on both paths.

// streamToolInputs translates a backend stream and returns, per tool_use
// block in order, its id and the input a client accumulates: the
// concatenated input_json_delta fragments, or {} when there are none.
func streamToolInputs(t *testing.T, in []byte) (ids, inputs []string, stop string) {
	t.Helper()
	out := must(runStream(in, nil))
	events := eventsOf(t, out)
	for _, e := range events {
		switch e.Name {
		case messages.EventContentBlockStart:
			var s messages.ContentBlockStartEvent
			if err := json.Unmarshal(e.Data, &s); err != nil {
				t.Fatal(err)
			}
			if s.ContentBlock.Type == messages.BlockToolUse {
				ids = append(ids, s.ContentBlock.ID)
				inputs = append(inputs, toolInputOf(t, out, s.ContentBlock.ID))
			}
		case messages.EventMessageDelta:
			var d messages.MessageDeltaEvent
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			stop = *d.Delta.StopReason
		}
	}
	for i, in := range inputs {
		if in == "" {
			inputs[i] = "{}"
		}
	}
	return ids, inputs, stop
}

// nonStreamToolInputs translates a non-stream answer with the given
// message and returns its tool_use ids and inputs and its stop reason.
func nonStreamToolInputs(t *testing.T, message, finish string) (ids, inputs []string, text, stop string) {
	t.Helper()
	out, err := MessagesOnChatResponse([]byte(chatResp(message, finish, "")), "claude-x")
	if err != nil {
		t.Fatal(err)
	}
	var m messages.Response
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Content {
		switch b.Type {
		case messages.BlockToolUse:
			ids = append(ids, b.ID)
			inputs = append(inputs, string(b.Input))
		case messages.BlockText:
			text += b.Text
		}
	}
	if m.StopReason != nil {
		stop = *m.StopReason
	}
	return ids, inputs, text, stop
}

// fragments cuts s into pieces of n bytes, as a backend streams arguments.
func fragments(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// Defect 1: streamed arguments that are not a JSON object reached the
// client as they came, so its accumulated input was not an object; the
// non-stream path gave {"raw_arguments": …}. Both now give the same
// input, always an object.
func TestToolInputIsAnObjectAndTheSameStreamOrNot(t *testing.T) {
	for _, args := range defect1Args {
		t.Run(args, func(t *testing.T) {
			_, streamed, _ := streamToolInputs(t, fragmentedCall("Bash", args))
			_, whole, _, _ := nonStreamToolInputs(t, callsMessage("Bash", args), `"tool_calls"`)

			if len(streamed) != 1 || len(whole) != 1 {
				t.Fatalf("tool_use blocks: %d streamed, %d non-stream; want 1 each", len(streamed), len(whole))
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(streamed[0]), &obj); err != nil {
				t.Fatalf("streamed input %q is not a JSON object: %v", streamed[0], err)
			}
			if !jsonEqual(t, streamed[0], whole[0]) {
				t.Fatalf("streamed input %s, non-stream input %s: the two paths differ", streamed[0], whole[0])
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return string(must(json.Marshal(x, json.Deterministic(true)))) == string(must(json.Marshal(y, json.Deterministic(true))))
}

// Defect 2: a second call under an id already used was merged into the
// first call's block, its arguments joined to {"city":"SF"}{"city":"CHI"}.
// Each call now gets its own block and an id of its own.
func TestReusedToolCallIDStartsANewCall(t *testing.T) {
	wantInputs := reusedIDArgs
	for name, in := range reusedIDStreams("get_weather") {
		t.Run(name, func(t *testing.T) {
			ids, inputs, stop := streamToolInputs(t, in)
			if !slices.Equal(inputs, wantInputs) {
				t.Fatalf("tool inputs %q, want %q", inputs, wantInputs)
			}
			if ids[0] != "call_1" || ids[1] == ids[0] {
				t.Fatalf("ids %q: want call_1 and an id of its own", ids)
			}
			if stop != messages.StopToolUse {
				t.Fatalf("stop_reason %q", stop)
			}
			_, msg := translateAll(t, in) // the SDK's view
			if len(msg.Content) != 2 || msg.Content[1].Name != "get_weather" {
				t.Fatalf("blocks %+v", blocksOf(msg))
			}
		})
	}
	t.Run("non-stream", func(t *testing.T) {
		ids, inputs, _, _ := nonStreamToolInputs(t, callsMessage("get_weather", reusedIDArgs...), `"tool_calls"`)
		if !slices.Equal(inputs, wantInputs) || ids[0] != "call_1" || ids[1] == ids[0] {
			t.Fatalf("ids %q inputs %q: want two calls with ids of their own", ids, inputs)
		}
	})
}

// defect1Args are tool call arguments that are not a JSON object, or are
// one around spaces or an object in a string.
var defect1Args = []string{
	`not-json{`,
	`{"command": "ls -la", "descr`, // cut off (finish_reason length)
	`{"a":1}}`,
	`{"a":1} x`,
	`[1,2]`,
	`"{\"a\":1}"`, // an object encoded twice
	`"just text"`,
	`42`,
	`{"command": "ls -la", "description": "List files"}`,
	` {"a": [1, {"b": "}"}]} `,
	``,
	`   `,
}

// fragmentedCall is a backend stream of one call of the function name
// under call_1, its arguments args in five fragments.
func fragmentedCall(name, args string) []byte {
	var js []string
	for i, f := range fragments(args, 5) {
		if i == 0 {
			js = append(js, toolChunk(tc(0, "call_1", name, f)))
		} else {
			js = append(js, toolChunk(tc(0, "", "", f)))
		}
	}
	return chunks(append(js, finishChunk("tool_calls", ""))...)
}

// callsMessage is a non-stream answer's message with a call of the
// function name for each of args, all under the id call_1.
func callsMessage(name string, args ...string) string {
	calls := make([]string, len(args))
	for i, a := range args {
		calls[i] = `{"id":"call_1","type":"function","function":{"name":"` + name + `","arguments":` + string(must(json.Marshal(a))) + `}}`
	}
	return `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]}`
}

// reusedIDArgs are the arguments of the two calls of reusedIDStreams and
// reusedIDMessage.
var reusedIDArgs = []string{`{"city":"SF"}`, `{"city":"CHI"}`}

// reusedIDStreams are backend streams that send a second call of the
// function name under the id call_1 the first call has, each way backends
// have been seen to.
func reusedIDStreams(name string) map[string][]byte {
	return map[string][]byte{
		"same index, id and name again": chunks(
			toolChunk(tc(0, "call_1", name, `{"city":`)),
			toolChunk(tc(0, "", "", `"SF"}`)),
			toolChunk(tc(0, "call_1", name, `{"city":"CHI"}`)),
			finishChunk("tool_calls", ""),
		),
		"same index and id, no name": chunks(
			toolChunk(tc(0, "call_1", name, `{"city":"SF"}`)),
			toolChunk(tc(0, "call_1", "", `{"city":`)),
			toolChunk(tc(0, "call_1", "", `"CHI"}`)),
			finishChunk("tool_calls", ""),
		),
		"header first, arguments after": chunks(
			toolChunk(tc(0, "call_1", name, `{"city":"SF"}`)),
			toolChunk(tc(0, "call_1", name, ``)),
			toolChunk(tc(0, "", "", `{"city":"CHI"}`)),
			finishChunk("tool_calls", ""),
		),
		"another index": chunks(
			toolChunk(tc(0, "call_1", name, `{"city":"SF"}`)),
			toolChunk(tc(1, "call_1", name, `{"city":"CHI"}`)),
			finishChunk("tool_calls", ""),
		),
	}
}

// Defect 3: the Chat refusal field was dropped: the client got an empty
// answer ending in end_turn. It now gets the refusal as text and
// stop_reason "refusal".
func TestRefusalReachesTheClient(t *testing.T) {
	const refusal = "I can't help with that."
	_, _, text, stop := nonStreamToolInputs(t, `{"role":"assistant","content":null,"refusal":"`+refusal+`"}`, `"stop"`)
	if text != refusal || stop != messages.StopRefusal {
		t.Fatalf("non-stream: text %q stop_reason %q, want %q and refusal", text, stop, refusal)
	}
	var js []string
	for _, f := range fragments(refusal, 6) {
		js = append(js, textChunk("refusal", f))
	}
	in := chunks(append(js, finishChunk("stop", ""))...)
	_, msg := translateAll(t, in)
	if got := blocksOf(msg); !slices.Equal(got, []wantBlock{{typ: "text", text: refusal}}) || msg.StopReason != messages.StopRefusal {
		t.Fatalf("stream: blocks %+v stop_reason %q, want the refusal text and refusal", got, msg.StopReason)
	}
	if err := ssecheck.Check(must(runStream(in, nil))); err != nil {
		t.Fatal(err)
	}
	// Tool calls beside a refusal still end in tool_use: the client must
	// answer them.
	_, _, _, stop = nonStreamToolInputs(t, `{"role":"assistant","content":null,"refusal":"no","tool_calls":[{"id":"c","type":"function","function":{"name":"A","arguments":"{}"}}]}`, `"tool_calls"`)
	if stop != messages.StopToolUse {
		t.Fatalf("refusal with tool calls: stop_reason %q, want tool_use", stop)
	}
	if !strings.Contains(string(must(runStream(chunks(textChunk("refusal", "no"), toolChunk(tc(0, "c", "A", "{}"))), nil))), `"stop_reason":"tool_use"`) {
		t.Fatal("stream: refusal with tool calls must end in tool_use")
	}
}
