package textcall

import "strings"

// Kimi: Kimi K2's
// `<|tool_calls_section_begin|><|tool_call_begin|>functions.N:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`
// (vLLM also meets the section markers with "call" for "calls").
func init() {
	register(Kimi, parseKimi,
		marker{text: "<|tool_calls_section_begin|>"}, marker{text: "<|tool_call_section_begin|>"})
}

func parseKimi(s string, t *toolset) block {
	i := len("<|tool_calls_section_begin|>")
	if strings.HasPrefix(s, "<|tool_call_section_begin|>") {
		i = len("<|tool_call_section_begin|>")
	}
	var calls []Call
	for {
		i = skipSpace(s, i)
		for _, end := range [...]string{"<|tool_calls_section_end|>", "<|tool_call_section_end|>"} {
			if k, st := expect(s, i, end); st == complete && len(calls) > 0 {
				return block{calls: calls, n: k, st: complete}
			} else if st == incomplete {
				return block{calls: calls, st: incomplete, cutOK: len(calls) > 0}
			}
		}
		k, st := expect(s, i, "<|tool_call_begin|>")
		if st != complete {
			return block{st: st}
		}
		a := strings.Index(s[k:], "<|tool_call_argument_begin|>")
		if a < 0 {
			if strings.Contains(s[k:], "<|tool_call_end|>") {
				return badBlock()
			}
			return incompleteBlock()
		}
		name := kimiName(strings.TrimSpace(s[k : k+a]))
		if !t.has(name) {
			return badBlock()
		}
		k = skipSpace(s, k+a+len("<|tool_call_argument_begin|>"))
		args, end, st := jsonArgs(s, k)
		if st != complete {
			return block{st: st}
		}
		calls = append(calls, Call{Name: name, Arguments: args})
		var ok bool
		var b block
		if i, b, ok = closeCall(s, end, "<|tool_call_end|>", calls); !ok {
			return b
		}
	}
}

// kimiName is the tool's name in a call id: functions.N:0 → N.
func kimiName(id string) string {
	id = strings.TrimPrefix(id, "functions.")
	if k := strings.LastIndexByte(id, ':'); k >= 0 {
		id = id[:k]
	}
	return id
}
