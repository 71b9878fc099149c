package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

const valid = `model_list:
  - model_name: claude-opus-5-5
    proxy_params:
      model: vendorb/qwen3-coder
      api_base: http://localhost:8000/v1/
      api_key: os.environ/BACKEND_KEY
      supports_system_message: false
      timeout: 300
      stream_timeout: 1.5
      max_output_tokens: 8192
      num_retries: 2
      context_window: 32768
      supports_vision: false
  - model_name: fast
    proxy_params:
      model: vendorb/qwen3-coder
      api_base: https://gpu.example/v1
      api_key: ${OTHER_KEY}
general_settings:
  enable_vendora_pass_through: true
  master_key: os.environ/PROXY_KEY
  max_request_bytes: 1048576
`

func env(vars map[string]string) Getenv {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

var allSet = env(map[string]string{"BACKEND_KEY": "sk-backend", "OTHER_KEY": "sk-other", "PROXY_KEY": "sk-proxy"})

func TestParseValid(t *testing.T) {
	cfg, err := Parse("config.yaml", []byte(valid), allSet)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.PassThrough || cfg.MasterKey != "sk-proxy" || cfg.MaxRequestBytes != 1<<20 {
		t.Errorf("general settings = %+v", cfg)
	}
	want := Route{
		Alias: "claude-opus-5-5", BackendModel: "qwen3-coder", APIBase: "http://localhost:8000/v1",
		APIKey: "sk-backend", SupportsSystemMessage: false, Timeout: 300 * time.Second,
		StreamTimeout: 1500 * time.Millisecond, MaxOutputTokens: 8192, NumRetries: 2,
		Weight: 1, Line: 2,
		ContextWindow: 32768, SupportsVision: false,
		TextCalls: textcall.All, // tool_calls_in_text: auto, the default
	}
	if got, _ := cfg.Lookup("claude-opus-5-5"); !reflect.DeepEqual(got, want) {
		t.Errorf("route 0 = %+v\nwant %+v", got, want)
	}
	fast, ok := cfg.Lookup("fast")
	if !ok || fast.APIKey != "sk-other" || !fast.SupportsSystemMessage || fast.Timeout != DefaultTimeout ||
		fast.StreamTimeout != DefaultStreamTimeout || fast.NumRetries != DefaultNumRetries || fast.MaxOutputTokens != 0 ||
		fast.ContextWindow != 0 || !fast.SupportsVision {
		t.Errorf("defaults not applied: %+v", fast)
	}
	if got := strings.Join(cfg.Aliases(), ","); got != "claude-opus-5-5,fast" {
		t.Errorf("aliases = %s", got)
	}
	if _, ok := cfg.Lookup("nope"); ok {
		t.Error("unknown alias found")
	}
}

func TestParseWithoutGeneralSettings(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("model_list:\n  - model_name: a\n    proxy_params: {model: vendorb/m, api_base: 'http://h/v1', api_key: k}\n"), allSet)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PassThrough || cfg.MasterKey != "" || cfg.MaxRequestBytes != DefaultMaxRequestBytes {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestParseErrors(t *testing.T) {
	entry := func(params string) string {
		return "model_list:\n  - model_name: a\n    proxy_params:\n" + params
	}
	good := "      model: vendorb/m\n      api_base: http://h/v1\n      api_key: k\n"
	cases := []struct {
		name string
		yaml string
		want []string // all must appear in the error
	}{
		{"empty file", "", []string{"c.yaml", "empty", "model_list"}},
		{"not yaml", "model_list: [", []string{"c.yaml", "not valid YAML"}},
		{"unknown top key", "model_list: []\nmodel_lsit: []\n", []string{"c.yaml:2:", `unknown key "model_lsit"`, "remove it or correct"}},
		{"unknown param key", entry(good + "      supports_sytem_message: false\n"), []string{"c.yaml:7:", `unknown key "supports_sytem_message"`, "proxy_params", "supports_system_message"}},
		{"unknown setting", entry(good) + "general_settings:\n  enable_pass_through: true\n", []string{"c.yaml:8:", `"enable_pass_through"`, "enable_vendora_pass_through"}},
		{"no model_list", "general_settings: {}\n", []string{"c.yaml:1:", "model_list is missing"}},
		{"empty model_list", "model_list: []\n", []string{"c.yaml:1:", "at least one entry"}},
		{"missing model_name", "model_list:\n  - proxy_params: {model: vendorb/m, api_base: 'http://h/v1', api_key: k}\n", []string{"c.yaml:2:", "model_list[0].model_name is missing", "add it"}},
		{"missing proxy_params", "model_list:\n  - model_name: a\n", []string{"c.yaml:2:", "proxy_params is missing"}},
		{"missing model", entry("      api_base: http://h/v1\n      api_key: k\n"), []string{"c.yaml:4:", "proxy_params.model is missing", "vendorb/<backend_model>"}},
		{"wrong prefix", entry("      model: azure/m\n      api_base: http://h/v1\n      api_key: k\n"), []string{"c.yaml:4:", `"azure/m"`, `"vendorb/<backend_model>"`}},
		{"prefix only", entry("      model: vendorb/\n      api_base: http://h/v1\n      api_key: k\n"), []string{"c.yaml:4:", "vendorb/<backend_model>"}},
		{"missing api_base", entry("      model: vendorb/m\n      api_key: k\n"), []string{"c.yaml:4:", "api_base is missing", "/v1"}},
		{"api_base not url", entry("      model: vendorb/m\n      api_base: localhost:8000\n      api_key: k\n"), []string{"c.yaml:5:", "api_base", "http(s) URL"}},
		{"api_base without /v1", entry("      model: vendorb/m\n      api_base: http://localhost:8000\n      api_key: k\n"), []string{"c.yaml:5:", `"http://localhost:8000"`, "must end in /v1", "http://localhost:8000/v1"}},
		{"general_settings a scalar", entry(good) + "general_settings: enable_vendora_pass_through\n", []string{"c.yaml:7:", `general_settings is "enable_vendora_pass_through"`, "enable_vendora_pass_through: true"}},
		{"api_base ftp", entry("      model: vendorb/m\n      api_base: ftp://h/v1\n      api_key: k\n"), []string{"c.yaml:5:", "http(s) URL"}},
		{"missing api_key", entry("      model: vendorb/m\n      api_base: http://h/v1\n"), []string{"c.yaml:4:", "api_key is missing"}},
		{"unset env key", entry("      model: vendorb/m\n      api_base: http://h/v1\n      api_key: os.environ/NOPE_KEY\n"), []string{"c.yaml:6:", "AuthenticationError", "NOPE_KEY", "not set", "export NOPE_KEY"}},
		{"unset braces key", entry("      model: vendorb/m\n      api_base: http://h/v1\n      api_key: ${NOPE2}\n"), []string{"c.yaml:6:", "NOPE2", "not set"}},
		{"unset master key", entry(good) + "general_settings:\n  master_key: os.environ/NO_MASTER\n", []string{"c.yaml:8:", "general_settings.master_key", "NO_MASTER"}},
		{"database_url mysql", entry(good) + "general_settings:\n  database_url: mysql://h/db\n", []string{"c.yaml:8:", "database_url must start with sqlite:// or postgres://"}},
		{"unset database_url", entry(good) + "general_settings:\n  database_url: os.environ/NO_DB\n", []string{"c.yaml:8:", "general_settings.database_url", "NO_DB", "not set"}},
		{"zero retention", entry(good) + "general_settings:\n  usage_retention_days: 0\n", []string{"c.yaml:8:", "usage_retention_days must be a positive number of days"}},
		{"same backend twice in a pool", entry(good) + "  - model_name: a\n    proxy_params: {model: vendorb/m, api_base: 'http://h/v1', api_key: k}\n", []string{"c.yaml:7:", `alias "a" already lists backend model "m"`, "line 2", "weight"}},
		{"zero weight", entry(good + "      weight: 0\n"), []string{"c.yaml:7:", "weight is 0", "positive"}},
		{"bad weight", entry(good + "      weight: heavy\n"), []string{"c.yaml:7:", "weight must be a positive number"}},
		{"zero slots", entry(good + "      max_parallel_requests: 0\n"), []string{"c.yaml:7:", "max_parallel_requests is 0", "at least 1"}},
		{"empty name", entry(good + "      name: ''\n"), []string{"c.yaml:7:", "name is", "label"}},
		{"one name two backends", entry(good+"      name: box\n") + "  - model_name: b\n    proxy_params: {model: vendorb/m, api_base: 'http://other/v1', api_key: k, name: box}\n", []string{"c.yaml:8:", `name "box" already names the backend http://h/v1`}},
		{"unknown router key", entry(good) + "router_settings:\n  routing_stratgy: least-busy\n", []string{"c.yaml:8:", `unknown key "routing_stratgy"`, "router_settings", "routing_strategy"}},
		{"bad strategy", entry(good) + "router_settings:\n  routing_strategy: round-robin\n", []string{"c.yaml:8:", `"round-robin"`, "session-affinity, least-busy, simple-shuffle"}},
		{"zero allowed_fails", entry(good) + "router_settings:\n  allowed_fails: 0\n", []string{"c.yaml:8:", "allowed_fails is 0"}},
		{"negative cooldown", entry(good) + "router_settings:\n  cooldown_time: -1\n", []string{"c.yaml:8:", "cooldown_time is -1", "positive"}},
		{"zero queue_timeout", entry(good) + "router_settings:\n  queue_timeout: 0\n", []string{"c.yaml:8:", "queue_timeout is 0"}},
		{"fallbacks not a list", entry(good) + "router_settings:\n  fallbacks: {a: [b]}\n", []string{"c.yaml:8:", "fallbacks must be a list"}},
		{"fallback unknown alias", entry(good) + "router_settings:\n  fallbacks:\n    - a: [nope]\n", []string{"c.yaml:9:", `alias "nope" is not in model_list`, "configured: a"}},
		{"fallback from unknown alias", entry(good) + "router_settings:\n  fallbacks:\n    - zz: [a]\n", []string{"c.yaml:9:", `alias "zz" is not in model_list`}},
		{"fallback to itself", entry(good) + "router_settings:\n  fallbacks:\n    - a: [a]\n", []string{"c.yaml:9:", "itself"}},
		{"bad timeout", entry(good + "      timeout: soon\n"), []string{"c.yaml:7:", "timeout must be a number of seconds"}},
		{"zero stream_timeout", entry(good + "      stream_timeout: 0\n"), []string{"c.yaml:7:", "stream_timeout must be a positive"}},
		{"bad bool", entry(good + "      supports_system_message: nope\n"), []string{"c.yaml:7:", "supports_system_message must be true or false"}},
		{"negative retries", entry(good + "      num_retries: -1\n"), []string{"c.yaml:7:", "num_retries is -1"}},
		{"zero max_output_tokens", entry(good + "      max_output_tokens: 0\n"), []string{"c.yaml:7:", "max_output_tokens is 0"}},
		{"zero context_window", entry(good + "      context_window: 0\n"), []string{"c.yaml:7:", "context_window is 0", "leave it out to discover it"}},
		{"bad supports_vision", entry(good + "      supports_vision: maybe\n"), []string{"c.yaml:7:", "supports_vision must be true or false"}},
		{"unknown server", entry(good + "      server: llamacpp\n"), []string{"c.yaml:7:", `server is "llamacpp"`, "one of vLLM, SGLang, llama.cpp, Ollama, LM Studio"}},
		{"duplicate key", entry(good + "      api_key: k2\n"), []string{"c.yaml:7:", `"api_key" appears twice`}},
		{"native prefix only", entry("      model: vendora/\n      api_base: http://h/v1\n      api_key: k\n"), []string{"c.yaml:4:", "vendora/<backend_model>", "{api_base}/messages"}},
		{"drop_params on vendorb", entry(good + "      drop_params: [betas]\n"), []string{"c.yaml:7:", "drop_params applies to vendora/ backends only"}},
		{"drop_params not a list", entry("      model: vendora/m\n      api_base: http://h/v1\n      api_key: k\n      drop_params: betas\n"), []string{"c.yaml:7:", "drop_params must be a list"}},
		{"drop_params model", entry("      model: vendora/m\n      api_base: http://h/v1\n      api_key: k\n      drop_params: [betas, model]\n"), []string{"c.yaml:7:", "drop_params[1] is \"model\""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml), env(nil))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

const poolYAML = `model_list:
  - model_name: coder
    proxy_params: {model: vendorb/qwen3-coder, api_base: 'http://gpu1:8000/v1', api_key: k, name: gpu1, weight: 2, max_parallel_requests: 4}
  - model_name: coder
    proxy_params: {model: vendorb/Qwen/Qwen3-Coder, api_base: 'http://gpu2:8000/v1', api_key: k2, supports_system_message: false}
  - model_name: small
    proxy_params: {model: vendorb/qwen3-4b, api_base: 'http://laptop:8080/v1', api_key: k}
router_settings:
  routing_strategy: least-busy
  allowed_fails: 2
  cooldown_time: 5
  health_check_interval: 0
  queue_timeout: 1.5
  fallbacks:
    - coder: [small]
`

func TestParsePool(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(poolYAML), allSet)
	if err != nil {
		t.Fatal(err)
	}
	pool := cfg.Pool("coder")
	if len(pool) != 2 {
		t.Fatalf("pool coder has %d routes, want 2", len(pool))
	}
	if p := pool[0]; p.Name != "gpu1" || p.Weight != 2 || p.MaxParallelRequests != 4 || p.Line != 2 {
		t.Errorf("first member = %+v", p)
	}
	if p := pool[1]; p.Name != "" || p.Weight != 1 || p.MaxParallelRequests != 0 || p.SupportsSystemMessage || p.BackendModel != "Qwen/Qwen3-Coder" || p.APIKey != "k2" {
		t.Errorf("second member = %+v", p)
	}
	if got := strings.Join(cfg.Aliases(), ","); got != "coder,small" {
		t.Errorf("aliases = %s, want each once", got)
	}
	want := RouterSettings{RoutingStrategy: "least-busy", AllowedFails: 2, CooldownTime: 5 * time.Second,
		QueueTimeout: 1500 * time.Millisecond, Fallbacks: []Fallback{{Alias: "coder", To: []string{"small"}}}}
	got := cfg.Router
	if got.RoutingStrategy != want.RoutingStrategy || got.AllowedFails != want.AllowedFails || got.CooldownTime != want.CooldownTime ||
		got.HealthCheckInterval != 0 || got.QueueTimeout != want.QueueTimeout || len(got.Fallbacks) != 1 || strings.Join(cfg.FallbacksOf("coder"), ",") != "small" {
		t.Errorf("router settings = %+v\nwant %+v", got, want)
	}
	if cfg.FallbacksOf("small") != nil {
		t.Error("small has no fallbacks")
	}
}

func TestRouterDefaults(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("model_list:\n  - model_name: a\n    proxy_params: {model: vendorb/m, api_base: 'http://h/v1', api_key: k}\n"), allSet)
	if err != nil {
		t.Fatal(err)
	}
	want := RouterSettings{RoutingStrategy: "session-affinity", AllowedFails: 3, CooldownTime: 30 * time.Second, HealthCheckInterval: 10 * time.Second, QueueTimeout: 60 * time.Second}
	if got := cfg.Router; got.RoutingStrategy != want.RoutingStrategy || got.AllowedFails != want.AllowedFails || got.CooldownTime != want.CooldownTime ||
		got.HealthCheckInterval != want.HealthCheckInterval || got.QueueTimeout != want.QueueTimeout || got.Fallbacks != nil {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(t.TempDir()+"/none.yaml", allSet)
	if err == nil || !strings.Contains(err.Error(), "--config") {
		t.Fatalf("err = %v", err)
	}
}

// An empty general_settings (nothing under the key) is no settings, not
// an error; a trailing slash after /v1 is accepted.
func TestEmptySettingsAndTrailingSlash(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte("model_list:\n  - model_name: a\n    proxy_params:\n      model: vendorb/m\n      api_base: http://h/v1/\n      api_key: k\ngeneral_settings:\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PassThrough || cfg.Routes[0].APIBase != "http://h/v1" {
		t.Fatalf("pass-through %v, api_base %q", cfg.PassThrough, cfg.Routes[0].APIBase)
	}
}

func TestParseNative(t *testing.T) {
	cfg, err := Parse("c.yaml", []byte(`model_list:
  - model_name: native
    proxy_params: {model: vendora/qwen3, api_base: 'http://h/v1', api_key: k}
  - model_name: native-keep-all
    proxy_params: {model: vendora/qwen3, api_base: 'http://h/v1', api_key: k, drop_params: []}
  - model_name: native-some
    proxy_params: {model: vendora/qwen3, api_base: 'http://h/v1', api_key: k, drop_params: [betas, speed]}
  - model_name: chat
    proxy_params: {model: vendorb/qwen3, api_base: 'http://h/v1', api_key: k}
`), allSet)
	if err != nil {
		t.Fatal(err)
	}
	for alias, want := range map[string]struct {
		proto Protocol
		drop  []string
	}{
		"native":          {ProtocolMessages, DefaultDropParams},
		"native-keep-all": {ProtocolMessages, []string{}},
		"native-some":     {ProtocolMessages, []string{"betas", "speed"}},
		"chat":            {ProtocolChat, nil},
	} {
		r, _ := cfg.Lookup(alias)
		if r.Protocol != want.proto || r.BackendModel != "qwen3" || !reflect.DeepEqual(r.DropParams, want.drop) {
			t.Errorf("%s: protocol %v, model %q, drop_params %q; want %v, qwen3, %q", alias, r.Protocol, r.BackendModel, r.DropParams, want.proto, want.drop)
		}
	}
}

func TestDatabaseSettings(t *testing.T) {
	env := func(name string) (string, bool) {
		if name == "DATABASE_URL" {
			return "postgres://u:p@db:5432/dragoman", true
		}
		return "", false
	}
	cfg, err := Parse("c.yaml", []byte("model_list:\n  - model_name: a\n    proxy_params: {model: vendorb/m, api_base: 'http://h/v1', api_key: k}\ngeneral_settings:\n  database_url: os.environ/DATABASE_URL\n  usage_retention_days: 30\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != "postgres://u:p@db:5432/dragoman" || cfg.UsageRetentionDays != 30 {
		t.Fatalf("%q %d", cfg.DatabaseURL, cfg.UsageRetentionDays)
	}
}
