package messages

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

func TestResponseBlockShapes(t *testing.T) {
	for _, tt := range []struct {
		b    ResponseBlock
		want string
	}{
		{ResponseBlock{Type: "text"}, `{"type":"text","text":""}`},
		{ResponseBlock{Type: "text", Text: "hi \"x\" <b>"}, `{"type":"text","text":"hi \"x\" <b>"}`},
		{ResponseBlock{Type: "thinking", Text: "hmm"}, `{"type":"thinking","thinking":"hmm","signature":""}`},
		{ResponseBlock{Type: "redacted_thinking", Text: "zz"}, `{"type":"redacted_thinking","data":"zz"}`},
		{ResponseBlock{Type: "tool_use", ID: "t1", Name: "Bash"}, `{"type":"tool_use","id":"t1","name":"Bash","input":{}}`},
		{ResponseBlock{Type: "tool_use", ID: "t1", Name: "Bash", Input: jsontext.Value(`{"a":[1]}`)}, `{"type":"tool_use","id":"t1","name":"Bash","input":{"a":[1]}}`},
	} {
		got, err := json.Marshal(tt.b)
		if err != nil || string(got) != tt.want {
			t.Errorf("%+v: %s, %v; want %s", tt.b, got, err, tt.want)
			continue
		}
		var back ResponseBlock
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if back.Type != tt.b.Type || back.Text != tt.b.Text || back.ID != tt.b.ID || back.Name != tt.b.Name {
			t.Errorf("round trip %+v → %+v", tt.b, back)
		}
	}
}

func TestResponseShape(t *testing.T) {
	stop := StopEndTurn
	got, err := json.Marshal(Response{ID: "msg_1", Type: "message", Role: "assistant", Model: "m", Content: []ResponseBlock{}, StopReason: &stop})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
