package stub

import (
	"encoding/json"
	"sort"
	"strings"
)

// A model that writes its tool calls as text (issue 38), as a local
// server without a parser for the model's format passes them: with
// Options.TextCalls (--text-calls), or a "stub:text-calls=FORMAT" marker in
// the last user turn, an answer that would call a tool says a sentence
// and writes the call into its content instead, with finish_reason
// "stop". The tool result turn gets the usual plain answer.

// The formats the stub writes calls in.
const (
	TextCallsHermes     = "hermes"      // <tool_call>{"name":…,"arguments":{…}}</tool_call>
	TextCallsQwen3Coder = "qwen3_coder" // <function=N><parameter=K>V</parameter></function>, without the <tool_call> wrapper
)

const textCallsMarker = "stub:text-calls="

// textCallsFormat is the format an answer to req writes its calls in; ""
// for real calls.
func (s *Server) textCallsFormat(req *chatRequest) string {
	last := lastUserText(req.Messages)
	if i := strings.Index(last, textCallsMarker); i >= 0 {
		f, _, _ := strings.Cut(last[i+len(textCallsMarker):], " ")
		return strings.TrimSpace(f)
	}
	return s.opts.TextCalls
}

// writeCallsAsText turns a's calls into text in format.
func writeCallsAsText(a *answer, format string) {
	if format == "" || len(a.calls) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("I will call the tool.\n\n")
	for _, c := range a.calls {
		switch format {
		case TextCallsQwen3Coder:
			b.WriteString("<function=" + c.Name + ">\n")
			var args map[string]any
			json.Unmarshal([]byte(c.Arguments), &args)
			keys := make([]string, 0, len(args))
			for k := range args {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				v, ok := args[k].(string)
				if !ok {
					j, _ := json.Marshal(args[k])
					v = string(j)
				}
				b.WriteString("<parameter=" + k + ">\n" + v + "\n</parameter>\n")
			}
			b.WriteString("</function>\n")
		default:
			j, _ := json.Marshal(map[string]json.RawMessage{"name": mustJSON(c.Name), "arguments": json.RawMessage(c.Arguments)})
			b.WriteString("<tool_call>\n" + string(j) + "\n</tool_call>\n")
		}
	}
	a.text, a.calls, a.finish = b.String(), nil, "stop"
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
