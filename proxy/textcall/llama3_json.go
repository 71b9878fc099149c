package textcall

import "strings"

// Llama3JSON: Llama 3.1–3.3's JSON calls, `{"name": N, "parameters": {…}}`
// as the whole answer, several joined by `; `, after an optional
// `<|python_tag|>`.
func init() {
	register(Llama3JSON, parseLlama3JSON,
		marker{text: "{", whole: true}, marker{text: "<|python_tag|>"})
}

func parseLlama3JSON(s string, t *toolset) block {
	i := 0
	if strings.HasPrefix(s, "<|python_tag|>") {
		i = skipSpace(s, len("<|python_tag|>"))
	}
	var calls []Call
	for {
		end, st := jsonValue(s, i)
		if st == bad || st == complete && s[i] != '{' {
			return badBlock()
		}
		if st == incomplete {
			// Cut after a "; ": the calls before it are whole.
			return block{calls: calls, st: incomplete, cutOK: i == len(s)}
		}
		c, ok := callFromJSON([]byte(s[i:end]), t, true, "parameters", "arguments")
		if !ok {
			return badBlock()
		}
		calls = append(calls, c)
		j := skipSpace(s, end)
		if j == len(s) || s[j] != ';' {
			return block{calls: calls, n: end, st: complete}
		}
		i = skipSpace(s, j+1)
	}
}
