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
		c, n, st := minimaxXML.call(s, i, t)
		if st != complete {
			return block{st: st}
		}
		calls = append(calls, c)
		i = n
	}
}

var minimaxXML = xmlForm{open: "<invoke name=", param: "<parameter name=", close: "</invoke>"}
