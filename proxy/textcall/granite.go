package textcall

// Granite: IBM Granite 3's `<|tool_call|>[{"name": N, "arguments": {…}}, …]`.
func init() {
	register(Granite, parseGranite, marker{text: "<|tool_call|>"})
}

func parseGranite(s string, t *toolset) block {
	return jsonListBlock(s, len("<|tool_call|>"), t)
}

// jsonListBlock reads the JSON list of calls (or one call) at s[i:] after
// a family's marker.
func jsonListBlock(s string, i int, t *toolset) block {
	i = skipSpace(s, i)
	end, st := jsonValue(s, i)
	if st != complete {
		return block{st: st}
	}
	calls, ok := callsFromJSON(s[i:end], t, true, "arguments", "parameters")
	if !ok {
		return badBlock()
	}
	return block{calls: calls, n: end, st: complete}
}
