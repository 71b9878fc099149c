package translate

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// marshalled is what json.Marshal writes of v, the reference of the
// hand-written writers.
func marshalled(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// responseOf builds a response whose members hold a and b and, by the
// bits of set, the optional ones: every member and shape the writers know.
func responseOf(a, b string, n int64, set uint16) responses.Response {
	on := func(bit int) bool { return set&(1<<bit) != 0 }
	r := newResponse("resp_"+a, b, n, responses.StatusCompleted, nil)
	if on(0) {
		r.Error = &responses.ResponseError{Code: a, Message: b}
	}
	if on(1) {
		r.IncompleteDetails = &responses.IncompleteDetails{Reason: a}
	}
	if on(2) {
		r.Instructions, r.PreviousResponseID = &a, &b
	}
	if on(3) {
		r.MaxOutputTokens = &n
	}
	if on(4) {
		f, g := float64(n)/3, 0.7
		r.Temperature, r.TopP = &f, &g
	}
	if on(5) {
		r.Usage = responsesUsage(&chat.Usage{PromptTokens: int(n % 1000), CompletionTokens: 7, TotalTokens: int(n % 2000)})
	}
	if on(6) {
		r.Output = nil
		r.Tools = []struct{}{{}, {}}
	}
	r.ParallelToolCalls, r.Store = on(7), on(8)
	if on(9) {
		r.Output = append(r.Output, reasoningItem("rs_"+a, b), messageItem("msg_1", responses.StatusCompleted, responses.NewOutputText(a), responses.NewRefusal(b)))
	}
	if on(10) {
		r.Output = append(r.Output, messageItem("msg_2", responses.StatusInProgress))
	}
	if on(11) {
		args, input := a, b
		r.Output = append(r.Output,
			responses.OutputItem{Type: responses.ItemFunctionCall, ID: "fc_1", Status: responses.StatusCompleted, CallID: a, Name: b, Namespace: a, Arguments: &args},
			responses.OutputItem{Type: responses.ItemCustomToolCall, ID: "ctc_1", CallID: b, Name: a, Input: &input, Encrypted: &args})
	}
	if on(12) {
		r.Output = append(r.Output, responses.OutputItem{Type: responses.ItemMessage, ID: "m", Content: &[]responses.OutputPart{{Type: "output_text", Text: a, Refusal: b}, {Type: "summary_text"}}})
	}
	return r
}

// TestResponsesJSONMatchesMarshal: the hand-written writers give
// json.Marshal's bytes for every shape: each optional member set and not,
// strings that need escapes, HTML, control characters and invalid UTF-8.
func TestResponsesJSONMatchesMarshal(t *testing.T) {
	texts := []string{"", "plain", "quote \" and \\ back", "<html> & \u2028", "ctl \x00\x1f\t\n", "bad \xff\xfe utf-8 \xe2\x82", "ünïcödé 日本"}
	for i, a := range texts {
		b := texts[(i+3)%len(texts)]
		for set := range uint16(1 << 13) {
			if set%97 != uint16(i) && set != 1<<13-1 && set != 0 {
				continue // a spread of the combinations, and all and none, for each text
			}
			r := responseOf(a, b, int64(i)*12345, set)
			if got, want := appendResponse(nil, &r), marshalled(t, &r); !bytes.Equal(got, want) {
				t.Fatalf("texts %q %q, members %013b:\ngot  %s\nwant %s", a, b, set, got, want)
			}
			for k := range r.Output {
				if got, want := appendItem(nil, &r.Output[k]), marshalled(t, r.Output[k]); !bytes.Equal(got, want) {
					t.Fatalf("item %d:\ngot  %s\nwant %s", k, got, want)
				}
			}
		}
		for _, p := range []responses.OutputPart{responses.NewOutputText(a), responses.NewRefusal(a), lanePart(laneThinking, a), lanePart(laneText, b), {Type: "x", Text: a, Refusal: b, Logprobs: &[]struct{}{{}}}} {
			if got, want := appendPart(nil, p), marshalled(t, p); !bytes.Equal(got, want) {
				t.Fatalf("part %+v:\ngot  %s\nwant %s", p, got, want)
			}
		}
	}
}

// FuzzResponsesJSONMatchesMarshal: for any texts and members, the
// hand-written writers give json.Marshal's bytes.
func FuzzResponsesJSONMatchesMarshal(f *testing.F) {
	f.Add("hi", "there", int64(3), uint16(0xffff))
	f.Add("\xff", "\u2028<>&", int64(-1), uint16(0))
	f.Fuzz(func(t *testing.T, a, b string, n int64, set uint16) {
		r := responseOf(a, b, n, set)
		if got, want := appendResponse(nil, &r), marshalled(t, &r); !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
