package textcall

import "strings"

// Qwen3Coder: Qwen3-Coder's (and Qwen3.5's) XML,
// `<tool_call><function=N><parameter=K>V</parameter>…</function></tool_call>`,
// also without the `<tool_call>` wrapper (a slip these models make). The
// values are typed by the tool's schema (typedValue), after the newline
// that opens and the one that closes each.
func init() {
	register(Qwen3Coder, parseQwen3Coder,
		marker{text: "<tool_call>"}, marker{text: "<function="})
}

func parseQwen3Coder(s string, t *toolset) block {
	i, wrapped := 0, strings.HasPrefix(s, "<tool_call>")
	if wrapped {
		i = skipSpace(s, len("<tool_call>"))
	}
	var calls []Call
	for {
		c, n, st := xmlFunction(s, i, t)
		if st != complete {
			return block{st: st}
		}
		calls = append(calls, c)
		i = skipSpace(s, n)
		if !wrapped {
			// The wrapper's closing tag, when the model wrote only it.
			j, st := expect(s, i, "</tool_call>")
			if st == complete {
				return block{calls: calls, n: j, st: complete}
			}
			if st == incomplete && i < len(s) {
				return block{calls: calls, st: incomplete, cutOK: true}
			}
			return block{calls: calls, n: n, st: complete}
		}
		j, st := expect(s, i, "</tool_call>")
		switch st {
		case complete:
			return block{calls: calls, n: j, st: complete}
		case incomplete:
			return block{calls: calls, st: incomplete, cutOK: true}
		}
		if _, st := expect(s, i, "<function="); st != complete {
			return badBlock()
		}
	}
}

// xmlFunction reads `<function=N>` and its parameters at s[i:].
func xmlFunction(s string, i int, t *toolset) (Call, int, status) {
	i, st := expect(s, i, "<function=")
	if st != complete {
		return Call{}, i, st
	}
	j := strings.IndexByte(s[i:], '>')
	if j < 0 {
		if strings.ContainsAny(s[i:], "<\n") || !t.begins(strings.TrimSpace(s[i:])) {
			return Call{}, i, bad
		}
		return Call{}, i, incomplete
	}
	name := strings.TrimSpace(s[i : i+j])
	if !t.has(name) {
		return Call{}, i, bad
	}
	i += j + 1
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; ; n++ {
		i = skipSpace(s, i)
		if k, st := expect(s, i, "</function>"); st == complete {
			b.WriteByte('}')
			return Call{Name: name, Arguments: b.String()}, k, complete
		} else if st == incomplete {
			return Call{}, i, incomplete
		}
		k, st := expect(s, i, "<parameter=")
		if st != complete {
			return Call{}, i, st
		}
		e := strings.IndexByte(s[k:], '>')
		if e < 0 {
			return Call{}, k, incomplete
		}
		key := strings.TrimSpace(s[k : k+e])
		k += e + 1
		end, st := closeBefore(s, k, "</parameter>", "<parameter=", "</function>")
		if st != complete {
			return Call{}, k, st
		}
		v := strings.TrimPrefix(s[k:end], "\n")
		v = strings.TrimSuffix(v, "\n")
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(key))
		b.WriteByte(':')
		b.WriteString(typedValue(v, t.paramType(name, key)))
		i = end + len("</parameter>")
	}
}
