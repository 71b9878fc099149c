package translate

import (
	"reflect"
	"slices"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// The three defects of issue 17 (defects_test.go), on the Responses path:
// the stream and the non-stream answer give the same output items.

// streamedOutput translates a backend stream and returns the output of the
// final response event, after checking the stream's grammar.
func streamedOutput(t *testing.T, in []byte) []responses.OutputItem {
	t.Helper()
	out := runResponsesStream(in, nil, customCall())
	if err := checkResponsesEvents(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	events := parseResponsesEvents(t, out)
	return events[len(events)-1].Response.Output
}

// nonStreamOutput translates a non-stream answer with the given message.
func nonStreamOutput(t *testing.T, message, finish string) []responses.OutputItem {
	t.Helper()
	out, _, err := ResponsesOnChatResponse([]byte(chatResp(message, finish, "")), "alias", "resp_t", 7, customCall())
	if err != nil {
		t.Fatal(err)
	}
	var r responses.Response
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	return r.Output
}

func callsOf(items []responses.OutputItem) (callIDs, args []string) {
	for _, it := range items {
		if it.Type == responses.ItemFunctionCall {
			callIDs = append(callIDs, it.CallID)
			args = append(args, *it.Arguments)
		}
	}
	return callIDs, args
}

// Defect 1: a function_call's arguments are a JSON object, the same
// streamed or not, and the same input the Messages path gives.
func TestResponsesArgumentsAreAnObjectStreamOrNot(t *testing.T) {
	for _, args := range defect1Args {
		t.Run(args, func(t *testing.T) {
			_, streamed := callsOf(streamedOutput(t, fragmentedCall("f", args)))
			_, whole := callsOf(nonStreamOutput(t, callsMessage("f", args), `"tool_calls"`))
			if len(streamed) != 1 || len(whole) != 1 {
				t.Fatalf("function calls: %d streamed, %d non-stream; want 1 each", len(streamed), len(whole))
			}
			if !isJSONObject(streamed[0]) || streamed[0] != whole[0] {
				t.Fatalf("streamed arguments %s, non-stream %s: want the same JSON object", streamed[0], whole[0])
			}
			if messagesInput := string(ToolInput(args)); streamed[0] != messagesInput {
				t.Fatalf("arguments %s, the Messages path's input %s", streamed[0], messagesInput)
			}
		})
	}
}

// Defect 2: a second call under an id already used is a call of its own,
// with a call_id of its own.
func TestResponsesReusedCallIDStartsANewCall(t *testing.T) {
	check := func(t *testing.T, items []responses.OutputItem) {
		t.Helper()
		ids, args := callsOf(items)
		if !slices.Equal(args, reusedIDArgs) || ids[0] != "call_1" || ids[1] == ids[0] || ids[1] == "" {
			t.Fatalf("call_ids %q arguments %q: want two calls, call_1 and an id of its own", ids, args)
		}
	}
	for name, in := range reusedIDStreams("f") {
		t.Run(name, func(t *testing.T) { check(t, streamedOutput(t, in)) })
	}
	t.Run("non-stream", func(t *testing.T) {
		check(t, nonStreamOutput(t, callsMessage("f", reusedIDArgs...), `"tool_calls"`))
	})
}

// Defect 3: the Chat refusal reaches the client as the Responses format
// carries one: a message whose content is a refusal part, streamed with
// response.refusal.delta and .done.
func TestResponsesRefusalReachesTheClient(t *testing.T) {
	const refusal = "I can't help with that."
	want := []responses.OutputPart{responses.NewRefusal(refusal)}
	check := func(t *testing.T, items []responses.OutputItem) {
		t.Helper()
		if len(items) != 1 || items[0].Type != responses.ItemMessage || items[0].Content == nil || !slices.Equal(*items[0].Content, want) {
			t.Fatalf("output %+v, want one message with the refusal part", items)
		}
	}
	check(t, nonStreamOutput(t, `{"role":"assistant","content":null,"refusal":"`+refusal+`"}`, `"stop"`))
	var js []string
	for _, f := range fragments(refusal, 6) {
		js = append(js, textChunk("refusal", f))
	}
	in := chunks(append(js, finishChunk("stop", ""))...)
	check(t, streamedOutput(t, in))
	var deltas, done string
	for _, e := range parseResponsesEvents(t, runResponsesStream(in, nil, nil)) {
		switch e.Type {
		case responses.EventRefusalDelta:
			deltas += *e.Delta
		case responses.EventRefusalDone:
			done = *e.Refusal
		}
	}
	if deltas != refusal || done != refusal {
		t.Fatalf("refusal deltas %q, done %q: want %q", deltas, done, refusal)
	}
}

// A Chat answer with both text and a refusal is ONE message item whose
// content holds the output_text part, then the refusal part (the shape of
// openai-go's ResponseOutputMessage), streamed or not; streamed, both
// parts' events are under that one item, at content_index 0 and 1.
func TestResponsesTextAndRefusalAreOneMessage(t *testing.T) {
	want := []responses.OutputPart{responses.NewOutputText("Well. Well."), responses.NewRefusal("No, no.")}
	check := func(t *testing.T, how string, items []responses.OutputItem) {
		t.Helper()
		if len(items) != 1 || items[0].Type != responses.ItemMessage || items[0].Content == nil || !reflect.DeepEqual(*items[0].Content, want) {
			t.Fatalf("%s: output %+v, want one message with the parts %+v", how, items, want)
		}
	}
	check(t, "non-stream", nonStreamOutput(t, `{"role":"assistant","content":"Well. Well.","refusal":"No, no."}`, `"stop"`))
	in := chunks(textChunk("content", "Well. "), textChunk("content", "Well."), textChunk("refusal", "No, "), textChunk("refusal", "no."), finishChunk("stop", ""))
	check(t, "stream", streamedOutput(t, in))
	var added, partsAdded, partsDone int
	itemIDs := map[string]bool{}
	for _, e := range parseResponsesEvents(t, runResponsesStream(in, nil, nil)) {
		if e.OutputIndex != nil && *e.OutputIndex != 0 {
			t.Errorf("%s at output_index %d, want 0", e.Type, *e.OutputIndex)
		}
		if e.ItemID != "" {
			itemIDs[e.ItemID] = true
		}
		part := -1
		switch e.Type {
		case responses.EventOutputTextDelta, responses.EventOutputTextDone:
			part = 0
		case responses.EventRefusalDelta, responses.EventRefusalDone:
			part = 1
		case responses.EventOutputItemAdded:
			added++
		case responses.EventContentPartAdded:
			part = partsAdded
			partsAdded++
		case responses.EventContentPartDone:
			part = partsDone
			partsDone++
		}
		if part >= 0 && (e.ContentIndex == nil || *e.ContentIndex != part) {
			t.Errorf("%s at content_index %v, want %d", e.Type, e.ContentIndex, part)
		}
	}
	if added != 1 || partsAdded != 2 || partsDone != 2 || len(itemIDs) != 1 {
		t.Errorf("%d items added, %d parts added, %d parts done, item ids %v: want 1 item with 2 parts", added, partsAdded, partsDone, itemIDs)
	}
}
