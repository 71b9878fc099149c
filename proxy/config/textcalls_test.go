package config

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

func TestTextCallsSettings(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(`model_list:
  - model_name: default
    proxy_params: {model: vendorb/q, api_base: 'http://h/v1', api_key: k}
  - model_name: off
    proxy_params: {model: vendorb/q, api_base: 'http://h/v1', api_key: k, tool_calls_in_text: off, reasoning_in_text: off}
  - model_name: some
    proxy_params: {model: vendora/q, api_base: 'http://h/v1', api_key: k, tool_calls_in_text: [hermes, qwen3_coder], reasoning_in_text: open_in_prompt}
`), allSet)
	if err != nil {
		t.Fatal(err)
	}
	for alias, want := range map[string]struct {
		set  textcall.Set
		mode textcall.Reasoning
	}{
		"default": {textcall.All, textcall.ReasoningAuto},
		"off":     {0, textcall.ReasoningOff},
		"some":    {1<<textcall.Hermes | 1<<textcall.Qwen3Coder, textcall.ReasoningOpenInPrompt},
	} {
		r, _ := cfg.Lookup(alias)
		if r.TextCalls != want.set || r.TextReasoning != want.mode {
			t.Errorf("%s: tool_calls_in_text %b, reasoning_in_text %d; want %b, %d", alias, r.TextCalls, r.TextReasoning, want.set, want.mode)
		}
	}
}

func TestTextCallsSettingsErrors(t *testing.T) {
	for _, c := range []struct{ name, params, want string }{
		{"unknown family", "tool_calls_in_text: [hermes, hermez]", `tool_calls_in_text[1] is "hermez": not a family of tool calls written as text; the families are hermes, qwen3_coder`},
		{"bad scalar", "tool_calls_in_text: sometimes", `tool_calls_in_text is "sometimes": write auto (every family), off, or a list`},
		{"bad reasoning", "reasoning_in_text: maybe", `reasoning_in_text is "maybe": write auto`},
	} {
		_, err := Parse("c.yaml", []byte("model_list:\n  - model_name: a\n    proxy_params: {model: vendorb/q, api_base: 'http://h/v1', api_key: k, "+c.params+"}\n"), allSet)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "c.yaml:3:") {
			t.Errorf("%s: %v; want an error at c.yaml:3: holding %q", c.name, err, c.want)
		}
	}
}
