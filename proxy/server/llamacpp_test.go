package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// llamaServer is a stand-in for llama-server b10061 built from its
// recorded answers (testdata/llama-server, from
// shared/recorded/llama-server-b10061): it says it is llama.cpp in GET
// /props and GET /v1/models, serves /v1/chat/completions and its native
// /v1/messages, and, as the real one, compiles each request's tool
// schemas into a grammar first — a schema its grammar builder refuses
// gets its 400 "failed to parse grammar". Like the real one it ignores a
// named (object) tool_choice, and "required" (Messages: "any") makes the
// model call the first tool listed.
type llamaServer struct {
	t      *testing.T
	url    string
	mu     sync.Mutex
	bodies []map[string]any // each completion request, as received
	paths  []string
}

func newLlamaServer(t *testing.T) *llamaServer {
	t.Helper()
	ls := &llamaServer{t: t}
	srv := httptest.NewServer(ls)
	t.Cleanup(srv.Close)
	ls.url = srv.URL
	return ls
}

func recordedLlama(t *testing.T, name string) []byte {
	b, err := os.ReadFile("testdata/llama-server/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (ls *llamaServer) received() ([]string, []map[string]any) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return append([]string(nil), ls.paths...), append([]map[string]any(nil), ls.bodies...)
}

func (ls *llamaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", "llama.cpp")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch r.URL.Path {
	case "/props":
		w.Write(recordedLlama(ls.t, "props.json"))
		return
	case "/v1/models", "/models":
		w.Write(recordedLlama(ls.t, "v1-models.json"))
		return
	case "/v1/chat/completions", "/v1/messages":
	default:
		w.WriteHeader(404)
		w.Write([]byte(`{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`))
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error":{"code":500,"message":%q,"type":"server_error"}}`, err.Error())
		return
	}
	ls.mu.Lock()
	ls.bodies, ls.paths = append(ls.bodies, body), append(ls.paths, r.URL.Path)
	ls.mu.Unlock()
	messages := r.URL.Path == "/v1/messages"
	for _, s := range toolSchemas(body, messages) {
		if errs := llamaGrammarCheck(s.schema); len(errs) > 0 {
			ls.t.Logf("stand-in refuses tool %s: %v", s.name, errs)
			w.WriteHeader(400)
			w.Write(recordedLlama(ls.t, "grammar-400.json"))
			return
		}
	}
	call := ""
	switch tc := body["tool_choice"].(type) {
	case string:
		if tc == "required" {
			call = firstTool(body, messages)
		}
	case map[string]any:
		if messages && tc["type"] == "any" {
			call = firstTool(body, messages)
		}
	}
	stream, _ := body["stream"].(bool)
	ls.answer(w, messages, stream, call)
}

func (ls *llamaServer) answer(w http.ResponseWriter, messages, stream bool, call string) {
	const model = "models/tiny-random-llama.gguf"
	switch {
	case messages && !stream:
		content := `[{"type":"text","text":"hi"}]`
		stop := "end_turn"
		if call != "" {
			content, stop = `[{"type":"tool_use","id":"ea1mAKNw1V7SQM9ZCsnj6Y5xiWUSGtqu","name":`+strconv.Quote(call)+`,"input":{"city":" Hankjac"}}]`, "tool_use"
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-6fuKsE1DRSREtcZhdx7sNIh49C097GWW","type":"message","role":"assistant","content":%s,"model":%q,"stop_reason":%q,"stop_sequence":null,"usage":{"cache_read_input_tokens":82,"input_tokens":104,"output_tokens":20}}`, content, model, stop)
	case messages:
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"chatcmpl-IA0XqEwrAKD8PXD4ZcXvl3uZ1c6Dt9kg","type":"message","role":"assistant","content":[],"model":"`+model+`","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":104,"output_tokens":0}}}`)
		stop := "end_turn"
		if call != "" {
			stop = "tool_use"
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"dbTJFOPDPeJR8GYHtmrMztQ62ZBlF4hI","name":`+strconv.Quote(call)+`,"input":{}}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\" Hankjac\"}"}}`)
		} else {
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"input_tokens":104,"output_tokens":20}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	case !stream:
		msg, finish := `{"role":"assistant","content":"hi"}`, "stop"
		if call != "" {
			msg, finish = `{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":`+strconv.Quote(call)+`,"arguments":"{\"city\":\" Hankjac\"}"},"id":"tnTnOF84Tc7oAtRpSBWyogxdIniliGJA"}]}`, "tool_calls"
		}
		fmt.Fprintf(w, `{"choices":[{"finish_reason":%q,"index":0,"message":%s}],"created":1796151430,"model":%q,"system_fingerprint":"b10061-5d5306bf3","object":"chat.completion","usage":{"completion_tokens":20,"prompt_tokens":192,"total_tokens":212,"prompt_tokens_details":{"cached_tokens":191}},"id":"chatcmpl-O6dWH8rFNs6Cxm2bVmeZntMdgtKZvEfK"}`, finish, msg, model)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, `data: {"choices":[{"finish_reason":%s,"index":0,"delta":%s}],"created":1796151582,"id":"chatcmpl-kFloI0rusdHNczBIb0u5eCXBcy0n1Ny5","model":%q,"system_fingerprint":"b10061-5d5306bf3","object":"chat.completion.chunk"}`+"\n\n", finish, delta, model)
		}
		chunk(`{"role":"assistant","content":null}`, "null")
		finish := `"stop"`
		if call != "" {
			finish = `"tool_calls"`
			chunk(`{"tool_calls":[{"index":0,"id":"tnTnOF84Tc7oAtRpSBWyogxdIniliGJA","type":"function","function":{"name":`+strconv.Quote(call)+`,"arguments":"{\"city\":\" Hankjac\"}"}}]}`, "null")
		} else {
			chunk(`{"content":"hi"}`, "null")
		}
		chunk(`{}`, finish)
		fmt.Fprintf(w, `data: {"choices":[],"created":1796151582,"id":"chatcmpl-kFloI0rusdHNczBIb0u5eCXBcy0n1Ny5","model":%q,"object":"chat.completion.chunk","usage":{"completion_tokens":20,"prompt_tokens":192,"total_tokens":212}}`+"\n\ndata: [DONE]\n\n", model)
	}
}

type namedSchema struct {
	name, description string
	schema            any
}

// toolSchemas are the tools of a completion request, each with its schema.
func toolSchemas(body map[string]any, messages bool) []namedSchema {
	list, _ := body["tools"].([]any)
	var out []namedSchema
	for _, t := range list {
		m, _ := t.(map[string]any)
		if !messages {
			m, _ = m["function"].(map[string]any)
		}
		key := "parameters"
		if messages {
			key = "input_schema"
		}
		name, _ := m["name"].(string)
		desc, _ := m["description"].(string)
		out = append(out, namedSchema{name, desc, m[key]})
	}
	return out
}

func firstTool(body map[string]any, messages bool) string {
	if s := toolSchemas(body, messages); len(s) > 0 {
		return s[0].name
	}
	return ""
}

// llamaGrammarCheck follows llama.cpp's json-schema-to-grammar
// (common/json-schema-to-grammar.cpp, common_schema_converter::visit)
// over a tool schema and returns what would make it fail: its "Unrecognized
// schema", "Unsupported ref" / "Error resolving ref", "Pattern must start
// with '^' and end with '$'", a non-list oneOf/anyOf/allOf, and every
// repetition {m,n} it would write whose count the grammar parser
// (src/llama-grammar.cpp, MAX_REPETITION_THRESHOLD 2000) refuses.
// llama-server b10061 refuses maxLength 2000 and 2001 alike
// (cc-grammar-maxlength.txt), so a count of 2000 counts as refused.
func llamaGrammarCheck(schema any) []string {
	c := &grammarCheck{root: schema}
	c.visit(schema, "")
	return c.errs
}

type grammarCheck struct {
	root any
	errs []string
}

const llamaRepetitionRefusedFrom = 2000

var repetitionRE = regexp.MustCompile(`\{(\d*)(,?)(\d*)\}`)

func (c *grammarCheck) errf(path, format string, args ...any) {
	c.errs = append(c.errs, path+": "+fmt.Sprintf(format, args...))
}

// repetition is build_repetition's count check: a bound n becomes {…,n}.
func (c *grammarCheck) repetition(path string, s map[string]any, minKey, maxKey string, sep bool) {
	for _, k := range []string{minKey, maxKey} {
		v, ok := s[k]
		if !ok {
			continue
		}
		n, isNum := v.(float64)
		if !isNum {
			c.errf(path, "%s %v: get<int> throws", k, v)
			continue
		}
		if sep && n > 0 {
			n-- // item ("," item){min-1,max-1}
		}
		if n < 0 || n >= llamaRepetitionRefusedFrom {
			c.errf(path, "%s %v: repetition count exceeds sane defaults", k, v)
		}
	}
}

func (c *grammarCheck) visit(schema any, path string) {
	s, ok := schema.(map[string]any)
	if !ok {
		c.errf(path, "Unrecognized schema: %v", schema)
		return
	}
	if ref, ok := s["$ref"]; ok {
		r, _ := ref.(string)
		if !strings.HasPrefix(r, "#/") || c.resolve(r) == nil {
			c.errf(path, "Unsupported ref / Error resolving ref %v", ref)
		}
		return
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alt, ok := s[k]; ok {
			list, isList := alt.([]any)
			if !isList {
				c.errf(path, "%s is not a list", k)
				return
			}
			for i, a := range list {
				c.visit(a, path+"/"+k+"/"+strconv.Itoa(i))
			}
			return
		}
	}
	typ := s["type"]
	if types, ok := typ.([]any); ok {
		for _, t := range types {
			cp := map[string]any{}
			for k, v := range s {
				cp[k] = v
			}
			cp["type"] = t
			c.visit(cp, path)
		}
		return
	}
	if _, ok := s["const"]; ok {
		return
	}
	if _, ok := s["enum"]; ok {
		return
	}
	tname, _ := typ.(string)
	if f, ok := s["format"]; ok {
		if _, isStr := f.(string); !isStr {
			c.errf(path, "format %v: get<std::string> throws", f)
		}
	}
	_, hasProps := s["properties"]
	ap, hasAP := s["additionalProperties"]
	if (typ == nil || tname == "object") && (hasProps || (hasAP && ap != true)) {
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				c.visit(p, path+"/properties/"+name)
			}
		}
		if apm, ok := ap.(map[string]any); ok {
			c.visit(apm, path+"/additionalProperties")
		}
		return
	}
	if all, ok := s["allOf"]; ok && (typ == nil || tname == "object" || tname == "string") {
		if _, isList := all.([]any); !isList {
			c.errf(path, "allOf is not a list")
		}
		return
	}
	items, hasItems := s["items"]
	if !hasItems {
		items, hasItems = s["prefixItems"]
	}
	if (typ == nil || tname == "array") && hasItems {
		if tuple, ok := items.([]any); ok {
			for i, it := range tuple {
				c.visit(it, path+"/items/"+strconv.Itoa(i))
			}
			return
		}
		c.visit(items, path+"/items")
		c.repetition(path, s, "minItems", "maxItems", true)
		return
	}
	if p, ok := s["pattern"]; ok && (typ == nil || tname == "string") {
		ps, _ := p.(string)
		if !strings.HasPrefix(ps, "^") || !strings.HasSuffix(ps, "$") {
			c.errf(path, "Pattern must start with '^' and end with '$': %v", p)
			return
		}
		for _, m := range repetitionRE.FindAllStringSubmatch(ps, -1) {
			for _, n := range []string{m[1], m[3]} {
				if v, err := strconv.Atoi(n); err == nil && v >= llamaRepetitionRefusedFrom {
					c.errf(path, "pattern repetition %s exceeds sane defaults", m[0])
				}
			}
		}
		return
	}
	if tname == "string" {
		c.repetition(path, s, "minLength", "maxLength", false)
		return
	}
	if len(s) == 0 || tname == "object" {
		return
	}
	if typ == nil {
		return
	}
	switch tname {
	case "boolean", "number", "integer", "array", "null":
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if v, ok := s[k]; ok && tname == "integer" {
				if _, isNum := v.(float64); !isNum {
					c.errf(path, "%s %v: get<int64_t> throws", k, v)
				}
			}
		}
		return
	}
	c.errf(path, "Unrecognized schema: type %v", typ)
}

// resolve follows a "#/…" pointer into the root schema.
func (c *grammarCheck) resolve(ref string) any {
	at := c.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		switch v := at.(type) {
		case map[string]any:
			at = v[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			at = v[i]
		default:
			return nil
		}
	}
	return at
}

// claudeCodeBody is the body of Claude Code 2.1.330's recorded request.
func claudeCodeBody(t *testing.T) map[string]any {
	t.Helper()
	raw, err := fixtures.ClaudeCodeRequest()
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Body map[string]any `json:"body"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	return req.Body
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// llamaRoutes are two aliases to one llama-server: vendorb/ (translated
// to Chat) and vendora/ (its native Messages endpoint).
func llamaRoutes(url string) string {
	p := func(prefix string) string {
		return "      model: " + prefix + "models/tiny-random-llama.gguf\n      api_base: " + url + "/v1\n      api_key: none\n"
	}
	return "model_list:\n" +
		"  - model_name: llama-b\n    proxy_params:\n" + p("vendorb/") +
		"  - model_name: llama-a\n    proxy_params:\n" + p("vendora/")
}

// TestClaudeCodeToolsCompileOnLlamaCpp: Claude Code 2.1.330's own
// request (recorded) and its tools sent from the Chat and Responses
// fronts reach a llama.cpp backend, translated and native, with schemas
// that pass llama.cpp's grammar rules; every tool arrives, its
// description unchanged, and the rewrite is logged at debug level.
// Before discovery knows the server, the stand-in refuses them as the
// real one does.
func TestClaudeCodeToolsCompileOnLlamaCpp(t *testing.T) {
	ls := newLlamaServer(t)
	h := newHarness(t, harnessOptions{routesYAML: llamaRoutes(ls.url)})

	cc := claudeCodeBody(t)
	ccTools := cc["tools"].([]any)
	var chatTools, respTools []any
	descs := map[string]string{}
	for _, tl := range ccTools {
		m := tl.(map[string]any)
		descs[m["name"].(string)] = m["description"].(string)
		chatTools = append(chatTools, map[string]any{"type": "function", "function": map[string]any{"name": m["name"], "description": m["description"], "parameters": m["input_schema"]}})
		respTools = append(respTools, map[string]any{"type": "function", "name": m["name"], "description": m["description"], "parameters": m["input_schema"]})
	}
	if errs := llamaGrammarCheck(ccTools[slicesIndexName(ccTools, "Workflow")].(map[string]any)["input_schema"]); len(errs) == 0 {
		t.Fatal("the grammar check passes Claude Code's Workflow tool as it is: it checks nothing")
	}

	requests := func(alias string) []struct{ path, body string } {
		msg := map[string]any{}
		for k, v := range cc {
			msg[k] = v
		}
		msg["model"] = alias
		msg["max_tokens"] = 64
		chat := map[string]any{"model": alias, "max_tokens": 64, "stream": true, "tools": chatTools, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		resp := map[string]any{"model": alias, "max_output_tokens": 64, "stream": false, "tools": respTools, "input": "hi"}
		return []struct{ path, body string }{
			{"/v1/messages?beta=true", mustJSON(t, msg)},
			{"/v1/chat/completions", mustJSON(t, chat)},
			{"/v1/responses", mustJSON(t, resp)},
		}
	}

	// Not discovered yet: the server's dialect is unknown, the schema
	// goes as the client wrote it and the stand-in refuses it.
	if resp, b := h.do(http.MethodPost, "/v1/chat/completions", requests("llama-b")[1].body, nil, false); resp.StatusCode != 400 || !strings.Contains(string(b), "failed to parse grammar") {
		t.Fatalf("before discovery: %d %s", resp.StatusCode, b)
	}

	h.server.Discover(context.Background())
	_, before := ls.received()
	for _, alias := range []string{"llama-b", "llama-a"} {
		for _, c := range requests(alias) {
			resp, b := h.do(http.MethodPost, c.path, c.body, []string{"Anthropic-Version", "2023-06-01"}, false)
			if resp.StatusCode != 200 {
				t.Errorf("%s %s: %d %s", alias, c.path, resp.StatusCode, b)
			}
		}
	}
	paths, bodies := ls.received()
	paths, bodies = paths[len(before):], bodies[len(before):]
	if len(bodies) != 6 {
		t.Fatalf("the backend got %d requests, want 6", len(bodies))
	}
	native := 0
	for i, body := range bodies {
		messages := paths[i] == "/v1/messages"
		if messages {
			native++
		}
		got := toolSchemas(body, messages)
		if len(got) != len(ccTools) {
			t.Errorf("%s: %d tools arrived, want %d", paths[i], len(got), len(ccTools))
		}
		for _, s := range got {
			if errs := llamaGrammarCheck(s.schema); len(errs) > 0 {
				t.Errorf("%s: tool %s does not compile: %v", paths[i], s.name, errs)
			}
			if s.description != descs[s.name] {
				t.Errorf("%s: tool %s's description changed", paths[i], s.name)
			}
		}
	}
	if native != 3 {
		t.Errorf("%d requests went to the native endpoint, want 3 (one per front)", native)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "level=DEBUG msg=\"request rewritten for the backend's server\"") ||
		!strings.Contains(logs, "Workflow: /properties/script: maxLength 524288 dropped") {
		t.Errorf("the rewrite is not logged at debug level:\n%s", logs)
	}
}

func slicesIndexName(tools []any, name string) int {
	for i, tl := range tools {
		if tl.(map[string]any)["name"] == name {
			return i
		}
	}
	return -1
}

// TestNamedToolChoiceForcedOnLlamaCpp: llama-server ignores a named
// tool_choice (the object form); through the proxy the named tool is the
// one called, on the translated and the native endpoint, from the
// Messages, Chat and Responses fronts, streamed or not.
func TestNamedToolChoiceForcedOnLlamaCpp(t *testing.T) {
	ls := newLlamaServer(t)
	h := newHarness(t, harnessOptions{routesYAML: llamaRoutes(ls.url)})
	h.server.Discover(context.Background())
	tools := `[{"name":"get_weather","description":"weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},{"name":"get_time","description":"time","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	chatTools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}]`
	for _, alias := range []string{"llama-b", "llama-a"} {
		for _, stream := range []bool{false, true} {
			s := strconv.FormatBool(stream)
			body := `{"model":"` + alias + `","max_tokens":120,"stream":` + s + `,"tool_choice":{"type":"tool","name":"get_time"},"tools":` + tools + `,"messages":[{"role":"user","content":"what time is it"}]}`
			resp, b := h.do(http.MethodPost, "/v1/messages", body, nil, false)
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"get_time"`) || strings.Contains(string(b), "get_weather") {
				t.Errorf("messages %s stream=%s: %d %s", alias, s, resp.StatusCode, b)
			}
			body = `{"model":"` + alias + `","max_tokens":120,"stream":` + s + `,"tool_choice":{"type":"function","function":{"name":"get_time"}},"tools":` + chatTools + `,"messages":[{"role":"user","content":"what time is it"}]}`
			resp, b = h.do(http.MethodPost, "/v1/chat/completions", body, nil, false)
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"get_time"`) || strings.Contains(string(b), "get_weather") {
				t.Errorf("chat %s stream=%s: %d %s", alias, s, resp.StatusCode, b)
			}
			respTools := `[{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"function","name":"get_time","parameters":{"type":"object"}}]`
			body = `{"model":"` + alias + `","max_output_tokens":120,"stream":` + s + `,"tool_choice":{"type":"function","name":"get_time"},"tools":` + respTools + `,"input":"what time is it"}`
			resp, b = h.do(http.MethodPost, "/v1/responses", body, nil, false)
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"get_time"`) || strings.Contains(string(b), `"name":"get_weather"`) {
				t.Errorf("responses %s stream=%s: %d %s", alias, s, resp.StatusCode, b)
			}
		}
	}
}

// TestChatIDsFromLlamaCppNative: llama-server's /v1/messages answers with
// "chatcmpl-…" ids; the Chat front of a vendora/ alias gives them as they
// are, not "chatcmpl-chatcmpl-…".
func TestChatIDsFromLlamaCppNative(t *testing.T) {
	ls := newLlamaServer(t)
	h := newHarness(t, harnessOptions{routesYAML: llamaRoutes(ls.url)})
	for _, stream := range []string{"false", "true"} {
		resp, b := h.do(http.MethodPost, "/v1/chat/completions", `{"model":"llama-a","max_tokens":8,"stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`, nil, false)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"id":"chatcmpl-`) || strings.Contains(string(b), "chatcmpl-chatcmpl-") {
			t.Errorf("stream=%s: %d %s", stream, resp.StatusCode, b)
		}
	}
	if paths, _ := ls.received(); len(paths) != 2 || paths[0] != "/v1/messages" {
		t.Errorf("the backend got %v, want two native requests", paths)
	}
}

// TestConfiguredLlamaCpp: proxy_params.server: llama.cpp rewrites for it
// before (or without) discovery.
func TestConfiguredLlamaCpp(t *testing.T) {
	ls := newLlamaServer(t)
	routes := strings.ReplaceAll(llamaRoutes(ls.url), "      api_key: none\n", "      api_key: none\n      server: LLAMA.CPP\n")
	h := newHarness(t, harnessOptions{routesYAML: routes})
	body := `{"model":"llama-b","max_tokens":8,"tools":[{"type":"function","function":{"name":"Workflow","parameters":{"type":"object","properties":{"script":{"type":"string","maxLength":524288}}}}}],"messages":[{"role":"user","content":"hi"}]}`
	if resp, b := h.do(http.MethodPost, "/v1/chat/completions", body, nil, false); resp.StatusCode != 200 {
		t.Fatalf("configured llama.cpp, not discovered: %d %s", resp.StatusCode, b)
	}
}
