package textcall

import "strings"

// opener is a way reasoning written as text opens, and the marker that
// ends it.
type opener struct{ open, end string }

// autoOpeners open reasoning at the answer's start in ReasoningAuto:
// `<think>` (Qwen3, DeepSeek R1, QwQ, GLM, …), Mistral's `[THINK]`
// (Magistral) and gpt-oss harmony's analysis channel.
var autoOpeners = []opener{
	{"<think>", "</think>"},
	{"[THINK]", "[/THINK]"},
	{"<|channel|>analysis<|message|>", "<|end|>"},
	{"<|start|>assistant<|channel|>analysis<|message|>", "<|end|>"},
}

// promptOpeners: in ReasoningOpenInPrompt the template opened `<think>`;
// a model that writes it again anyway has it skipped.
var promptOpeners = []opener{{"<think>", "</think>"}}

// start reads the answer's opening from pos: reasoning, or not. hold
// reports that data[pos:] must wait for more.
func (s *Scanner) start(data string, pos int, final bool) (int, bool) {
	var openers []opener
	switch s.opts.Reasoning {
	case ReasoningAuto:
		openers = autoOpeners
	case ReasoningOpenInPrompt:
		openers = promptOpeners
	default:
		s.st = stText
		return pos, false
	}
	i := skipSpace(data, pos)
	if i == len(data) && !final {
		return pos, true
	}
	rest := data[i:]
	for _, o := range openers {
		if strings.HasPrefix(rest, o.open) {
			// The whitespace before the opening marker goes with it.
			s.st, s.rEnd, s.trimLead = stReasoning, o.end, false
			return i + len(o.open), false
		}
		if !final && len(rest) < len(o.open) && strings.HasPrefix(o.open, rest) {
			return pos, true
		}
	}
	if s.opts.Reasoning == ReasoningOpenInPrompt {
		s.st, s.rEnd = stReasoning, "</think>"
	} else {
		s.st = stText
	}
	return pos, false
}
