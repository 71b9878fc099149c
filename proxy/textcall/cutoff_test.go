package textcall

import "testing"

// TestCutOff pins what an answer cut before its closing marker gives (the
// package doc's rule): the calls when they are whole and only the block's
// closing marker is missing, else the text unaltered.
func TestCutOff(t *testing.T) {
	tools := []Tool{{Name: "get_weather"}, {Name: "grep"}}
	cases := []struct {
		name, content string
		recovered     bool
	}{
		{"hermes args whole", `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}`, true},
		{"hermes closing tag cut", `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_`, true},
		{"hermes args cut", `<tool_call>{"name": "get_weather", "arguments": {"city": "Par`, false},
		{"qwen3 function closed", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n", true},
		{"qwen3 parameter closed only", "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n", false},
		{"qwen3 value cut", "<function=get_weather>\n<parameter=city>\nPar", false},
		{"glm no closing tag", "<tool_call>grep\n<arg_key>pattern</arg_key>\n<arg_value>x</arg_value>", false},
		{"mistral args whole", `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`, true},
		{"llama3 second call cut", `{"name": "get_weather", "parameters": {}}; {"name": "get_w`, false},
		{"pythonic without ]", "[get_weather(city='Paris')", false},
		{"deepseek fence open", dsWide.callsBegin + dsWide.callBegin + "function" + dsWide.sep + "get_weather\n```json\n{\"city\": \"Paris\"}\n", true},
		{"deepseek args cut", dsWide.callsBegin + dsWide.callBegin + "get_weather" + dsWide.sep + `{"city": "Pa`, false},
		{"kimi no end", "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}", true},
		{"fenced no closing fence", "```json\n{\"name\": \"get_weather\", \"arguments\": {}}\n", true},
		{"minimax invoke closed", `<minimax:tool_call><invoke name="get_weather"><parameter name="city">Paris</parameter></invoke>`, true},
		{"harmony no call token", "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}", true},
	}
	for _, c := range cases {
		o := &Options{Families: All, Tools: tools}
		r := Parse(c.content, o)
		if c.recovered {
			if len(r.Calls) != 1 || r.Text != "" {
				t.Errorf("%s: %+v, want one call", c.name, r)
			}
		} else if len(r.Calls) != 0 || r.Text != c.content {
			t.Errorf("%s: %+v, want the text unaltered", c.name, r)
		}
	}
}
