package config

// LiteLLM's spellings of the same config: litellm_params for
// proxy_params, LiteLLM's provider prefixes for vendorb/ and vendora/,
// and the names of LiteLLM settings Dragoman does not implement, refused
// by name.

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The keys a model_list entry's parameters may be written under.
const (
	ParamsKey        = "proxy_params"   // the spec's
	LiteLLMParamsKey = "litellm_params" // LiteLLM's
)

// modelPrefix is a prefix of proxy_params.model: the protocol it selects,
// and whether an api_base without /v1 gets /v1 appended (LiteLLM writes
// the server's root for Ollama and Anthropic, and appends the path itself).
type modelPrefix struct {
	prefix   string
	protocol Protocol
	appendV1 bool
}

// ModelPrefixes are the prefixes proxy_params.model takes: the spec's
// first, then LiteLLM's for the same two protocols.
var modelPrefixes = []modelPrefix{
	{BackendPrefix, ProtocolChat, false},
	{NativePrefix, ProtocolMessages, false},
	{"openai/", ProtocolChat, false},
	{"hosted_vllm/", ProtocolChat, false},
	{"lm_studio/", ProtocolChat, false},
	{"llamafile/", ProtocolChat, false},
	// Ollama serves the Chat format at /v1/chat/completions beside its
	// own /api/chat and /api/generate, which LiteLLM's ollama_chat/ and
	// ollama/ call: Dragoman calls /v1 for both.
	{"ollama/", ProtocolChat, true},
	{"ollama_chat/", ProtocolChat, true},
	{"anthropic/", ProtocolMessages, true},
}

// cutModelPrefix finds the prefix of model.
func cutModelPrefix(model string) (modelPrefix, string, bool) {
	for _, p := range modelPrefixes {
		if name, ok := strings.CutPrefix(model, p.prefix); ok {
			return p, name, true
		}
	}
	return modelPrefix{}, "", false
}

// prefixFix is the error's advice for a model without a known prefix, in
// the spelling of the entry.
func prefixFix(paramsKey string) string {
	const spec = `write it as "vendorb/<backend_model>" (the backend speaks Chat Completions at {api_base}/chat/completions) or "vendora/<backend_model>" (it serves the Messages format itself at {api_base}/messages); the rest is the model name the backend serves`
	if paramsKey != LiteLLMParamsKey {
		return spec
	}
	return `write it as "openai/<backend_model>" (also hosted_vllm/, lm_studio/, llamafile/, ollama/, ollama_chat/: the backend speaks Chat Completions at {api_base}/chat/completions) or "anthropic/<backend_model>" (it serves the Messages format itself at {api_base}/messages); Dragoman serves no other LiteLLM provider`
}

// params finds an entry's parameters, under proxy_params or
// litellm_params (not both), and records which spelling the entry used.
func (p *parser) params(entry *yaml.Node, fields map[string]*yaml.Node, where string) (*yaml.Node, string, error) {
	_, spec := fields[ParamsKey]
	if v, ok := fields[LiteLLMParamsKey]; ok {
		if spec {
			return nil, "", p.errorf(entry, "%s has both %s and %s: keep one (%s is LiteLLM's name for %s)", where, ParamsKey, LiteLLMParamsKey, LiteLLMParamsKey, ParamsKey)
		}
		p.liteLLM = true
		p.paramsKeys = append(p.paramsKeys, LiteLLMParamsKey)
		if isNull(v) {
			return nil, "", p.errorf(entry, "%s.%s is missing: add it (model, api_base and api_key)", where, LiteLLMParamsKey)
		}
		return v, LiteLLMParamsKey, nil
	}
	p.paramsKeys = append(p.paramsKeys, ParamsKey)
	v, err := p.required(entry, fields, where, ParamsKey, "model, api_base and api_key")
	return v, ParamsKey, err
}

// paramsKey is the spelling model_list[i] used for its parameters.
func (p *parser) paramsKey(i int) string {
	if i < len(p.paramsKeys) {
		return p.paramsKeys[i]
	}
	return ParamsKey
}

// messagesEndpointDefault turns the messages endpoint on for a config
// written in LiteLLM's spelling, as LiteLLM serves /v1/messages without a
// switch, unless general_settings says otherwise.
func (p *parser) messagesEndpointDefault(general *yaml.Node, cfg *Config) {
	if !p.liteLLM {
		return
	}
	if general != nil && general.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(general.Content); i += 2 {
			if general.Content[i].Value == "enable_vendora_pass_through" {
				return
			}
		}
	}
	cfg.PassThrough = true
}

// liteLLMKeys are settings of LiteLLM's config.yaml that Dragoman does
// not implement: an unknown key among them is refused as LiteLLM's.
var liteLLMKeys = []string{
	// top level
	"litellm_settings", "environment_variables", "credential_list",
	// model_list entries
	"model_info",
	// litellm_params
	"rpm", "tpm", "api_version", "organization", "extra_headers", "headers", "temperature", "max_tokens",
	"seed", "top_p", "stop", "max_retries", "mock_response", "tags", "order", "litellm_credential_name",
	"aws_region_name", "aws_access_key_id", "aws_secret_access_key", "vertex_project", "vertex_location",
	"vertex_credentials", "azure_ad_token", "input_cost_per_token", "output_cost_per_token", "base_model",
	"merge_reasoning_content_in_choices", "use_in_pass_through", "configurable_clientside_auth_params",
	"region_name", "model_id", "use_litellm_proxy", "custom_llm_provider", "stream",
	// general_settings
	"alerting", "alerting_threshold", "store_model_in_db", "allowed_routes", "disable_spend_logs",
	"proxy_batch_write_at", "database_connection_pool_limit", "max_parallel_requests", "global_max_parallel_requests",
	"ui_access_mode", "allow_origins", "key_management_settings", "disable_master_key_return",
	// router_settings
	"redis_host", "redis_port", "redis_password", "redis_url", "model_group_alias", "timeout", "num_retries",
	"routing_strategy_args", "retry_policy", "allowed_fails_policy", "context_window_fallbacks",
	"content_policy_fallbacks", "enable_pre_call_checks", "default_litellm_params", "provider_budget_config",
}

// unknownKeyNote is what the unknown-key error adds for a LiteLLM setting.
func unknownKeyNote(key string) string {
	if slices.Contains(liteLLMKeys, key) {
		return fmt.Sprintf(" (%s is a LiteLLM setting that Dragoman does not implement)", key)
	}
	return ""
}
