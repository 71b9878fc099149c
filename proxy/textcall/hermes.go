package textcall

import "strings"

// Hermes: `<tool_call>{"name": N, "arguments": {…}}</tool_call>`, one call
// a block (Hermes 2 Pro, Qwen2.5, Qwen3, and the many templates that copy
// them). The arguments may be a JSON string that holds the object. Also
// the slips llama.cpp's Hermes 2 Pro parser takes from Qwen2.5 models: the
// same object in `<tool>`, `<tools>`, `<response>`, `<json>`, `<xml>` or
// `<function_call>` tags, and `<function=N>{…}</function>` or
// `<function name="N">{…}</function>` (the arguments alone).
func init() {
	ms := []marker{{text: "<function="}, {text: "<function name="}}
	for _, w := range hermesWrappers {
		ms = append(ms, marker{text: w})
	}
	register(Hermes, parseHermes, ms...)
}

var hermesWrappers = []string{"<tool_call>", "<tool>", "<tools>", "<response>", "<json>", "<JSON>", "<xml>", "<function_call>"}

func parseHermes(s string, t *toolset) block {
	for _, w := range hermesWrappers {
		if strings.HasPrefix(s, w) {
			return hermesWrapped(s, w, t)
		}
	}
	// <function=N>{…}</function>, <function name="N">{…}</function>
	i := len("<function=")
	if strings.HasPrefix(s, "<function name=") {
		i = len("<function name=")
	}
	name, i, st := xmlAttr(s, i)
	if st != complete {
		return block{st: st}
	}
	if !t.has(name) {
		return badBlock()
	}
	args, end, st := jsonArgs(s, skipSpace(s, i))
	if st != complete {
		return block{st: st}
	}
	return closeBlock(s, end, "</function>", Call{Name: name, Arguments: args})
}

// hermesWrapped reads the call object in the wrapper tag w.
func hermesWrapped(s, w string, t *toolset) block {
	i := skipSpace(s, len(w))
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
	return closeBlock(s, end, "</"+w[1:], c)
}

// closeBlock reads, after whitespace, the closing tag of a block of one
// call: the block, cut there (and recovered: the call is whole), or bad.
func closeBlock(s string, i int, end string, c Call) block {
	j, st := expect(s, skipSpace(s, i), end)
	switch st {
	case complete:
		return block{calls: []Call{c}, n: j, st: complete}
	case incomplete:
		return block{calls: []Call{c}, st: incomplete, cutOK: true}
	}
	return badBlock()
}
