package responses

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// randomResponse builds a response from r: every member set or not,
// strings that need escaping, invalid UTF-8 included.
func randomResponse(r *rand.Rand) *Response {
	strs := []string{"", "a", "say \"hi\"\n", "é 😀 \u2028 <>&", "\x00\x1f\x7f", "bad \xff utf8", `\/`, "resp_0123"}
	str := func() string { return strs[r.Intn(len(strs))] }
	strp := func() *string {
		if r.Intn(2) == 0 {
			return nil
		}
		s := str()
		return &s
	}
	parts := func() *[]OutputPart {
		if r.Intn(3) == 0 {
			return nil
		}
		ps := []OutputPart{}
		for range r.Intn(3) {
			switch r.Intn(3) {
			case 0:
				ps = append(ps, NewOutputText(str()))
			case 1:
				ps = append(ps, NewRefusal(str()))
			default:
				empties := make([]struct{}, r.Intn(3))
				ps = append(ps, OutputPart{Type: str(), Text: str(), Refusal: str(), Annotations: &empties, Logprobs: &empties})
			}
		}
		return &ps
	}
	resp := &Response{ID: str(), Object: "response", CreatedAt: r.Int63n(2e9) - 1e9, Status: str(), Instructions: strp(),
		Model: str(), Output: []OutputItem{}, ParallelToolCalls: r.Intn(2) == 0, PreviousResponseID: strp(), Store: r.Intn(2) == 0,
		ToolChoice: str(), Tools: []struct{}{}, Truncation: str()}
	if r.Intn(2) == 0 {
		resp.Error = &ResponseError{Code: str(), Message: str()}
	}
	if r.Intn(2) == 0 {
		resp.IncompleteDetails = &IncompleteDetails{Reason: str()}
	}
	if r.Intn(2) == 0 {
		n := r.Int63n(1e6)
		resp.MaxOutputTokens = &n
	}
	if r.Intn(2) == 0 {
		resp.Usage = &Usage{InputTokens: r.Intn(1e6), OutputTokens: r.Intn(1e4), TotalTokens: r.Intn(1e6)}
		resp.Usage.InputTokensDetails.CachedTokens = r.Intn(100)
		resp.Usage.OutputTokensDetails.ReasoningTokens = r.Intn(100)
	}
	if r.Intn(8) == 0 {
		resp.Output = nil
	}
	for range r.Intn(4) {
		resp.Output = append(resp.Output, OutputItem{Type: str(), ID: str(), Status: str(), Role: str(), Content: parts(),
			CallID: str(), Name: str(), Namespace: str(), Arguments: strp(), Input: strp(), Summary: parts(), Encrypted: strp()})
	}
	if r.Intn(10) == 0 {
		t := 0.5
		resp.Temperature = &t
	}
	return resp
}

// TestAppendJSONMatchesMarshal: AppendJSON writes the bytes json.Marshal
// writes, for random responses.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for range 20000 {
		resp := randomResponse(r)
		want, err := json.Marshal(resp, jsontext.AllowInvalidUTF8(true))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.AppendJSON([]byte("x")); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendJSON\n%s\njson.Marshal\n%s", got, want)
		}
	}
}
