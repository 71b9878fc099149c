package textcall

// Qwen3Coder: Qwen3-Coder's (and Qwen3.5's) XML,
// `<tool_call><function=N><parameter=K>V</parameter>…</function></tool_call>`,
// also without the `<tool_call>` wrapper (a slip these models make). The
// values are typed by the tool's schema (typedValue), after the newline
// that opens and the one that closes each.
func init() {
	register(Qwen3Coder, parseQwen3Coder,
		marker{text: "<tool_call>"}, marker{text: "<function="})
}

var qwenXML = xmlForm{
	wrap: "<tool_call>", unwrap: "</tool_call>",
	open: "<function=", param: "<parameter=", close: "</function>",
}

func parseQwen3Coder(s string, t *toolset) block { return qwenXML.block(s, t) }
