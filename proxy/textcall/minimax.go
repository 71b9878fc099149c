package textcall

// MiniMax: MiniMax-M2's
// `<minimax:tool_call><invoke name="N"><parameter name="k">v</parameter></invoke></minimax:tool_call>`,
// also a bare `<invoke name=…>`; the values are typed by the tool's schema
// (typedValue).
func init() {
	register(MiniMax, parseMiniMax,
		marker{text: "<minimax:tool_call>"}, marker{text: "<invoke name="})
}

var minimaxXML = xmlForm{
	wrap: "<minimax:tool_call>", unwrap: "</minimax:tool_call>",
	open: "<invoke name=", param: "<parameter name=", close: "</invoke>",
}

func parseMiniMax(s string, t *toolset) block { return minimaxXML.block(s, t) }
