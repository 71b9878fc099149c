package textcall

import "strings"

// FencedJSON: a call written as JSON in a markdown fence,
// ```` ```json\n{"name": N, "arguments": {…}}\n``` ```` (or a list of
// them, or "parameters" for "arguments"), as the whole answer or its last
// block; a fence followed by more prose was an example and stays text.
func init() {
	register(FencedJSON, parseFencedJSON, marker{text: "```"})
}

func parseFencedJSON(s string, t *toolset) block {
	i := len("```")
	j := i
	for j < len(s) && isIdentByte(s[j]) {
		j++
	}
	if j == len(s) {
		return incompleteBlock()
	}
	if lang := strings.ToLower(s[i:j]); lang != "" && lang != "json" && lang != "tool_call" && lang != "xml" {
		return badBlock()
	}
	b := jsonListBlock(s, j, t)
	if b.st != complete {
		return b
	}
	k, st := expect(s, skipSpace(s, b.n), "```")
	switch st {
	case complete:
		return block{calls: b.calls, n: k, st: complete}
	case incomplete:
		return block{calls: b.calls, st: incomplete, cutOK: true}
	}
	return badBlock()
}
