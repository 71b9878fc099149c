package textcall

import "strings"

// GLM: GLM-4.5/4.6's `<tool_call>N\n<arg_key>k</arg_key>\n<arg_value>v</arg_value>\n</tool_call>`
// and GLM-4.7's inline form without the newlines. The values are typed by
// the tool's schema (typedValue).
func init() {
	register(GLM, parseGLM, marker{text: "<tool_call>"})
}

func parseGLM(s string, t *toolset) block {
	i := skipSpace(s, len("<tool_call>"))
	j := strings.IndexAny(s[i:], "<\n")
	if j < 0 {
		if !t.begins(strings.TrimSpace(s[i:])) {
			return badBlock()
		}
		return incompleteBlock()
	}
	name := strings.TrimSpace(s[i : i+j])
	if !t.has(name) {
		return badBlock()
	}
	i += j
	var b strings.Builder
	b.WriteByte('{')
	for n := 0; ; n++ {
		i = skipSpace(s, i)
		if k, st := expect(s, i, "</tool_call>"); st == complete {
			b.WriteByte('}')
			return block{calls: []Call{{Name: name, Arguments: b.String()}}, n: k, st: complete}
		} else if st == incomplete {
			return incompleteBlock()
		}
		k, st := expect(s, i, "<arg_key>")
		if st != complete {
			return block{st: st}
		}
		e := strings.Index(s[k:], "</arg_key>")
		if e < 0 {
			return incompleteBlock()
		}
		key := strings.TrimSpace(s[k : k+e])
		k, st = expect(s, skipSpace(s, k+e+len("</arg_key>")), "<arg_value>")
		if st != complete {
			return block{st: st}
		}
		end, st := closeBefore(s, k, "</arg_value>", "<arg_key>", "</tool_call>")
		if st != complete {
			return block{st: st}
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(key))
		b.WriteByte(':')
		b.WriteString(typedValue(s[k:end], t.paramType(name, key)))
		i = end + len("</arg_value>")
	}
}
