package textcall

import "strings"

// xmlForm is how a family writes a call as XML tags whose values are
// text: Qwen3-Coder's `<function=N><parameter=K>V</parameter></function>`
// and MiniMax's `<invoke name="N"><parameter name="K">V</parameter></invoke>`.
type xmlForm struct {
	wrap, unwrap string // the tags around a block of calls
	open         string // the call's opening tag up to its name
	param        string // a parameter's opening tag up to its name
	close        string // the call's closing tag
}

// block reads the calls in the wrapper tags, or one call without them
// (and then the closing wrapper tag alone, when the model wrote it, as
// Qwen3-Coder models do).
func (f *xmlForm) block(s string, t *toolset) block {
	i, wrapped := 0, strings.HasPrefix(s, f.wrap)
	if wrapped {
		i = len(f.wrap)
	}
	var calls []Call
	for {
		c, n, st := f.call(s, skipSpace(s, i), t)
		if st != complete {
			return block{st: st}
		}
		calls = append(calls, c)
		i = skipSpace(s, n)
		j, st := expect(s, i, f.unwrap)
		switch {
		case st == complete:
			return block{calls: calls, n: j, st: complete}
		case st == incomplete && (wrapped || i < len(s)):
			return block{calls: calls, st: incomplete, cutOK: true}
		case !wrapped:
			return block{calls: calls, n: n, st: complete}
		}
		// In the wrapper, another call must follow.
	}
}

// call reads one call at s[i:]: its name (a tool offered), then its
// parameters, each value up to the first `</parameter>` that is followed
// by another parameter or the call's close (so a value may hold the tag's
// text), less one newline at each end, typed by the tool's schema.
func (f *xmlForm) call(s string, i int, t *toolset) (Call, int, status) {
	i, st := expect(s, i, f.open)
	if st != complete {
		return Call{}, i, st
	}
	name, i, st := xmlAttr(s, i)
	if st == incomplete && !t.begins(strings.Trim(strings.TrimSpace(s[i:]), `"'`)) {
		st = bad // no tool offered has a name that begins so
	}
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
		if k, st := expect(s, i, f.close); st == complete {
			b.WriteByte('}')
			return Call{Name: name, Arguments: b.String()}, k, complete
		} else if st == incomplete {
			return Call{}, i, incomplete
		}
		k, st := expect(s, i, f.param)
		if st != complete {
			return Call{}, i, st
		}
		key, k, st := xmlAttr(s, k)
		if st != complete {
			return Call{}, k, st
		}
		end, st := closeBefore(s, k, "</parameter>", f.param, f.close)
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

// xmlAttr reads a tag's name or attribute value, quoted or not, and the
// `>` that closes the tag. One that holds a '<' or a newline is no tag,
// whether its `>` has come yet or not (a stream and the whole answer read
// it alike).
func xmlAttr(s string, i int) (string, int, status) {
	j := strings.IndexByte(s[i:], '>')
	if j < 0 {
		if strings.ContainsAny(s[i:], "<\n") {
			return "", i, bad
		}
		return "", i, incomplete
	}
	if strings.ContainsAny(s[i:i+j], "<\n") {
		return "", i, bad
	}
	v := strings.TrimSpace(s[i : i+j])
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return v, i + j + 1, complete
}
