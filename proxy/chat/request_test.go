package chat

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

func TestRequestRoundTrip(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"q"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}],"name":"bob"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto","max_tokens":10,"stop":"x","stream":true,"stream_options":{"include_usage":true},"seed":7,"logit_bias":{"1":2}}`
	var r Request
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.Model != "m" || len(r.Messages) != 4 || r.Messages[2].ToolCalls[0].ID != "c1" || r.Messages[3].ToolCallID != "c1" ||
		string(r.ToolChoice) != `"auto"` || *r.MaxTokens != 10 || !r.Stream || !r.StreamOptions.IncludeUsage {
		t.Fatalf("decoded %+v", r)
	}
	var parts []ContentPart
	if err := json.Unmarshal(r.Messages[1].Content, &parts); err != nil || parts[1].ImageURL.URL != "data:image/png;base64,AA==" {
		t.Errorf("parts %+v, %v", parts, err)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{`"seed":7`, `"logit_bias":{"1":2}`, `"name":"bob"`, `"content":null`} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("re-encoded request lost %s: %s", keep, out)
		}
	}
}
