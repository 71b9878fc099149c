package textcall

import "strings"

// MiniMax: MiniMax-M2's
// `<minimax:tool_call><invoke name="N"><parameter name="k">v</parameter></invoke></minimax:tool_call>`,
// also a bare `<invoke name=…>`; the values are typed by the tool's schema
// (typedValue).
func init() {
	register(MiniMax, parseMiniMax,
		marker{text: "<minimax:tool_call>"}, marker{text: "<invoke name="})
}

func parseMiniMax(s string, t *toolset) block {
	i, wrapped := 0, strings.HasPrefix(s, "<minimax:tool_call>")
	if wrapped {
		i = len("<minimax:tool_call>")
	}
	var calls []Call
	for {
		i = skipSpace(s, i)
		if len(calls) > 0 {
			if !wrapped {
				return block{calls: calls, n: i, st: complete}
			}
			k, st := expect(s, i, "</minimax:tool_call>")
			if st == complete {
				return block{calls: calls, n: k, st: complete}
			}
			if st == incomplete {
				return block{calls: calls, st: incomplete, cutOK: true}
			}
		}
		c, n, st := invoke(s, i, t)
		if st != complete {
			return block{st: st}
		}
		calls = append(calls, c)
		i = n
	}
}

// invoke reads `<invoke name="N">` and its parameters at s[i:].
func invoke(s string, i int, t *toolset) (Call, int, status) {
	i, st := expect(s, i, "<invoke name=")
	if st != complete {
		return Call{}, i, st
	}
	name, i, st := xmlAttr(s, i)
	if st != complete {
		return Call{}, i, st
	}
	if !t.has(name) {
		return Call{}, i, bad
	}
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; ; n++ {
		i = skipSpace(s, i)
		if k, st := expect(s, i, "</invoke>"); st == complete {
			b.WriteByte('}')
			return Call{Name: name, Arguments: b.String()}, k, complete
		} else if st == incomplete {
			return Call{}, i, incomplete
		}
		k, st := expect(s, i, "<parameter name=")
		if st != complete {
			return Call{}, i, st
		}
		key, k, st := xmlAttr(s, k)
		if st != complete {
			return Call{}, k, st
		}
		end, st := closeBefore(s, k, "</parameter>", "<parameter name=", "</invoke>")
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

// xmlAttr reads an attribute's value, quoted or not, and the `>` that
// closes the tag.
func xmlAttr(s string, i int) (string, int, status) {
	j := strings.IndexByte(s[i:], '>')
	if j < 0 {
		if strings.ContainsAny(s[i:], "<\n") {
			return "", i, bad
		}
		return "", i, incomplete
	}
	v := strings.TrimSpace(s[i : i+j])
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v, i + j + 1, complete
}
