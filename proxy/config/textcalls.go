package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// Tool calls and reasoning that a backend model writes as text in its
// answer (issue 38): proxy_params.tool_calls_in_text says which families
// of written calls the proxy recovers (auto: every family; off: none; or
// a list of family names), proxy_params.reasoning_in_text how reasoning
// written as text is recognized (auto, off, open_in_prompt).

// textCallsKeys are the proxy_params keys of this file.
var textCallsKeys = []string{"tool_calls_in_text", "reasoning_in_text"}

// reasoningModes are the values of proxy_params.reasoning_in_text.
var reasoningModes = map[string]textcall.Reasoning{
	"auto": textcall.ReasoningAuto, "off": textcall.ReasoningOff, "open_in_prompt": textcall.ReasoningOpenInPrompt,
}

// textCalls reads proxy_params.tool_calls_in_text and
// proxy_params.reasoning_in_text into r (their defaults are set by route).
func (p *parser) textCalls(params map[string]*yaml.Node, where string, r *Route) error {
	if v, ok := params["tool_calls_in_text"]; ok {
		set, err := p.textCallFamilies(v, where+".tool_calls_in_text")
		if err != nil {
			return err
		}
		r.TextCalls = set
	}
	if v, ok := params["reasoning_in_text"]; ok {
		mode, known := reasoningModes[v.Value]
		if v.Kind != yaml.ScalarNode || !known {
			return p.errorf(v, "%s.reasoning_in_text is %q: write auto (a leading <think>…</think> is reasoning), off (it stays text) or open_in_prompt (the chat template opened <think>: the text up to the first </think> is reasoning)", where, v.Value)
		}
		r.TextReasoning = mode
	}
	return nil
}

// textCallFamilies reads tool_calls_in_text: auto, off, or a list of
// family names.
func (p *parser) textCallFamilies(v *yaml.Node, key string) (textcall.Set, error) {
	names := strings.Join(textcall.FamilyNames(), ", ")
	switch {
	case v.Kind == yaml.ScalarNode && v.Value == "auto":
		return textcall.All, nil
	case v.Kind == yaml.ScalarNode && (v.Value == "off" || v.Value == "false"):
		return 0, nil
	case v.Kind != yaml.SequenceNode:
		return 0, p.errorf(v, "%s is %q: write auto (every family), off, or a list of family names among %s", key, v.Value, names)
	}
	var set textcall.Set
	for i, item := range v.Content {
		f, ok := textcall.FamilyByName(item.Value)
		if item.Kind != yaml.ScalarNode || !ok {
			return 0, p.errorf(item, "%s is %q: not a family of tool calls written as text; the families are %s", fmt.Sprintf("%s[%d]", key, i), item.Value, names)
		}
		set |= 1 << f
	}
	return set, nil
}
