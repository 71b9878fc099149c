package doctor

import (
	"fmt"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// probeTools are the tools of toolProbe, for textcall.
var probeTools = []textcall.Tool{
	{Name: "get_time", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
}

// textToolCall judges a tool probe the model answered with text: when
// the text holds a call written in one of textcall's families (issue 38),
// it says which and that the proxy recovers it (or would, with
// tool_calls_in_text on). It reports whether it added a result.
func (c *checker) textToolCall(text string) bool {
	all := textcall.Parse(text, &textcall.Options{Families: textcall.All, Reasoning: c.route.TextReasoning, Tools: probeTools})
	if len(all.Calls) == 0 {
		return false
	}
	call := all.Calls[0]
	what := fmt.Sprintf("the model wrote its call %s(%s) as text, in the %s family, not as a tool call", call.Name, c.redact(clipString(call.Arguments, 80)), call.Family)
	if !c.route.TextCalls.Has(call.Family) {
		c.add(CheckToolCall, Fail, what+"; proxy_params.tool_calls_in_text leaves that family out, so the client gets it as text",
			"set proxy_params.tool_calls_in_text: auto (or list "+call.Family.String()+"), or serve the model with the server's tool-call parser for it (vLLM --tool-call-parser, llama.cpp --jinja)")
		return true
	}
	c.add(CheckToolCall, Warn, what+": the proxy recovers it and gives the client a real call (proxy_params.tool_calls_in_text)",
		"works as is; the server's own tool-call parser for this model (vLLM --enable-auto-tool-choice --tool-call-parser <parser>, llama.cpp --jinja) would also honour tool_choice")
	return true
}
