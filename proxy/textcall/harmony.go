package textcall

import "strings"

// Harmony: gpt-oss's
// `<|start|>assistant<|channel|>commentary to=functions.N <|constrain|>json<|message|>{…}<|call|>`,
// the recipient before or after the channel, the `<|start|>assistant` and
// the `<|call|>` (a stop token servers often drop) optional. Its analysis
// channel at the answer's start is reasoning (reasoning.go).
func init() {
	register(Harmony, parseHarmony,
		marker{text: "<|start|>assistant"}, marker{text: "<|channel|>commentary"})
}

func parseHarmony(s string, t *toolset) block {
	i := 0
	if strings.HasPrefix(s, "<|start|>assistant") {
		i = len("<|start|>assistant")
	}
	m := strings.Index(s[i:], "<|message|>")
	head := s[i:]
	if m >= 0 {
		head = s[i : i+m]
	}
	// The header: the channel, the recipient, the content type.
	if c := strings.Index(head, "<|channel|>"); c >= 0 {
		ch := head[c+len("<|channel|>"):]
		if e := strings.IndexAny(ch, " <"); e >= 0 {
			ch = ch[:e]
		} else if m < 0 {
			ch = "" // not written whole yet
		}
		if ch != "" && ch != "commentary" && !strings.HasPrefix("commentary", ch) {
			return badBlock()
		}
	}
	if m < 0 {
		return incompleteBlock()
	}
	r := strings.Index(head, "to=")
	if r < 0 {
		return badBlock() // a commentary message to the user, not a call
	}
	name := head[r+len("to="):]
	if e := strings.IndexAny(name, " <"); e >= 0 {
		name = name[:e]
	}
	name = strings.TrimPrefix(name, "functions.")
	if !t.has(name) {
		return badBlock()
	}
	i = skipSpace(s, i+m+len("<|message|>"))
	args, end, st := jsonArgs(s, i)
	if st != complete {
		return block{st: st}
	}
	c := []Call{{Name: name, Arguments: args}}
	k, st := expect(s, skipSpace(s, end), "<|call|>")
	switch st {
	case complete:
		return block{calls: c, n: k, st: complete}
	case incomplete:
		if skipSpace(s, end) < len(s) {
			return block{calls: c, st: incomplete, cutOK: true}
		}
	}
	return block{calls: c, n: end, st: complete}
}
