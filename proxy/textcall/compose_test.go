package textcall

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// pieces are what TestComposedSplits builds answers of: prose, reasoning
// markers, whole and broken calls of every family, stop tokens, cut
// markers and multi-byte characters.
var pieces = []string{
	"Sure, ", "let me check. ", "\n", "  ", "é", "½", "😀", "<b>", "[x](y)", "{a}", "`c`", "fun ",
	"<think>", "</think>", "[THINK]", "[/THINK]", "<|channel|>analysis<|message|>", "<|end|>",
	`<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`,
	`<tool_call>{"name": "nope", "arguments": {}}</tool_call>`,
	`<tool_call>{"name": "get_weather", "arguments": {"q": "</tool_call>"}}</tool_call>`,
	"<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
	"<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>",
	"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
	`[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`, `[TOOL_CALLS] [{"name": "get_weather", "arguments": {}}]`,
	`{"name": "get_weather", "parameters": {"city": "Paris"}}`, "; ",
	"[get_weather(city='Paris', days=3)]", "<|python_start|>[get_weather()]<|python_end|>",
	dsWide.callsBegin + dsWide.callBegin + "get_weather" + dsWide.sep + `{"city": "P"}` + dsWide.callEnd + dsWide.callsEnd,
	"<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
	"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>",
	"```json\n{\"name\": \"get_weather\", \"arguments\": {}}\n```", "```python\nx\n```",
	`<|tool_call|>[{"name": "get_weather", "arguments": {}}]`, `functools[{"name": "get_weather", "arguments": {}}]`,
	`<minimax:tool_call><invoke name="get_weather"><parameter name="city">P</parameter></invoke></minimax:tool_call>`,
	"<|im_end|>", "<tool_", "<|", "<｜tool", "```", "functools", "[TOOL", `{"name": "get_we`,
}

// TestComposedSplits: answers made of random pieces give the same events
// however they are cut, Parse agrees, and with reasoning off and no call
// the text is the answer unaltered.
func TestComposedSplits(t *testing.T) {
	rnd := rand.New(rand.NewPCG(38, 38))
	tools := []Tool{{Name: "get_weather", Parameters: []byte(`{"properties":{"days":{"type":"integer"}}}`)}}
	recovered := 0
	for n := range 3000 {
		var b strings.Builder
		for range 1 + rnd.IntN(5) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		content := b.String()
		o := &Options{Families: All, Reasoning: Reasoning(n % 3), Tools: tools}
		want := merged(whole(o, content))
		var cuts []int
		for i := 1; i < len(content); i++ {
			if rnd.IntN(6) == 0 {
				cuts = append(cuts, i)
			}
		}
		if got := merged(feed(o, content, cuts)); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q cut at %v:\n%+v\nwhole:\n%+v", content, cuts, got, want)
		}
		r := Parse(content, o)
		if len(r.Calls) > 0 {
			recovered++
		} else if o.Reasoning == ReasoningOff && r.Text != content {
			t.Fatalf("%q: text %q", content, r.Text)
		}
	}
	t.Logf("%d of 3000 answers had calls", recovered)
	if recovered < 100 {
		t.Fatalf("only %d of the answers had calls: the pieces test too little", recovered)
	}
}
