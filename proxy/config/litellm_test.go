package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// liteLLMEntry is a one-entry config in LiteLLM's spelling.
func liteLLMEntry(params string) string {
	return "model_list:\n  - model_name: m\n    litellm_params:\n" + params
}

func TestLiteLLMPrefixes(t *testing.T) {
	for _, tt := range []struct {
		model, apiBase string
		protocol       Protocol
		wantBase       string
	}{
		{"openai/qwen3-coder", "http://h:8000/v1", ProtocolChat, "http://h:8000/v1"},
		{"hosted_vllm/Qwen/Qwen3-Coder", "http://h:8000/v1/", ProtocolChat, "http://h:8000/v1"},
		{"lm_studio/qwen3", "http://h:1234/v1", ProtocolChat, "http://h:1234/v1"},
		{"llamafile/llama", "http://h:8080/v1", ProtocolChat, "http://h:8080/v1"},
		{"ollama/qwen3:8b", "http://h:11434", ProtocolChat, "http://h:11434/v1"},
		{"ollama_chat/qwen3:8b", "http://h:11434/v1", ProtocolChat, "http://h:11434/v1"},
		{"anthropic/claude-x", "http://h:9000", ProtocolMessages, "http://h:9000/v1"},
		{"anthropic/claude-x", "http://h:9000/v1", ProtocolMessages, "http://h:9000/v1"},
	} {
		cfg, err := Parse("c.yaml", []byte(liteLLMEntry("      model: "+tt.model+"\n      api_base: "+tt.apiBase+"\n      api_key: k\n")), env(nil))
		if err != nil {
			t.Errorf("%s: %v", tt.model, err)
			continue
		}
		r := cfg.Routes[0]
		_, name, _ := strings.Cut(tt.model, "/")
		if r.Protocol != tt.protocol || r.APIBase != tt.wantBase || r.BackendModel != name {
			t.Errorf("%s at %s: protocol %v, api_base %s, model %s; want %v, %s, %s", tt.model, tt.apiBase, r.Protocol, r.APIBase, r.BackendModel, tt.protocol, tt.wantBase, name)
		}
	}
}

// TestLiteLLMSpellingIsTheSameConfig: the same config in either spelling
// loads to the same Config (the messages endpoint aside, which LiteLLM's
// spelling turns on by default and the spec's names in general_settings).
func TestLiteLLMSpellingIsTheSameConfig(t *testing.T) {
	spec := strings.Replace(valid, "model: vendorb/qwen3-coder\n      api_base: https://gpu", "model: vendora/qwen3-coder\n      api_base: https://gpu", 1)
	lite := strings.ReplaceAll(spec, "proxy_params:", "litellm_params:")
	lite = strings.Replace(lite, "vendorb/", "hosted_vllm/", 1)
	lite = strings.Replace(lite, "vendora/", "anthropic/", 1)
	vars := env(map[string]string{"BACKEND_KEY": "b", "OTHER_KEY": "o", "PROXY_KEY": "p"})
	a, err := Parse("c.yaml", []byte(spec), vars)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("c.yaml", []byte(lite), vars)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("spec's spelling\n%+v\nLiteLLM's\n%+v", a, b)
	}
}

func TestLiteLLMMessagesEndpointDefault(t *testing.T) {
	base := liteLLMEntry("      model: openai/m\n      api_base: http://h/v1\n      api_key: k\n")
	for _, tt := range []struct {
		config string
		want   bool
	}{
		{base, true},
		{base + "general_settings:\n  master_key: sk-1\n", true},
		{base + "general_settings:\n  enable_vendora_pass_through: false\n", false},
		{strings.Replace(base, "litellm_params", "proxy_params", 1), false}, // the spec's spelling: off unless set
	} {
		cfg, err := Parse("c.yaml", []byte(strings.Replace(tt.config, "openai/", "vendorb/", strings.Count(tt.config, "proxy_params"))), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.PassThrough != tt.want {
			t.Errorf("%q: messages endpoint %v, want %v", tt.config, cfg.PassThrough, tt.want)
		}
	}
}

func TestLiteLLMErrorsNameTheKeyAsWritten(t *testing.T) {
	for _, tt := range []struct {
		name, config string
		want         []string
	}{
		{"other provider", liteLLMEntry("      model: azure/gpt-4o\n      api_base: https://x/v1\n      api_key: k\n"),
			[]string{"c.yaml:4:", `model_list[0].litellm_params.model is "azure/gpt-4o"`, `"openai/<backend_model>"`, `"anthropic/<backend_model>"`}},
		{"no /v1", liteLLMEntry("      model: openai/m\n      api_base: http://h:8000\n      api_key: k\n"),
			[]string{"c.yaml:5:", "model_list[0].litellm_params.api_base", "must end in /v1", "http://h:8000/v1"}},
		{"missing key", liteLLMEntry("      model: openai/m\n      api_base: http://h/v1\n"),
			[]string{"model_list[0].litellm_params.api_key is missing"}},
		{"unset env", liteLLMEntry("      model: openai/m\n      api_base: http://h/v1\n      api_key: os.environ/NOPE\n"),
			[]string{"model_list[0].litellm_params.api_key reads environment variable NOPE"}},
		{"rpm", liteLLMEntry("      model: openai/m\n      api_base: http://h/v1\n      api_key: k\n      rpm: 6\n"),
			[]string{"c.yaml:7:", `unknown key "rpm" in model_list[0].litellm_params (rpm is a LiteLLM setting that Dragoman does not implement)`}},
		{"model_info", liteLLMEntry("      model: openai/m\n      api_base: http://h/v1\n      api_key: k\n") + "    model_info:\n      version: 2\n",
			[]string{`unknown key "model_info" in model_list[0] (model_info is a LiteLLM setting that Dragoman does not implement)`}},
		{"litellm_settings", liteLLMEntry("      model: openai/m\n      api_base: http://h/v1\n      api_key: k\n") + "litellm_settings:\n  drop_params: true\n",
			[]string{`unknown key "litellm_settings" in the top level (litellm_settings is a LiteLLM setting`}},
		{"router redis", liteLLMEntry("      model: openai/m\n      api_base: http://h/v1\n      api_key: k\n") + "router_settings:\n  redis_host: r\n",
			[]string{`unknown key "redis_host" in router_settings (redis_host is a LiteLLM setting`}},
		{"both spellings", "model_list:\n  - model_name: m\n    proxy_params:\n      model: vendorb/m\n    litellm_params:\n      model: openai/m\n",
			[]string{"c.yaml:2:", "model_list[0] has both proxy_params and litellm_params: keep one"}},
		{"name twice", "model_list:\n  - model_name: m\n    litellm_params: {model: openai/a, api_base: http://h/v1, api_key: k, name: x}\n" +
			"  - model_name: n\n    litellm_params: {model: openai/b, api_base: http://h/v1, api_key: k, name: x}\n",
			[]string{"model_list[1].litellm_params.name \"x\" already names"}},
		{"spec spelling keeps its words", "model_list:\n  - model_name: m\n    proxy_params:\n      model: azure/m\n      api_base: http://h/v1\n      api_key: k\n",
			[]string{`model_list[0].proxy_params.model is "azure/m"`, `"vendorb/<backend_model>"`}},
	} {
		_, err := Parse("c.yaml", []byte(tt.config), env(nil))
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, want := range tt.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, want)
			}
		}
		if tt.name != "spec spelling keeps its words" && strings.Contains(err.Error(), "proxy_params.") {
			t.Errorf("%s: error %q names proxy_params, the key the file did not write", tt.name, err)
		}
	}
}

// TestDocsLiteLLMBothSpellingsAreOneConfig: the two configs of
// docs/litellm.md load to the same Config.
func TestDocsLiteLLMBothSpellingsAreOneConfig(t *testing.T) {
	b, err := os.ReadFile("../../docs/litellm.md")
	if err != nil {
		t.Fatal(err)
	}
	vars := env(map[string]string{"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "LITELLM_MASTER_KEY": "m"})
	var cfgs []*Config
	for _, blk := range strings.Split(string(b), "```yaml\n")[1:] {
		y, _, _ := strings.Cut(blk, "```")
		cfg, err := Parse("docs/litellm.md", []byte(y), vars)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	if len(cfgs) != 2 {
		t.Fatalf("%d configs in docs/litellm.md, want the LiteLLM one and the spec's", len(cfgs))
	}
	if !reflect.DeepEqual(cfgs[0], cfgs[1]) {
		t.Errorf("LiteLLM's spelling\n%+v\nthe spec's\n%+v", cfgs[0], cfgs[1])
	}
	if r := cfgs[0].Routes[1]; r.Protocol != ProtocolMessages || !strings.HasSuffix(r.APIBase, "/v1") || !cfgs[0].PassThrough {
		t.Errorf("anthropic/ entry %+v, messages endpoint %v", r, cfgs[0].PassThrough)
	}
}
