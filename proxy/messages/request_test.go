package messages

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

func TestContentShapes(t *testing.T) {
	var r Request
	body := `{"model":"m","max_tokens":5,"system":"sys","messages":[
		{"role":"user","content":"plain \"q\""},
		{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"out"}],"is_error":true},{"type":"tool_result","tool_use_id":"t1","content":"s"}]},
		{"role":"user","content":null},
		{"role":"user","content":[]}],
		"tools":[{"name":"Bash","description":"d","input_schema":{"type":"object"}}],
		"tool_choice":{"type":"tool","name":"Bash","disable_parallel_tool_use":true},
		"thinking":{"type":"enabled","budget_tokens":2048},"output_config":{"effort":"high"},
		"unknown_member":{"x":1}}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if string(r.System.Text) != `"sys"` || r.System.Blocks != nil {
		t.Errorf("system = %+v", r.System)
	}
	m := r.Messages
	if string(m[0].Content.Text) != `"plain \"q\""` {
		t.Errorf("string content kept raw: %s", m[0].Content.Text)
	}
	if b := m[1].Content.Blocks; len(b) != 2 || string(b[0].Text) != `"a"` || b[1].ID != "t1" || string(b[1].Input) != `{"command":"ls"}` {
		t.Errorf("assistant blocks = %+v", b)
	}
	tr := m[2].Content.Blocks
	if !tr[0].IsError || tr[0].Content == nil || len(tr[0].Content.Blocks) != 1 || string(tr[1].Content.Text) != `"s"` {
		t.Errorf("tool results = %+v", tr)
	}
	if !m[3].Content.IsZero() {
		t.Errorf("null content = %+v", m[3].Content)
	}
	if m[4].Content.IsZero() || m[4].Content.Blocks == nil {
		t.Errorf("empty list must stay a (non-nil) empty list: %+v", m[4].Content)
	}
	if *r.MaxTokens != 5 || r.ToolChoice.Name != "Bash" || !r.ToolChoice.DisableParallelToolUse ||
		r.Thinking.BudgetTokens != 2048 || r.OutputConfig.Effort != "high" || string(r.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("request = %+v", r)
	}

	// Content encodes back in the shape it came in.
	out, err := json.Marshal(r.Messages[:2])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"content":"plain \"q\""`) || !strings.Contains(string(out), `"content":[{"type":"text","text":"a"}`) {
		t.Errorf("re-encoded: %s", out)
	}
}

func TestContentErrors(t *testing.T) {
	for _, body := range []string{
		`{"messages":[{"role":"user","content":5}]}`,
		`{"messages":[{"role":"user","content":{"type":"text"}}]}`,
		`{"messages":[{"role":"user","content":true}]}`,
		`{"system":7}`,
	} {
		var r Request
		err := json.Unmarshal([]byte(body), &r)
		if err == nil || !strings.Contains(err.Error(), "must be a string or an array of content blocks") {
			t.Errorf("%s: err = %v", body, err)
		}
	}
}
