package textcall

import "strings"

// dsTokens are DeepSeek's markers, written with full-width bars and the
// SentencePiece space, or (in Ollama's templates) with ASCII bars.
type dsTokens struct{ callsBegin, callsEnd, callBegin, callEnd, sep string }

var dsWide, dsASCII = dsTokens{
	"<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>",
}, dsTokens{
	"<|tool▁calls▁begin|>", "<|tool▁calls▁end|>", "<|tool▁call▁begin|>", "<|tool▁call▁end|>", "<|tool▁sep|>",
}

// DeepSeek: V3 and R1's
// `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`
// and V3.1's `<｜tool▁call▁begin｜>N<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`.
func init() {
	register(DeepSeek, parseDeepSeek, marker{text: dsWide.callsBegin}, marker{text: dsASCII.callsBegin})
}

func parseDeepSeek(s string, t *toolset) block {
	tk := &dsWide
	if strings.HasPrefix(s, dsASCII.callsBegin) {
		tk = &dsASCII
	}
	i := len(tk.callsBegin)
	var calls []Call
	for {
		i = skipSpace(s, i)
		if k, st := expect(s, i, tk.callsEnd); st == complete && len(calls) > 0 {
			return block{calls: calls, n: k, st: complete}
		} else if st == incomplete {
			return block{calls: calls, st: incomplete, cutOK: i == len(s) || len(calls) > 0}
		}
		k, st := expect(s, i, tk.callBegin)
		if st != complete {
			return block{st: st}
		}
		c, n, st := deepSeekCall(s, k, t, tk)
		if st == incomplete && c.Name != "" { // cut before the fence's close
			return block{calls: append(calls, c), st: incomplete, cutOK: true}
		}
		if st != complete {
			return block{st: st}
		}
		calls = append(calls, c)
		var ok bool
		var b block
		if i, b, ok = closeCall(s, n, tk.callEnd, calls); !ok {
			return b
		}
	}
}

// deepSeekCall reads, after `<｜tool▁call▁begin｜>`, `type<｜tool▁sep｜>N` and
// a json fence (V3, R1) or `N<｜tool▁sep｜>{…}` (V3.1). Cut after whole
// arguments but before the fence's close, it returns the call, incomplete.
func deepSeekCall(s string, i int, t *toolset, tk *dsTokens) (Call, int, status) {
	j := strings.Index(s[i:], tk.sep)
	if j < 0 {
		return Call{}, i, incomplete
	}
	head := strings.TrimSpace(s[i : i+j])
	i = skipSpace(s, i+j+len(tk.sep))
	if i == len(s) {
		return Call{}, i, incomplete
	}
	name := head
	if s[i] != '{' { // V3: the name, then the arguments in a json fence
		e := strings.IndexByte(s[i:], '\n')
		if e < 0 {
			return Call{}, i, incomplete
		}
		name = strings.TrimSpace(s[i : i+e])
		k, st := expect(s, skipSpace(s, i+e), "```")
		if st != complete {
			return Call{}, i, st
		}
		for k < len(s) && s[k] != '\n' && s[k] != '{' { // the fence's language
			k++
		}
		i = skipSpace(s, k)
	}
	if !t.has(name) {
		return Call{}, i, bad
	}
	args, end, st := jsonArgs(s, i)
	if st != complete {
		return Call{}, i, st
	}
	c := Call{Name: name, Arguments: args}
	if name != head { // the fence's close
		k, st := expect(s, skipSpace(s, end), "```")
		if st == incomplete {
			return c, i, incomplete // whole, but cut
		}
		if st == bad {
			return Call{}, i, bad
		}
		end = k
	}
	return c, end, complete
}
