package textcall

// Hermes: `<tool_call>{"name": N, "arguments": {…}}</tool_call>`, one call
// a block (Hermes 2 Pro, Qwen2.5, Qwen3, and the many templates that copy
// them). The arguments may be a JSON string that holds the object.
func init() {
	register(Hermes, parseHermes, marker{text: "<tool_call>"})
}

func parseHermes(s string, t *toolset) block {
	i := skipSpace(s, len("<tool_call>"))
	end, st := jsonValue(s, i)
	if st != complete {
		return block{st: st}
	}
	if s[i] != '{' {
		return badBlock()
	}
	c, ok := callFromJSON([]byte(s[i:end]), t, false, "arguments", "parameters")
	if !ok {
		return badBlock()
	}
	j, st := expect(s, skipSpace(s, end), "</tool_call>")
	switch st {
	case complete:
		return block{calls: []Call{c}, n: j, st: complete}
	case incomplete:
		return block{calls: []Call{c}, st: incomplete, cutOK: true}
	}
	return badBlock()
}
