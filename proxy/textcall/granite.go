package textcall

import "strings"

// Granite: IBM Granite 3.0's `<|tool_call|>[{"name": N, "arguments": {…}}, …]`
// and 3.1's `<tool_call>[…]` (a list where Hermes writes one object; an
// optional `</tool_call>` after it).
func init() {
	register(Granite, parseGranite, marker{text: "<|tool_call|>"}, marker{text: "<tool_call>"})
}

func parseGranite(s string, t *toolset) block {
	if !strings.HasPrefix(s, "<tool_call>") {
		return jsonListBlock(s, len("<|tool_call|>"), t)
	}
	i := skipSpace(s, len("<tool_call>"))
	if i < len(s) && s[i] != '[' {
		return badBlock() // an object: Hermes's
	}
	b := jsonListBlock(s, i, t)
	if b.st != complete {
		return b
	}
	switch k, st := expect(s, skipSpace(s, b.n), "</tool_call>"); st {
	case complete:
		b.n = k
	case incomplete:
		if skipSpace(s, b.n) < len(s) {
			return block{calls: b.calls, st: incomplete, cutOK: true}
		}
	}
	return b
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
