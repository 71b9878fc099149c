package textcall

import "strings"

// Mistral: `[TOOL_CALLS] [{"name": N, "arguments": {…}}, …]` (tokenizers
// before v11) and `[TOOL_CALLS]N[ARGS]{…}` (v11 on, one marker a call,
// with an optional `[CALL_ID]id` between the name and `[ARGS]`).
func init() {
	register(Mistral, parseMistral, marker{text: "[TOOL_CALLS]"})
}

func parseMistral(s string, t *toolset) block {
	i := skipSpace(s, len("[TOOL_CALLS]"))
	if i == len(s) {
		return incompleteBlock()
	}
	if s[i] == '[' || s[i] == '{' {
		end, st := jsonValue(s, i)
		if st != complete {
			return block{st: st}
		}
		calls, ok := callsFromJSON(s[i:end], t, false, "arguments", "parameters")
		if !ok {
			return badBlock()
		}
		return block{calls: calls, n: end, st: complete}
	}
	// N[ARGS]{…}, N[CALL_ID]id[ARGS]{…}, or (Magistral) N{…}
	j := strings.IndexAny(s[i:], "[{")
	if j < 0 {
		if strings.ContainsAny(s[i:], " \n") || !t.begins(s[i:]) {
			return badBlock()
		}
		return incompleteBlock()
	}
	name := s[i : i+j]
	if !t.has(name) {
		return badBlock()
	}
	i += j
	k := i
	if s[i] == '[' {
		if c, st := expect(s, i, "[CALL_ID]"); st == incomplete {
			return incompleteBlock()
		} else if st == complete {
			e := strings.Index(s[c:], "[ARGS]")
			if e < 0 {
				return incompleteBlock()
			}
			i = c + e
		}
		var st status
		if k, st = expect(s, i, "[ARGS]"); st != complete {
			return block{st: st}
		}
		k = skipSpace(s, k)
	}
	args, end, st := jsonArgs(s, k)
	if st != complete {
		return block{st: st}
	}
	return block{calls: []Call{{Name: name, Arguments: args}}, n: end, st: complete}
}
