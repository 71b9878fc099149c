package textcall

// Phi4: Phi-4-mini's `functools[{"name": N, "arguments": {…}}, …]`.
func init() {
	register(Phi4, parsePhi4, marker{text: "functools["})
}

func parsePhi4(s string, t *toolset) block {
	return jsonListBlock(s, len("functools"), t)
}
