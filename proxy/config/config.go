// Package config loads and validates the proxy's YAML configuration: the
// model_list that routes each alias to a backend model (several entries
// with one model_name form a pool of backends), general_settings and
// router_settings. Validation happens once, at start-up, and every error
// names the file, the line, the key and how to fix it.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dragoman-dev/dragoman/proxy/kind"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// Defaults for optional settings.
const (
	DefaultTimeout         = 300 * time.Second
	DefaultStreamTimeout   = 300 * time.Second
	DefaultNumRetries      = 3
	DefaultMaxRequestBytes = 32 << 20 // the Messages API's own limit
	BackendPrefix          = "vendorb/"
	NativePrefix           = "vendora/"

	DefaultRoutingStrategy     = "session-affinity"
	DefaultAllowedFails        = 3
	DefaultCooldownTime        = 30 * time.Second
	DefaultHealthCheckInterval = 10 * time.Second
	DefaultQueueTimeout        = 60 * time.Second
	DefaultLoadPollInterval    = time.Second
)

// RoutingStrategies are the values router_settings.routing_strategy takes.
var RoutingStrategies = []string{"session-affinity", "least-busy", "simple-shuffle"}

// Protocol is the wire format a backend speaks, chosen by the prefix of
// proxy_params.model.
type Protocol int

const (
	// ProtocolChat: "vendorb/<model>", Chat Completions at
	// {api_base}/chat/completions.
	ProtocolChat Protocol = iota
	// ProtocolMessages: "vendora/<model>", the Messages format at
	// {api_base}/messages (and {api_base}/messages/count_tokens).
	ProtocolMessages
)

func (p Protocol) String() string {
	if p == ProtocolMessages {
		return "messages"
	}
	return "chat"
}

// DefaultDropParams are the top-level members of a Messages request that a
// vendora/ backend does not receive unless proxy_params.drop_params says
// otherwise: newer fields that some local servers refuse with a 400.
var DefaultDropParams = []string{"context_management", "betas", "cache_control"}

// Config is a validated configuration with every key reference resolved.
type Config struct {
	Path        string
	Routes      []Route
	PassThrough bool   // general_settings.enable_vendora_pass_through
	MasterKey   string // general_settings.master_key, resolved; may be empty
	// CompactionKeys are general_settings.compaction_key, resolved (one
	// secret, or a list: the first seals remote-compaction summaries, all
	// open them); none: the summaries are sealed with a key derived from
	// the master key (package compaction).
	CompactionKeys []string
	// DatabaseURL is general_settings.database_url, resolved: the store of
	// per-user keys and usage (package keys); empty: the master key only.
	DatabaseURL string
	// UsageRetentionDays is general_settings.usage_retention_days: how
	// long usage records are kept (0: package keys' default, 90).
	UsageRetentionDays int
	MaxRequestBytes    int64
	Router             RouterSettings
	Search             *SearchSettings // search_settings; nil: web search off
}

// RouterSettings is the top-level router_settings: how a request picks a
// backend of a pool, and when a backend is taken out and brought back.
type RouterSettings struct {
	RoutingStrategy     string        // one of RoutingStrategies
	AllowedFails        int           // consecutive failures before a backend cools
	CooldownTime        time.Duration // how long a failed backend stays out without a successful probe
	HealthCheckInterval time.Duration // how often a backend that is out is probed at {api_base}/models; 0: never
	QueueTimeout        time.Duration // how long a request may wait for a free slot
	Fallbacks           []Fallback    // in file order
	// BackgroundModels are the names or globs (path.Match) of the models
	// a client asks for that make a request background (the client's
	// small/fast model: claude-haiku-*).
	BackgroundModels []string
	// LongContextTokens: a prompt estimated above it is long_context; 0:
	// none is.
	LongContextTokens int
	// Routes send a request of a kind to another pool; the first that
	// matches wins. None: every request goes to the pool it names.
	Routes []KindRoute
	// LoadPollInterval is how often each backend's own load is read from
	// its /metrics (or llama.cpp's /slots); 0: never, the proxy's own count
	// of requests in flight only.
	LoadPollInterval time.Duration
}

// KindRoute is one of router_settings.routes: requests of Kind go to the
// pool To.
type KindRoute struct {
	Kind kind.Kind
	To   string
}

// KindRules are the router settings package kind classifies by. Content
// is on when a route needs what is inside a body.
func (rs RouterSettings) KindRules() kind.Rules {
	r := kind.Rules{BackgroundModels: rs.BackgroundModels, LongContextTokens: rs.LongContextTokens}
	for _, kr := range rs.Routes {
		switch kr.Kind {
		case kind.LongContext, kind.Image, kind.Thinking, kind.WebSearch:
			r.Content = true
		}
	}
	return r
}

// Fallback names the pools that serve an alias whose own pool has no
// backend that can take a request, in order of preference.
type Fallback struct {
	Alias string
	To    []string
}

// Route is one model_list entry: an alias and the backend model it reaches.
type Route struct {
	Alias                   string
	BackendModel            string   // proxy_params.model without its prefix
	Protocol                Protocol // from the prefix of proxy_params.model
	DropParams              []string // vendora/: top-level request members removed before forwarding
	APIBase                 string   // without a trailing slash
	APIKey                  string
	SupportsSystemMessage   bool
	SupportsReasoningEffort bool
	Timeout                 time.Duration
	StreamTimeout           time.Duration
	MaxOutputTokens         int
	NumRetries              int
	Name                    string  // proxy_params.name: a stable label for the backend; may be empty
	Weight                  float64 // proxy_params.weight, default 1
	MaxParallelRequests     int     // proxy_params.max_parallel_requests; 0: no limit
	Line                    int     // the line of the model_list entry
	// ContextWindow is proxy_params.context_window: the backend model's
	// context window in tokens, overriding discovery; 0 when not set.
	ContextWindow int
	// SupportsVision is proxy_params.supports_vision (default true): when
	// false, images become a short text placeholder.
	SupportsVision bool
	// Server is proxy_params.server: which server the backend is (one of
	// Servers), overriding discovery; "" when not set.
	Server string
	// VisionFallback is proxy_params.vision_fallback: the alias that
	// describes each image for this backend when it cannot read images
	// (configured or discovered); "" for the placeholder.
	VisionFallback string
	// TextCalls is proxy_params.tool_calls_in_text: the families of tool
	// calls written as text that the proxy recovers (default: all); 0 for
	// off. TextReasoning is proxy_params.reasoning_in_text. See
	// textcalls.go.
	TextCalls     textcall.Set
	TextReasoning textcall.Reasoning
}

// Servers are the values proxy_params.server takes, as discovery names
// the servers.
var Servers = []string{"vLLM", "SGLang", "llama.cpp", "Ollama", "LM Studio"}

// Pool returns the routes of an alias in file order: one for a single
// backend, several for a pool; none for an unknown alias.
func (c *Config) Pool(alias string) []Route {
	var out []Route
	for _, r := range c.Routes {
		if r.Alias == alias {
			out = append(out, r)
		}
	}
	return out
}

// Lookup finds the first route of an alias.
func (c *Config) Lookup(alias string) (Route, bool) {
	for _, r := range c.Routes {
		if r.Alias == alias {
			return r, true
		}
	}
	return Route{}, false
}

// Aliases lists the configured aliases in file order, each once.
func (c *Config) Aliases() []string {
	out := make([]string, 0, len(c.Routes))
	for _, r := range c.Routes {
		if !slices.Contains(out, r.Alias) {
			out = append(out, r.Alias)
		}
	}
	return out
}

// Getenv looks up an environment variable; os.LookupEnv in production.
type Getenv func(name string) (string, bool)

// Load reads, validates and resolves the configuration file at path.
func Load(path string, getenv Getenv) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("config file %s not found: pass its path with --config (see deploy/config.yaml for an example)", path)
		}
		return nil, fmt.Errorf("reading config file: %w", err)
	}
	return Parse(path, data, getenv)
}

// Parse validates and resolves configuration data; path is used in errors.
func Parse(path string, data []byte, getenv Getenv) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	p := parser{path: path, getenv: getenv}
	return p.file(&root)
}

type parser struct {
	path   string
	getenv Getenv
	// liteLLM: an entry wrote litellm_params; paramsKeys: each entry's
	// spelling (litellm.go).
	liteLLM    bool
	paramsKeys []string
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.path, n.Line, fmt.Sprintf(format, args...))
}

var (
	fileKeys     = []string{"model_list", "general_settings", "router_settings", "search_settings"}
	entryKeys    = []string{"model_name", ParamsKey, LiteLLMParamsKey}
	paramsKeys   = []string{"model", "api_base", "api_key", "supports_system_message", "supports_reasoning_effort", "timeout", "stream_timeout", "max_output_tokens", "num_retries", "name", "weight", "max_parallel_requests", "context_window", "supports_vision", "drop_params", "server", "vision_fallback", textCallsKeys[0], textCallsKeys[1]}
	settingsKeys = []string{"enable_vendora_pass_through", "master_key", "max_request_bytes", "database_url", "usage_retention_days", "compaction_key"}
	routerKeys   = []string{"routing_strategy", "allowed_fails", "cooldown_time", "health_check_interval", "queue_timeout", "load_poll_interval", "fallbacks", "background_models", "long_context_tokens", "routes"}
)

func (p *parser) file(root *yaml.Node) (*Config, error) {
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty: it needs a model_list (see deploy/config.yaml for an example)", p.path)
	}
	doc := root.Content[0]
	fields, err := p.mapping(doc, "the top level", fileKeys)
	if err != nil {
		return nil, err
	}
	cfg := &Config{Path: p.path, MaxRequestBytes: DefaultMaxRequestBytes, Router: RouterSettings{
		RoutingStrategy:     DefaultRoutingStrategy,
		AllowedFails:        DefaultAllowedFails,
		CooldownTime:        DefaultCooldownTime,
		HealthCheckInterval: DefaultHealthCheckInterval,
		QueueTimeout:        DefaultQueueTimeout,
		LoadPollInterval:    DefaultLoadPollInterval,
	}}
	list, ok := fields["model_list"]
	if !ok {
		return nil, p.errorf(doc, "model_list is missing: add at least one entry with model_name and proxy_params (or LiteLLM's litellm_params)")
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil, p.errorf(list, "model_list must be a list with at least one entry of model_name and proxy_params")
	}
	seen := map[string]int{} // alias, api_base and backend model → line
	for i, entry := range list.Content {
		r, err := p.route(entry, fmt.Sprintf("model_list[%d]", i))
		if err != nil {
			return nil, err
		}
		// Entries with one model_name form a pool; the same backend
		// twice in one pool is a mistake (it would count double).
		key := r.Alias + "\x00" + r.APIBase + "\x00" + r.BackendModel
		if line, dup := seen[key]; dup {
			return nil, p.errorf(entry, "model_list[%d]: alias %q already lists backend model %q at %s (line %d): a pool lists each backend once; to send it more traffic, raise %s.weight", i, r.Alias, r.BackendModel, r.APIBase, line, p.paramsKey(i))
		}
		seen[key] = entry.Line
		cfg.Routes = append(cfg.Routes, r)
	}
	if err := p.names(list, cfg.Routes); err != nil {
		return nil, err
	}
	if gs, ok := fields["general_settings"]; ok && !isNull(gs) {
		if err := p.settings(gs, cfg); err != nil {
			return nil, err
		}
	}
	p.messagesEndpointDefault(fields["general_settings"], cfg)
	if rs, ok := fields["router_settings"]; ok && !isNull(rs) {
		if err := p.router(rs, cfg); err != nil {
			return nil, err
		}
	}
	if ss, ok := fields["search_settings"]; ok && !isNull(ss) {
		if err := p.search(ss, cfg); err != nil {
			return nil, err
		}
	}
	if err := p.visionFallbacks(list, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// visionFallbacks checks that each proxy_params.vision_fallback names a
// pool other than its own.
func (p *parser) visionFallbacks(list *yaml.Node, cfg *Config) error {
	aliases := cfg.Aliases()
	for i, r := range cfg.Routes {
		switch {
		case r.VisionFallback == "":
		case r.VisionFallback == r.Alias:
			return p.errorf(list.Content[i], "model_list[%d].%s.vision_fallback is %q, the entry's own model_name: name another model_name, one that reads images", i, p.paramsKey(i), r.VisionFallback)
		case !slices.Contains(aliases, r.VisionFallback):
			return p.errorf(list.Content[i], "model_list[%d].%s.vision_fallback: %q is not in model_list (configured: %s): correct it or add a model_list entry with model_name: %s for a model that reads images", i, p.paramsKey(i), r.VisionFallback, strings.Join(aliases, ", "), r.VisionFallback)
		case slices.ContainsFunc(cfg.Pool(r.VisionFallback), func(f Route) bool { return f.Protocol != ProtocolChat }):
			return p.errorf(list.Content[i], "model_list[%d].%s.vision_fallback: %q has a vendora/ backend; the descriptions are asked in the Chat format: name a model_name whose backends are vendorb/", i, p.paramsKey(i), r.VisionFallback)
		}
	}
	return nil
}

// isNull reports whether n is an empty value (general_settings: with
// nothing under it).
func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// names checks that a proxy_params.name labels one backend: entries that
// share a name share api_base and backend model.
func (p *parser) names(list *yaml.Node, routes []Route) error {
	first := map[string]int{}
	for i, r := range routes {
		if r.Name == "" {
			continue
		}
		j, ok := first[r.Name]
		if !ok {
			first[r.Name] = i
			continue
		}
		if o := routes[j]; o.APIBase != r.APIBase || o.BackendModel != r.BackendModel {
			return p.errorf(list.Content[i], "model_list[%d].%s.name %q already names the backend %s (model %s) at line %d: give each backend its own name", i, p.paramsKey(i), r.Name, o.APIBase, o.BackendModel, o.Line)
		}
	}
	return nil
}

func (p *parser) router(n *yaml.Node, cfg *Config) error {
	fields, err := p.mapping(n, "router_settings", routerKeys)
	if err != nil {
		return err
	}
	rs := &cfg.Router
	if v, ok := fields["routing_strategy"]; ok {
		if err := p.decode(v, "router_settings.routing_strategy", "a string", &rs.RoutingStrategy); err != nil {
			return err
		}
		if !slices.Contains(RoutingStrategies, rs.RoutingStrategy) {
			return p.errorf(v, "router_settings.routing_strategy is %q: write one of %s (default %s)", rs.RoutingStrategy, strings.Join(RoutingStrategies, ", "), DefaultRoutingStrategy)
		}
	}
	if v, ok := fields["allowed_fails"]; ok {
		if err := p.decode(v, "router_settings.allowed_fails", "a whole number of consecutive failures", &rs.AllowedFails); err != nil {
			return err
		}
		if rs.AllowedFails < 1 {
			return p.errorf(v, "router_settings.allowed_fails is %d: write at least 1 (default %d consecutive failures take a backend out)", rs.AllowedFails, DefaultAllowedFails)
		}
	}
	for _, d := range []struct {
		key       string
		dst       *time.Duration
		def       time.Duration
		zeroMeans string
	}{
		{"cooldown_time", &rs.CooldownTime, DefaultCooldownTime, ""},
		{"health_check_interval", &rs.HealthCheckInterval, DefaultHealthCheckInterval, "0 turns the probe off"},
		{"queue_timeout", &rs.QueueTimeout, DefaultQueueTimeout, ""},
		{"load_poll_interval", &rs.LoadPollInterval, DefaultLoadPollInterval, "0 turns the reading of the servers' load off"},
	} {
		v, ok := fields[d.key]
		if !ok {
			continue
		}
		var seconds float64
		if err := p.decode(v, "router_settings."+d.key, "a number of seconds", &seconds); err != nil {
			return err
		}
		if seconds < 0 || (seconds == 0 && d.zeroMeans == "") {
			hint := "a positive number of seconds"
			if d.zeroMeans != "" {
				hint = "a number of seconds (" + d.zeroMeans + ")"
			}
			return p.errorf(v, "router_settings.%s is %v: write %s, default %v", d.key, v.Value, hint, d.def.Seconds())
		}
		*d.dst = time.Duration(seconds * float64(time.Second))
	}
	if v, ok := fields["fallbacks"]; ok {
		if err := p.fallbacks(v, cfg); err != nil {
			return err
		}
	}
	if v, ok := fields["background_models"]; ok {
		const want = "a list of model names or globs, e.g. [claude-haiku-*]"
		if v.Kind != yaml.SequenceNode {
			return p.errorf(v, "router_settings.background_models must be %s", want)
		}
		for _, e := range v.Content {
			var g string
			if err := p.decode(e, "router_settings.background_models", want, &g); err != nil {
				return err
			}
			if _, err := path.Match(g, ""); err != nil || g == "" {
				return p.errorf(e, "router_settings.background_models: %q is not a model name or glob: write names such as claude-haiku-4-5, or globs with * and ? such as claude-haiku-*", g)
			}
			rs.BackgroundModels = append(rs.BackgroundModels, g)
		}
	}
	if v, ok := fields["long_context_tokens"]; ok {
		if err := p.decode(v, "router_settings.long_context_tokens", "a number of tokens", &rs.LongContextTokens); err != nil {
			return err
		}
		if rs.LongContextTokens < 1 {
			return p.errorf(v, "router_settings.long_context_tokens is %d: write a positive number of tokens (a prompt estimated above it is long_context), or leave it out", rs.LongContextTokens)
		}
	}
	if v, ok := fields["routes"]; ok {
		if err := p.kindRoutes(v, cfg); err != nil {
			return err
		}
	}
	return nil
}

// kindRoutes reads router_settings.routes: a list of {kind, to}.
func (p *parser) kindRoutes(n *yaml.Node, cfg *Config) error {
	const shape = "a list of {kind: <kind>, to: <model_name>}, e.g.\n  routes:\n    - {kind: background, to: small}"
	if n.Kind != yaml.SequenceNode {
		return p.errorf(n, "router_settings.routes must be %s", shape)
	}
	aliases := cfg.Aliases()
	rs := &cfg.Router
	for i, item := range n.Content {
		where := fmt.Sprintf("router_settings.routes[%d]", i)
		fields, err := p.mapping(item, where, []string{"kind", "to"})
		if err != nil {
			return err
		}
		var name, to string
		kv, ok := fields["kind"]
		if !ok {
			return p.errorf(item, "%s: kind is missing: write one of %s", where, strings.Join(kind.Names(), ", "))
		}
		if err := p.decode(kv, where+".kind", "a kind", &name); err != nil {
			return err
		}
		k, ok := kind.Parse(name)
		if !ok {
			return p.errorf(kv, "%s.kind is %q: write one of %s", where, name, strings.Join(kind.Names(), ", "))
		}
		tv, ok := fields["to"]
		if !ok {
			return p.errorf(item, "%s: to is missing: write the model_name that serves %s requests", where, name)
		}
		if err := p.decode(tv, where+".to", "a model_name", &to); err != nil {
			return err
		}
		if !slices.Contains(aliases, to) {
			return p.errorf(tv, "%s.to: %q is not in model_list (configured: %s): correct it or add a model_list entry with model_name: %s", where, to, strings.Join(aliases, ", "), to)
		}
		switch {
		case k == kind.LongContext && rs.LongContextTokens == 0:
			return p.errorf(kv, "%s: kind long_context needs router_settings.long_context_tokens, the estimated prompt size above which a request is long_context", where)
		case k == kind.Background && len(rs.BackgroundModels) == 0:
			return p.errorf(kv, "%s: kind background needs router_settings.background_models, the client's small/fast models (e.g. [claude-haiku-*])", where)
		}
		rs.Routes = append(rs.Routes, KindRoute{Kind: k, To: to})
	}
	return nil
}

// fallbacks reads a list of {alias: [other aliases]}, each alias
// configured in model_list.
func (p *parser) fallbacks(n *yaml.Node, cfg *Config) error {
	const shape = "a list of {alias: [other aliases]}, e.g.\n  fallbacks:\n    - qwen-coder: [qwen-small]"
	if n.Kind != yaml.SequenceNode {
		return p.errorf(n, "router_settings.fallbacks must be %s", shape)
	}
	aliases := cfg.Aliases()
	known := func(v *yaml.Node, alias, where string) error {
		if !slices.Contains(aliases, alias) {
			return p.errorf(v, "%s: alias %q is not in model_list (configured: %s): correct it or add a model_list entry with model_name: %s", where, alias, strings.Join(aliases, ", "), alias)
		}
		return nil
	}
	for i, item := range n.Content {
		where := fmt.Sprintf("router_settings.fallbacks[%d]", i)
		if item.Kind != yaml.MappingNode || len(item.Content) != 2 {
			return p.errorf(item, "%s must be one alias mapped to a list of aliases: router_settings.fallbacks is %s", where, shape)
		}
		k, list := item.Content[0], item.Content[1]
		fb := Fallback{Alias: k.Value}
		if err := known(k, fb.Alias, where); err != nil {
			return err
		}
		if slices.ContainsFunc(cfg.Router.Fallbacks, func(f Fallback) bool { return f.Alias == fb.Alias }) {
			return p.errorf(k, "%s: alias %q already has fallbacks: list them all in one entry", where, fb.Alias)
		}
		if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
			return p.errorf(list, "%s.%s must be a non-empty list of aliases", where, fb.Alias)
		}
		for _, v := range list.Content {
			var to string
			if err := p.decode(v, where+"."+fb.Alias, "a list of aliases", &to); err != nil {
				return err
			}
			if err := known(v, to, where+"."+fb.Alias); err != nil {
				return err
			}
			if to == fb.Alias {
				return p.errorf(v, "%s: alias %q cannot fall back to itself", where, to)
			}
			fb.To = append(fb.To, to)
		}
		cfg.Router.Fallbacks = append(cfg.Router.Fallbacks, fb)
	}
	return nil
}

// FallbacksOf returns the aliases that serve alias when its pool cannot.
func (c *Config) FallbacksOf(alias string) []string {
	for _, f := range c.Router.Fallbacks {
		if f.Alias == alias {
			return f.To
		}
	}
	return nil
}

func (p *parser) settings(n *yaml.Node, cfg *Config) error {
	if n.Kind == yaml.ScalarNode {
		// general_settings: enable_vendora_pass_through reads as a string,
		// and used to be ignored: the endpoint stayed off without a word.
		return p.errorf(n, "general_settings is %q, a single value: it must hold keys with their values, indented under it (known keys: %s), e.g.\n  general_settings:\n    enable_vendora_pass_through: true", n.Value, strings.Join(settingsKeys, ", "))
	}
	fields, err := p.mapping(n, "general_settings", settingsKeys)
	if err != nil {
		return err
	}
	if v, ok := fields["enable_vendora_pass_through"]; ok {
		if err := p.decode(v, "general_settings.enable_vendora_pass_through", "true or false", &cfg.PassThrough); err != nil {
			return err
		}
	}
	if v, ok := fields["master_key"]; ok {
		key, err := p.secret(v, "general_settings.master_key")
		if err != nil {
			return err
		}
		cfg.MasterKey = key
	}
	if v, ok := fields["compaction_key"]; ok {
		keys, err := p.compactionKeys(v)
		if err != nil {
			return err
		}
		cfg.CompactionKeys = keys
	}
	if v, ok := fields["database_url"]; ok {
		url, err := p.secret(v, "general_settings.database_url")
		if err != nil {
			return err
		}
		if url != "" && !strings.HasPrefix(url, "sqlite://") && !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
			return p.errorf(v, "general_settings.database_url must start with sqlite:// or postgres://, e.g. sqlite:///data/dragoman.db or os.environ/DATABASE_URL")
		}
		cfg.DatabaseURL = url
	}
	if v, ok := fields["usage_retention_days"]; ok {
		if err := p.decode(v, "general_settings.usage_retention_days", "a number of days", &cfg.UsageRetentionDays); err != nil {
			return err
		}
		if cfg.UsageRetentionDays <= 0 {
			return p.errorf(v, "general_settings.usage_retention_days must be a positive number of days (default 90)")
		}
	}
	if v, ok := fields["max_request_bytes"]; ok {
		if err := p.decode(v, "general_settings.max_request_bytes", "a number of bytes", &cfg.MaxRequestBytes); err != nil {
			return err
		}
		if cfg.MaxRequestBytes <= 0 {
			return p.errorf(v, "general_settings.max_request_bytes must be positive (default %d)", DefaultMaxRequestBytes)
		}
	}
	return nil
}

func (p *parser) route(entry *yaml.Node, where string) (Route, error) {
	fields, err := p.mapping(entry, where, entryKeys)
	if err != nil {
		return Route{}, err
	}
	r := Route{
		Line:                  entry.Line,
		Weight:                1,
		SupportsSystemMessage: true,
		SupportsVision:        true,
		Timeout:               DefaultTimeout,
		StreamTimeout:         DefaultStreamTimeout,
		NumRetries:            DefaultNumRetries,
		TextCalls:             textcall.All,
	}
	name, err := p.required(entry, fields, where, "model_name", "the alias clients send in \"model\"")
	if err != nil {
		return Route{}, err
	}
	if err := p.decode(name, where+".model_name", "a string", &r.Alias); err != nil {
		return Route{}, err
	}
	if r.Alias == "" {
		return Route{}, p.errorf(name, "%s.model_name is empty: write the alias clients send in \"model\"", where)
	}
	paramsNode, spelling, err := p.params(entry, fields, where)
	if err != nil {
		return Route{}, err
	}
	where += "." + spelling
	params, err := p.mapping(paramsNode, where, paramsKeys)
	if err != nil {
		return Route{}, err
	}
	prefix, err := p.backendModel(paramsNode, params, where, spelling, &r)
	if err != nil {
		return Route{}, err
	}
	if err := p.apiBase(paramsNode, params, where, prefix.appendV1, &r); err != nil {
		return Route{}, err
	}
	keyNode, err := p.required(paramsNode, params, where, "api_key", "the backend's key, a literal or os.environ/NAME (any value for a backend that needs none)")
	if err != nil {
		return Route{}, err
	}
	if r.APIKey, err = p.secret(keyNode, where+".api_key"); err != nil {
		return Route{}, err
	}
	return r, p.optionalParams(params, where, &r)
}

func (p *parser) backendModel(n *yaml.Node, params map[string]*yaml.Node, where, spelling string, r *Route) (modelPrefix, error) {
	v, err := p.required(n, params, where, "model", `the backend model as "vendorb/<backend_model>" or "vendora/<backend_model>"`)
	if err != nil {
		return modelPrefix{}, err
	}
	var model string
	if err := p.decode(v, where+".model", "a string", &model); err != nil {
		return modelPrefix{}, err
	}
	prefix, name, ok := cutModelPrefix(model)
	if !ok || name == "" {
		return modelPrefix{}, p.errorf(v, "%s.model is %q: %s", where, model, prefixFix(spelling))
	}
	r.BackendModel, r.Protocol = name, prefix.protocol
	return prefix, nil
}

func (p *parser) apiBase(n *yaml.Node, params map[string]*yaml.Node, where string, appendV1 bool, r *Route) error {
	v, err := p.required(n, params, where, "api_base", "the backend's base URL ending in /v1, e.g. http://localhost:8000/v1")
	if err != nil {
		return err
	}
	var base string
	if err := p.decode(v, where+".api_base", "a URL", &base); err != nil {
		return err
	}
	u, perr := url.Parse(base)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return p.errorf(v, "%s.api_base is %q: it must be an http(s) URL ending in /v1, e.g. http://localhost:8000/v1", where, base)
	}
	r.APIBase = strings.TrimRight(base, "/")
	if appendV1 && !strings.HasSuffix(r.APIBase, "/v1") {
		r.APIBase += "/v1" // ollama/, anthropic/: LiteLLM's api_base is the server's root
	}
	if !strings.HasSuffix(r.APIBase, "/v1") {
		// The proxy appends /chat/completions: without /v1 every request
		// would reach a path the backend does not serve.
		return p.errorf(v, "%s.api_base is %q: it must end in /v1, the root of the backend's OpenAI-compatible API (the proxy appends /chat/completions), e.g. %s/v1", where, base, r.APIBase)
	}
	return nil
}

func (p *parser) optionalParams(params map[string]*yaml.Node, where string, r *Route) error {
	if err := p.dropParams(params, where, r); err != nil {
		return err
	}
	if err := p.textCalls(params, where, r); err != nil {
		return err
	}
	if v, ok := params["supports_system_message"]; ok {
		if err := p.decode(v, where+".supports_system_message", "true or false", &r.SupportsSystemMessage); err != nil {
			return err
		}
	}
	if v, ok := params["supports_reasoning_effort"]; ok {
		if err := p.decode(v, where+".supports_reasoning_effort", "true or false", &r.SupportsReasoningEffort); err != nil {
			return err
		}
	}
	if v, ok := params["supports_vision"]; ok {
		if err := p.decode(v, where+".supports_vision", "true or false", &r.SupportsVision); err != nil {
			return err
		}
	}
	if v, ok := params["server"]; ok {
		i := slices.IndexFunc(Servers, func(name string) bool { return strings.EqualFold(name, v.Value) })
		if v.Kind != yaml.ScalarNode || i < 0 {
			return p.errorf(v, "%s.server is %q: write one of %s (leave it out to discover it from the backend)", where, v.Value, strings.Join(Servers, ", "))
		}
		r.Server = Servers[i]
	}
	if v, ok := params["vision_fallback"]; ok {
		if err := p.decode(v, where+".vision_fallback", "a model_name", &r.VisionFallback); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		key string
		dst *time.Duration
	}{{"timeout", &r.Timeout}, {"stream_timeout", &r.StreamTimeout}} {
		v, ok := params[d.key]
		if !ok {
			continue
		}
		var seconds float64
		if err := p.decode(v, where+"."+d.key, "a number of seconds", &seconds); err != nil {
			return err
		}
		if seconds <= 0 {
			return p.errorf(v, "%s.%s must be a positive number of seconds (default 300)", where, d.key)
		}
		*d.dst = time.Duration(seconds * float64(time.Second))
	}
	for _, d := range []struct {
		key, fix string
		dst      *int
	}{
		{"max_output_tokens", "a positive number of tokens, e.g. 8192 for a 32k-context model", &r.MaxOutputTokens},
		{"num_retries", "a number from 0 to 10 (default 3)", &r.NumRetries},
		{"context_window", "the model's context window in tokens, e.g. 32768 (leave it out to discover it from the backend)", &r.ContextWindow},
	} {
		v, ok := params[d.key]
		if !ok {
			continue
		}
		if err := p.decode(v, where+"."+d.key, d.fix, d.dst); err != nil {
			return err
		}
		if *d.dst < 0 || (d.key != "num_retries" && *d.dst == 0) || (d.key == "num_retries" && *d.dst > 10) {
			return p.errorf(v, "%s.%s is %d: write %s", where, d.key, *d.dst, d.fix)
		}
	}
	return p.poolParams(params, where, r)
}

// poolParams reads what a backend is within its pool: its name, its
// weight and its slots.
func (p *parser) poolParams(params map[string]*yaml.Node, where string, r *Route) error {
	if v, ok := params["name"]; ok {
		if err := p.decode(v, where+".name", "a string", &r.Name); err != nil {
			return err
		}
		if strings.TrimSpace(r.Name) == "" || strings.ContainsAny(r.Name, "\"\\\n") {
			return p.errorf(v, "%s.name is %q: write a short label for this backend, e.g. gpu-box-1 (it names the backend in /backends and in metrics)", where, r.Name)
		}
	}
	if v, ok := params["weight"]; ok {
		if err := p.decode(v, where+".weight", "a positive number (default 1)", &r.Weight); err != nil {
			return err
		}
		if !(r.Weight > 0) || r.Weight > 1e6 {
			return p.errorf(v, "%s.weight is %v: write a positive number (default 1); a backend with weight 2 gets twice the sessions of one with weight 1", where, v.Value)
		}
	}
	if v, ok := params["max_parallel_requests"]; ok {
		if err := p.decode(v, where+".max_parallel_requests", "a whole number of requests", &r.MaxParallelRequests); err != nil {
			return err
		}
		if r.MaxParallelRequests < 1 {
			return p.errorf(v, "%s.max_parallel_requests is %d: write at least 1 (requests beyond it wait for a free slot, up to router_settings.queue_timeout), or leave it out for no limit", where, r.MaxParallelRequests)
		}
	}
	return nil
}

// dropParams reads proxy_params.drop_params: a list of top-level member
// names. It applies to vendora/ backends only (a vendorb/ request is
// translated, and the translation already leaves out what a Chat backend
// cannot use); an empty list keeps every member.
func (p *parser) dropParams(params map[string]*yaml.Node, where string, r *Route) error {
	v, ok := params["drop_params"]
	if !ok {
		if r.Protocol == ProtocolMessages {
			r.DropParams = DefaultDropParams
		}
		return nil
	}
	const fix = "a list of top-level request keys, e.g. [context_management, betas]"
	if r.Protocol != ProtocolMessages {
		return p.errorf(v, "%s.drop_params applies to vendora/ backends only (a vendorb/ request is translated, which already drops what a Chat backend cannot use): remove it, or write model as vendora/<backend_model>", where)
	}
	if v.Kind != yaml.SequenceNode {
		return p.errorf(v, "%s.drop_params must be %s", where, fix)
	}
	r.DropParams = []string{}
	for i, item := range v.Content {
		var name string
		if err := p.decode(item, fmt.Sprintf("%s.drop_params[%d]", where, i), "a key name", &name); err != nil {
			return err
		}
		if name == "" || name == "model" || name == "messages" || name == "max_tokens" {
			return p.errorf(item, "%s.drop_params[%d] is %q: the request cannot go without it; write %s", where, i, name, fix)
		}
		r.DropParams = append(r.DropParams, name)
	}
	return nil
}

// mapping checks that n is a mapping whose keys are all known, and returns
// its values by key.
func (p *parser) mapping(n *yaml.Node, where string, known []string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s must be a mapping of keys (%s)", where, strings.Join(known, ", "))
	}
	fields := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(known, k.Value) {
			return nil, p.errorf(k, "unknown key %q in %s%s: remove it or correct its spelling (known keys: %s)", k.Value, where, unknownKeyNote(k.Value), strings.Join(known, ", "))
		}
		if _, dup := fields[k.Value]; dup {
			return nil, p.errorf(k, "key %q appears twice in %s: keep one", k.Value, where)
		}
		fields[k.Value] = v
	}
	return fields, nil
}

func (p *parser) required(n *yaml.Node, fields map[string]*yaml.Node, where, key, what string) (*yaml.Node, error) {
	v, ok := fields[key]
	if !ok || (v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
		return nil, p.errorf(n, "%s.%s is missing: add it (%s)", where, key, what)
	}
	return v, nil
}

func (p *parser) decode(v *yaml.Node, key, want string, dst any) error {
	if v.Kind != yaml.ScalarNode || v.Decode(dst) != nil {
		return p.errorf(v, "%s must be %s, not %q", key, want, v.Value)
	}
	return nil
}

// secret resolves a key written literally, as os.environ/NAME, or as ${NAME}.
func (p *parser) secret(v *yaml.Node, key string) (string, error) {
	var raw string
	if err := p.decode(v, key, "a string", &raw); err != nil {
		return "", err
	}
	name, ok := envReference(raw)
	if !ok {
		return raw, nil
	}
	val, set := p.getenv(name)
	if !set {
		return "", p.errorf(v, "AuthenticationError: %s reads environment variable %s, which is not set: export %s before starting the proxy and warmer (with docker compose, put it in .env), or write the key in the file", key, name, name)
	}
	return val, nil
}

func envReference(s string) (string, bool) {
	if name, ok := strings.CutPrefix(s, "os.environ/"); ok && name != "" {
		return name, true
	}
	if strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") && len(s) > 3 {
		return s[2 : len(s)-1], true
	}
	return "", false
}
