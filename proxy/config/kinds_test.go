package config

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/kind"
)

const kindsBase = `model_list:
  - model_name: big
    proxy_params: {model: vendorb/big, api_base: 'http://gpu:8000/v1', api_key: k, supports_vision: false, vision_fallback: eyes}
  - model_name: small
    proxy_params: {model: vendorb/small, api_base: 'http://gpu:8001/v1', api_key: k}
  - model_name: eyes
    proxy_params: {model: vendorb/vl, api_base: 'http://gpu:8002/v1', api_key: k}
`

func TestRouterKindSettings(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(kindsBase+`router_settings:
  routes:
    - {kind: background, to: small}
    - {kind: subagent, to: small}
    - {kind: image, to: eyes}
  long_context_tokens: 50000
  background_models: [claude-haiku-*, "gpt-*-mini"]
`), allSet)
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.Router
	if strings.Join(rs.BackgroundModels, ",") != "claude-haiku-*,gpt-*-mini" || rs.LongContextTokens != 50000 {
		t.Errorf("settings %+v", rs)
	}
	want := []KindRoute{{kind.Background, "small"}, {kind.Subagent, "small"}, {kind.Image, "eyes"}}
	if len(rs.Routes) != len(want) {
		t.Fatalf("routes %+v, want %+v", rs.Routes, want)
	}
	for i := range want {
		if rs.Routes[i] != want[i] {
			t.Errorf("routes[%d] = %+v, want %+v", i, rs.Routes[i], want[i])
		}
	}
	if r := rs.KindRules(); !r.Content || r.LongContextTokens != 50000 {
		t.Errorf("rules %+v: an image route reads the body", r)
	}
	if r, _ := cfg.Lookup("big"); r.VisionFallback != "eyes" {
		t.Errorf("vision_fallback %q", r.VisionFallback)
	}
	plain, err := Parse("c.yaml", []byte(kindsBase), allSet)
	if err != nil {
		t.Fatal(err)
	}
	if r := plain.Router.KindRules(); r.Content || len(plain.Router.Routes) != 0 {
		t.Errorf("without routes: rules %+v, routes %v", r, plain.Router.Routes)
	}
}

func TestRouterKindSettingsErrors(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"router_settings:\n  routes:\n    - {kind: vision, to: eyes}\n", `c.yaml:10: router_settings.routes[0].kind is "vision": write one of main, subagent`},
		{"router_settings:\n  routes:\n    - {kind: image, to: nowhere}\n", `router_settings.routes[0].to: "nowhere" is not in model_list (configured: big, small, eyes)`},
		{"router_settings:\n  routes:\n    - {kind: image}\n", "router_settings.routes[0]: to is missing"},
		{"router_settings:\n  routes:\n    - {kind: image, to: eyes, via: x}\n", `via`},
		{"router_settings:\n  routes: {kind: image, to: eyes}\n", "router_settings.routes must be a list of {kind: <kind>, to: <model_name>}"},
		{"router_settings:\n  routes:\n    - {kind: long_context, to: big}\n", "kind long_context needs router_settings.long_context_tokens"},
		{"router_settings:\n  routes:\n    - {kind: background, to: small}\n", "kind background needs router_settings.background_models"},
		{"router_settings:\n  background_models: claude-haiku-*\n", "router_settings.background_models must be a list of model names or globs"},
		{"router_settings:\n  background_models: ['claude-[haiku']\n", `"claude-[haiku" is not a model name or glob`},
		{"router_settings:\n  long_context_tokens: 0\n", "long_context_tokens is 0: write a positive number"},
	} {
		_, err := Parse("c.yaml", []byte(kindsBase+c.extra), allSet)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want it to say %q", c.extra, err, c.want)
		}
	}
	for _, c := range []struct{ from, want string }{
		{"vision_fallback: big", `vision_fallback is "big", the entry's own model_name`},
		{"vision_fallback: nowhere", `vision_fallback: "nowhere" is not in model_list`},
		{"vision_fallback: small", ""},
	} {
		_, err := Parse("c.yaml", []byte(strings.Replace(kindsBase, "vision_fallback: eyes", c.from, 1)), allSet)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.from, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to say %q", c.from, err, c.want)
		}
	}
}

func TestVisionFallbackMustSpeakChat(t *testing.T) {
	_, err := Parse("c.yaml", []byte(strings.Replace(kindsBase, "model: vendorb/vl", "model: vendora/vl", 1)), allSet)
	if err == nil || !strings.Contains(err.Error(), `vision_fallback: "eyes" has a vendora/ backend`) {
		t.Errorf("err %v", err)
	}
}
