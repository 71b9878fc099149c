package textcall

import "strings"

// Pythonic: `[f(a='x', b=1), g()]` as the whole answer (Llama 3.2, Llama
// 4, and the vLLM "pythonic" templates), or between Llama 4's
// `<|python_start|>` and `<|python_end|>`; the keyword arguments are
// Python literals, given out as JSON.
func init() {
	register(Pythonic, parsePythonic,
		marker{text: "[", whole: true}, marker{text: "<|python_start|>"})
}

func parsePythonic(s string, t *toolset) block {
	i := 0
	tagged := strings.HasPrefix(s, "<|python_start|>")
	if tagged {
		i = skipSpace(s, len("<|python_start|>"))
		if i == len(s) {
			return incompleteBlock()
		}
		if s[i] != '[' {
			return badBlock()
		}
	}
	var calls []Call
	i = skipSpace(s, i+1) // after the [
	for first := true; ; first = false {
		if i == len(s) {
			return incompleteBlock()
		}
		if s[i] == ']' && !first {
			i++
			break
		}
		if !first {
			if s[i] != ',' {
				return badBlock()
			}
			i = skipSpace(s, i+1)
		}
		c, n, st := pyCall(s, i, t)
		if st != complete {
			return block{st: st}
		}
		calls = append(calls, c)
		i = skipSpace(s, n)
	}
	if tagged {
		j, st := expect(s, skipSpace(s, i), "<|python_end|>")
		switch st {
		case complete:
			i = j
		case incomplete:
			if skipSpace(s, i) < len(s) {
				return block{calls: calls, st: incomplete, cutOK: true}
			}
		}
	}
	return block{calls: calls, n: i, st: complete}
}

// pyCall reads `name(k=v, …)` at s[i:]; a dotted name keeps its last part.
func pyCall(s string, i int, t *toolset) (Call, int, status) {
	j := i
	for j < len(s) && (isIdentByte(s[j]) || s[j] == '.' || s[j] == '-') {
		j++
	}
	if j == len(s) {
		return Call{}, j, incomplete
	}
	name := s[i:j]
	if k := strings.LastIndexByte(name, '.'); k >= 0 {
		name = name[k+1:]
	}
	if s[j] != '(' || !t.has(name) {
		return Call{}, j, bad
	}
	var b strings.Builder
	b.WriteByte('{')
	i = skipSpace(s, j+1)
	for first := true; ; first = false {
		if i == len(s) {
			return Call{}, i, incomplete
		}
		if s[i] == ')' {
			i++
			break
		}
		if !first {
			if s[i] != ',' {
				return Call{}, i, bad
			}
			i = skipSpace(s, i+1)
			if i == len(s) {
				return Call{}, i, incomplete
			}
			if s[i] == ')' {
				i++
				break
			}
			b.WriteByte(',')
		}
		k := i
		for k < len(s) && isIdentByte(s[k]) {
			k++
		}
		if k == len(s) {
			return Call{}, k, incomplete
		}
		key := s[i:k]
		k = skipSpace(s, k)
		if k == len(s) {
			return Call{}, k, incomplete
		}
		if key == "" || s[k] != '=' { // a positional argument has no name
			return Call{}, k, bad
		}
		b.WriteString(jsonString(key))
		b.WriteByte(':')
		n, st := pyValueTo(&b, s, skipSpace(s, k+1), 0)
		if st != complete {
			return Call{}, n, st
		}
		i = skipSpace(s, n)
	}
	b.WriteByte('}')
	return Call{Name: name, Arguments: b.String()}, i, complete
}
