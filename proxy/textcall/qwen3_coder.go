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
		c, n, st := qwenXML.call(s, i, t)
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

var qwenXML = xmlForm{open: "<function=", param: "<parameter=", close: "</function>"}
