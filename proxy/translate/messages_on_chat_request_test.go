package translate

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

// update rewrites the golden files: go test ./proxy/translate -run Golden -update
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func updatingGolden() bool { return *update }

// Targets used by the request tests.
var (
	tgtPlain    = Target{Alias: "a", BackendModel: "m", SupportsSystemMessage: true}
	tgtNoSystem = Target{Alias: "a", BackendModel: "m"}
)

func resolverFor(t Target) Resolver {
	return func(alias string) (Target, error) {
		t.Alias = alias
		return t, nil
	}
}

// requireSameJSON fails unless got and want hold the same JSON value
// (member order and spacing aside).
func requireSameJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	if !jsontext.Value(got).IsValid() {
		t.Fatalf("output is not valid JSON:\n%s", got)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.Marshal(g, jsontext.Multiline(true), json.Deterministic(true))
		wi, _ := json.Marshal(w, jsontext.Multiline(true), json.Deterministic(true))
		t.Fatalf("JSON differs\n--- got\n%s\n--- want\n%s", gi, wi)
	}
}

func toChat(t testing.TB, body string, tgt Target) BackendRequest {
	t.Helper()
	br, err := MessagesOnChatRequest([]byte(body), resolverFor(tgt))
	if err != nil {
		t.Fatalf("MessagesOnChatRequest: %v\nbody: %s", err, body)
	}
	return br
}

// req builds a Messages request body around the given members.
func req(members string) string {
	return `{"model":"a","max_tokens":100,` + members + `}`
}

func TestMessagesToChatRules(t *testing.T) {
	tgtClamp := tgtPlain
	tgtClamp.MaxOutputTokens = 8192
	tgtReason := tgtPlain
	tgtReason.SupportsReasoningEffort = true
	tests := []struct {
		name string
		tgt  Target
		body string
		want string
	}{{
		name: "string content",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"hi"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":100}`,
	}, {
		name: "system string leads",
		tgt:  tgtPlain,
		body: req(`"system":"be brief","messages":[{"role":"user","content":"hi"}]`),
		want: `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":100}`,
	}, {
		name: "system blocks joined, billing header block dropped, empty skipped, cache_control ignored",
		tgt:  tgtPlain,
		body: req(`"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1; cc_entrypoint=cli;"},{"type":"text","text":"A","cache_control":{"type":"ephemeral"}},{"type":"text","text":""},{"type":"text","text":"B"}],"messages":[{"role":"user","content":"hi"}]`),
		want: `{"model":"m","messages":[{"role":"system","content":"A\n\nB"},{"role":"user","content":"hi"}],"max_tokens":100}`,
	}, {
		name: "billing header dropped only as the first block",
		tgt:  tgtPlain,
		body: req(`"system":[{"type":"text","text":"A"},{"type":"text","text":"x-anthropic-billing-header: z"}],"messages":[{"role":"user","content":"hi"}]`),
		want: `{"model":"m","messages":[{"role":"system","content":"A\n\nx-anthropic-billing-header: z"},{"role":"user","content":"hi"}],"max_tokens":100}`,
	}, {
		name: "no system role: system folded into a string first turn",
		tgt:  tgtNoSystem,
		body: req(`"system":"S","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"<system>\nS\n</system>\n\nhi"},{"role":"assistant","content":"yo"}],"max_tokens":100}`,
	}, {
		name: "no system role: system folded into a list first turn as its own part",
		tgt:  tgtNoSystem,
		body: req(`"system":[{"type":"text","text":"S1"},{"type":"text","text":"S2"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"<system>\nS1\n\nS2\n</system>"},{"type":"text","text":"hi"}]}],"max_tokens":100}`,
	}, {
		name: "mid-list system turn stays a system message in place",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"},{"role":"system","content":"note"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"system","content":"note"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}],"max_tokens":100}`,
	}, {
		name: "mid-list system turn with blocks",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"},{"role":"system","content":[{"type":"text","text":"n1"},{"type":"text","text":"n2"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"system","content":"n1\n\nn2"}],"max_tokens":100}`,
	}, {
		name: "no system role: mid-list system turn merges into the user turn before it",
		tgt:  tgtNoSystem,
		body: req(`"messages":[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"system","content":"note"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"},{"type":"text","text":"<system>\nnote\n</system>"}]},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}],"max_tokens":100}`,
	}, {
		name: "no system role: system turn between assistant turns becomes a user turn",
		tgt:  tgtNoSystem,
		body: req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"system","content":"note"},{"role":"assistant","content":"b"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"<system>\nnote\n</system>"},{"role":"assistant","content":"b"}],"max_tokens":100}`,
	}, {
		name: "no system role: conversation starting with assistant gets a user turn first",
		tgt:  tgtNoSystem,
		body: req(`"system":"S","messages":[{"role":"assistant","content":"a"},{"role":"user","content":"q"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"<system>\nS\n</system>"},{"role":"assistant","content":"a"},{"role":"user","content":"q"}],"max_tokens":100}`,
	}, {
		name: "empty text skipped, thinking and redacted_thinking dropped, unknown blocks ignored",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":"x"},{"type":"mystery","foo":1}]},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"zz"},{"type":"text","text":"y"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":"y"}],"max_tokens":100}`,
	}, {
		name: "a search of the history: the call, its result read back from encrypted_content (or the error), then the text after it",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"go"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://go.dev/","title":"Go","encrypted_content":"` + EncryptedContent(&websearch.Result{URL: "https://go.dev/", Title: "Go", Snippet: "The Go language"}) + `","page_age":null}]},{"type":"server_tool_use","id":"srvtoolu_2","name":"web_search","input":{"query":"x"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"web_search_tool_result_error","error_code":"unavailable"}},{"type":"text","text":"y"}]},{"role":"user","content":"more"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"srvtoolu_1","type":"function","function":{"name":"web_search","arguments":"{\"query\":\"go\"}"}}]},` +
			`{"role":"tool","tool_call_id":"srvtoolu_1","content":"Web search results for \"go\":\n\n[1] Go\nURL: https://go.dev/\nThe Go language\n\nAnswer from these results and cite the pages you use by their URL."},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"srvtoolu_2","type":"function","function":{"name":"web_search","arguments":"{\"query\":\"x\"}"}}]},` +
			`{"role":"tool","tool_call_id":"srvtoolu_2","content":"The web search failed: unavailable (the search provider did not answer). Answer with what you know, and say that the search failed."},` +
			`{"role":"assistant","content":"y"},{"role":"user","content":"more"}],"max_tokens":100}`,
	}, {
		name: "a tool_reference in a tool result: the tool's name, that it is now available, its description when the request has it",
		tgt:  tgtPlain,
		body: req(`"tools":[{"name":"WebSearch","description":"Search the web.","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"find"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"ToolSearch","input":{"query":"select:WebSearch"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"tool_reference","tool_name":"WebSearch"},{"type":"tool_reference","tool_name":"Other"}]}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"find"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"ToolSearch","arguments":"{\"query\":\"select:WebSearch\"}"}}]},` +
			`{"role":"tool","tool_call_id":"t1","content":"Tool WebSearch is now available: call it by that name. Its description: Search the web.\nTool Other is now available: call it by that name."}],` +
			`"max_tokens":100,"tools":[{"type":"function","function":{"name":"WebSearch","description":"Search the web.","parameters":{"type":"object"}}}]}`,
	}, {
		name: "an assistant turn of only thinking vanishes and the user turns around it merge",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"}]},{"role":"user","content":"b"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"a\n\nb"}],"max_tokens":100}`,
	}, {
		name: "adjacent user turns merge; a string joins a list as a text part",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"max_tokens":100}`,
	}, {
		name: "empty string content skipped",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"a"},{"role":"assistant","content":""},{"role":"user","content":"b"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"a\n\nb"}],"max_tokens":100}`,
	}, {
		name: "assistant text blocks join into one string",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"one\n\ntwo"}],"max_tokens":100}`,
	}, {
		name: "images: base64 becomes a data URL, url passes",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"image","source":{"type":"url","url":"https://example.com/y.png"}},{"type":"text","text":"what?"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"https://example.com/y.png"}},{"type":"text","text":"what?"}]}],"max_tokens":100}`,
	}, {
		name: "tool_use becomes tool_calls; tool_result a tool message before the turn's text; is_error marked; parts joined",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"run"},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"t2","name":"Read","input":{}}]},{"role":"user","content":[{"type":"text","text":"also this"},{"type":"tool_result","tool_use_id":"t1","content":"a.go"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"line1"},{"type":"text","text":"line2"}],"is_error":true}]}]`),
		want: `{"model":"m","messages":[
			{"role":"user","content":"run"},
			{"role":"assistant","content":"ok","tool_calls":[
				{"id":"t1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}},
				{"id":"t2","type":"function","function":{"name":"Read","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"t1","content":"a.go"},
			{"role":"tool","tool_call_id":"t2","content":"Error: line1\nline2"},
			{"role":"user","content":[{"type":"text","text":"also this"}]}],"max_tokens":100}`,
	}, {
		name: "tool_use alone: content null, missing input is {}",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Now"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"Now","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":""}],"max_tokens":100}`,
	}, {
		name: "images inside a tool_result go to a user message right after the tool message",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"shoot"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Screenshot","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"shot"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]},{"type":"text","text":"see?"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"shoot"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"Screenshot","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"shot"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}},{"type":"text","text":"see?"}]}],"max_tokens":100}`,
	}, {
		name: "tool_result content: text and text documents joined by lines, unknown parts ignored",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Fetch","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"head"},{"type":"document","source":{"type":"content","content":[{"type":"text","text":"d1"},{"type":"text","text":"d2"}]}},{"type":"search_result","source":"s"},{"type":"text","text":""}]}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"Fetch","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"head\nd1\nd2"}],"max_tokens":100}`,
	}, {
		name: "documents with text become text",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc body"}},{"type":"document","source":{"type":"content","content":[{"type":"text","text":"c1"},{"type":"image","source":{"type":"url","url":"x"}}]}},{"type":"document","source":{"type":"base64","media_type":"text/plain","data":"aGVsbG8="}}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"doc body"},{"type":"text","text":"c1"},{"type":"text","text":"hello"}]}],"max_tokens":100}`,
	}, {
		name: "tools: function tools, schema passed, server tools and tools without schema dropped",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"}],"tools":[{"name":"A","description":"d","input_schema":{"type":"object","properties":{"x":{"type":"string"}}},"cache_control":{"type":"ephemeral"}},{"type":"web_search_20250305","name":"web_search","max_uses":3},{"name":"B","input_schema":{"type":"object"},"defer_loading":true},{"name":"C"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"A","description":"d","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}},{"type":"function","function":{"name":"B","parameters":{"type":"object"}}}],"max_tokens":100}`,
	}, {
		name: "tool_choice without tools is dropped",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"}],"tool_choice":{"type":"any"}`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":100}`,
	}, {
		name: "sampling and metadata",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"}],"stop_sequences":["\n\nHuman:","END"],"temperature":0.2,"top_p":0.9,"top_k":40,"metadata":{"user_id":"u-1"}`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":100,"temperature":0.2,"top_p":0.9,"top_k":40,"stop":["\n\nHuman:","END"],"user":"u-1"}`,
	}, {
		name: "null sampling values are left out",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":"q"}],"temperature":null,"metadata":{"user_id":null},"stop_sequences":[]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":100}`,
	}, {
		name: "max_tokens clamped to MaxOutputTokens",
		tgt:  tgtClamp,
		body: `{"model":"a","max_tokens":128000,"messages":[{"role":"user","content":"q"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":8192}`,
	}, {
		name: "max_tokens under MaxOutputTokens kept",
		tgt:  tgtClamp,
		body: `{"model":"a","max_tokens":1000,"messages":[{"role":"user","content":"q"}]}`,
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":1000}`,
	}, {
		name: "stream asks for usage",
		tgt:  tgtPlain,
		body: req(`"stream":true,"messages":[{"role":"user","content":"q"}]`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":100,"stream":true,"stream_options":{"include_usage":true}}`,
	}, {
		name: "fields the backend can't use are dropped; unknown ones don't fail",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":[{"type":"text","text":"q","cache_control":{"type":"ephemeral"},"citations":[]}]}],"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"medium"},"betas":["x"],"service_tier":"auto","container":"c","mcp_servers":[],"stream":false`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"}]}],"max_tokens":100}`,
	}, {
		name: "reasoning effort forwarded when the model is configured for it",
		tgt:  tgtReason,
		body: req(`"messages":[{"role":"user","content":"q"}],"thinking":{"type":"adaptive"},"output_config":{"effort":"high"}`),
		want: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_tokens":100,"reasoning_effort":"high"}`,
	}, {
		name: "escapes pass through: the JSON string is copied, not re-encoded",
		tgt:  tgtPlain,
		body: req(`"messages":[{"role":"user","content":[{"type":"text","text":"line\n\"q\" \u00e9 é \ud83d\ude00 </script> \\ \/"}]}]`),
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"line\n\"q\" é é 😀 </script> \\ /"}]}],"max_tokens":100}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			br := toChat(t, tt.body, tt.tgt)
			requireSameJSON(t, br.Body, tt.want)
			if br.Target.BackendModel != tt.tgt.BackendModel || br.Target.Alias != "a" {
				t.Errorf("Target = %+v", br.Target)
			}
			if br.InputTokens <= 0 {
				t.Errorf("InputTokens = %d, want an estimate > 0", br.InputTokens)
			}
		})
	}
}

func TestMessagesToChatToolChoice(t *testing.T) {
	tools := `"tools":[{"name":"Bash","input_schema":{"type":"object"}}]`
	for _, tt := range []struct {
		choice string
		want   string // members after "tools"
	}{
		{`{"type":"auto"}`, `"tool_choice":"auto"`},
		{`{"type":"any"}`, `"tool_choice":"required"`},
		{`{"type":"none"}`, `"tool_choice":"none"`},
		{`{"type":"tool","name":"Bash"}`, `"tool_choice":{"type":"function","function":{"name":"Bash"}}`},
		{`{"type":"auto","disable_parallel_tool_use":true}`, `"tool_choice":"auto","parallel_tool_calls":false`},
		{`{"type":"any","disable_parallel_tool_use":false}`, `"tool_choice":"required"`},
	} {
		t.Run(tt.choice, func(t *testing.T) {
			br := toChat(t, req(`"messages":[{"role":"user","content":"q"}],`+tools+`,"tool_choice":`+tt.choice), tgtPlain)
			requireSameJSON(t, br.Body, `{"model":"m","messages":[{"role":"user","content":"q"}],"tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object"}}}],`+tt.want+`,"max_tokens":100}`)
		})
	}
}

func TestMessagesToChatReasoningEffort(t *testing.T) {
	on := tgtPlain
	on.SupportsReasoningEffort = true
	for _, tt := range []struct {
		members string
		want    string // "" = no reasoning_effort
	}{
		{`"output_config":{"effort":"low"}`, "low"},
		{`"output_config":{"effort":"medium"}`, "medium"},
		{`"output_config":{"effort":"high"}`, "high"},
		{`"output_config":{"effort":"max"}`, "high"},
		{`"thinking":{"type":"adaptive"}`, "medium"},
		{`"thinking":{"type":"enabled","budget_tokens":1024}`, "low"},
		{`"thinking":{"type":"enabled","budget_tokens":10000}`, "medium"},
		{`"thinking":{"type":"enabled","budget_tokens":31999}`, "high"},
		{`"thinking":{"type":"enabled","budget_tokens":31999},"output_config":{"effort":"low"}`, "low"},
		{`"thinking":{"type":"disabled"}`, ""},
		{``, ""},
	} {
		t.Run(tt.members, func(t *testing.T) {
			m := `"messages":[{"role":"user","content":"q"}]`
			if tt.members != "" {
				m += "," + tt.members
			}
			var got struct {
				ReasoningEffort *string `json:"reasoning_effort"`
			}
			br := toChat(t, req(m), on)
			if err := json.Unmarshal(br.Body, &got); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && got.ReasoningEffort != nil:
				t.Errorf("reasoning_effort = %q, want none", *got.ReasoningEffort)
			case tt.want != "" && (got.ReasoningEffort == nil || *got.ReasoningEffort != tt.want):
				t.Errorf("reasoning_effort = %v, want %q; body %s", got.ReasoningEffort, tt.want, br.Body)
			}
			// Never forwarded to a model not configured for it.
			if off := toChat(t, req(m), tgtPlain); strings.Contains(string(off.Body), "reasoning_effort") {
				t.Errorf("reasoning_effort sent to a model without SupportsReasoningEffort: %s", off.Body)
			}
		})
	}
}

// Raw pieces reach the backend byte for byte: tool schemas become
// parameters unchanged (key order, spacing, escapes), and tool_use input
// becomes arguments whose text is exactly the input's JSON.
func TestMessagesToChatRawBytes(t *testing.T) {
	schema := `{"type":"object", "properties":{"z":{"type":"string","description":"\u00e9 \"q\""},"a":{"type":"integer"}} ,"required":["z"]}`
	input := `{"z": "v\n", "a":1}`
	body := req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"T","input":` + input + `}]}],"tools":[{"name":"T","description":"d\u00e9","input_schema":` + schema + `}]`)
	br := toChat(t, body, tgtPlain)
	if !strings.Contains(string(br.Body), `"parameters":`+schema) {
		t.Errorf("input_schema not passed byte for byte:\n%s", br.Body)
	}
	if !strings.Contains(string(br.Body), `"description":"d\u00e9"`) {
		t.Errorf("description not passed byte for byte:\n%s", br.Body)
	}
	var out struct {
		Messages []struct {
			ToolCalls []struct {
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(br.Body, &out); err != nil {
		t.Fatal(err)
	}
	if got := out.Messages[1].ToolCalls[0].Function.Arguments; got != input {
		t.Errorf("arguments = %q, want the input's JSON %q", got, input)
	}
}

func TestMessagesToChatErrors(t *testing.T) {
	tu := `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"T","input":{}}]}`
	tests := []struct {
		name, body, want string
	}{
		{"malformed JSON", `{"model":`, "malformed JSON"},
		{"not an object", `[1,2]`, "request body: must be an object, got an array"},
		{"trailing garbage", `{"model":"a","max_tokens":1,"messages":[{"role":"user","content":"q"}]} x`, "malformed JSON"},
		{"invalid UTF-8", "{\"model\":\"a\xff\",\"max_tokens\":1,\"messages\":[]}", "invalid UTF-8"},
		{"model wrong type", `{"model":5,"max_tokens":1,"messages":[{"role":"user","content":"q"}]}`, "model: must be a string, got a number"},
		{"model missing", `{"max_tokens":1,"messages":[{"role":"user","content":"q"}]}`, "model: required"},
		{"messages missing", `{"model":"a","max_tokens":1}`, "messages: must not be empty"},
		{"messages empty", `{"model":"a","max_tokens":1,"messages":[]}`, "messages: must not be empty"},
		{"messages wrong type", `{"model":"a","max_tokens":1,"messages":{}}`, "messages: must be an array, got an object"},
		{"max_tokens missing", `{"model":"a","messages":[{"role":"user","content":"q"}]}`, "max_tokens: required"},
		{"max_tokens zero", `{"model":"a","max_tokens":0,"messages":[{"role":"user","content":"q"}]}`, "max_tokens: must be at least 1, got 0"},
		{"max_tokens a fraction", `{"model":"a","max_tokens":0.5,"messages":[{"role":"user","content":"q"}]}`, "max_tokens: must be an integer, got a number 0.5"},
		{"max_tokens negative", `{"model":"a","max_tokens":-5,"messages":[{"role":"user","content":"q"}]}`, "max_tokens: must be at least 1, got -5"},
		{"max_tokens string", `{"model":"a","max_tokens":"100","messages":[{"role":"user","content":"q"}]}`, "max_tokens: must be an integer, got a string"},
		{"max_tokens fraction", `{"model":"a","max_tokens":1.5,"messages":[{"role":"user","content":"q"}]}`, "max_tokens: must be an integer, got a number 1.5"},
		{"role unknown", req(`"messages":[{"role":"bot","content":"q"}]`), `messages.0.role: must be "user", "assistant" or "system", got "bot"`},
		{"content missing", req(`"messages":[{"role":"user"}]`), "messages.0.content: required"},
		{"content wrong type", req(`"messages":[{"role":"user","content":5}]`), "messages.0.content: must be a string or an array of content blocks"},
		{"block not an object", req(`"messages":[{"role":"user","content":[5]}]`), "messages.0.content.0: must be an object, got a number"},
		{"text not a string", req(`"messages":[{"role":"user","content":[{"type":"text","text":5}]}]`), "messages.0.content.0.text: must be a string"},
		{"system wrong type", req(`"system":5,"messages":[{"role":"user","content":"q"}]`), "system: must be a string or an array of content blocks"},
		{"tool_use without id", req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","name":"T","input":{}}]}]`), "messages.1.content.0.id: tool_use requires an id"},
		{"tool_use without name", req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","input":{}}]}]`), "messages.1.content.0.name: tool_use requires a name"},
		{"tool_use input not an object", req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"T","input":"x"}]}]`), "messages.1.content.0.input: must be an object, got a string"},
		{"tool_result for no tool_use", req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"x","content":"r"}]}]`), `messages.2.content.1: tool_result names tool_use_id "x" that no earlier tool_use has`},
		{"tool_result before its tool_use", req(`"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]},` + tu + `]`), `messages.0.content.0: tool_result names tool_use_id "t1" that no earlier tool_use has`},
		{"tool_result without id", req(`"messages":[{"role":"user","content":"q"},` + tu + `,{"role":"user","content":[{"type":"tool_result","content":"r"}]}]`), "messages.2.content.0.tool_use_id: required"},
		{"tool_result in an assistant turn", req(`"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"tool_result","tool_use_id":"t1"}]}]`), "messages.1.content.0: tool_result blocks belong in user messages"},
		{"tool_use in a user turn", req(`"messages":[{"role":"user","content":[{"type":"tool_use","id":"t1","name":"T","input":{}}]}]`), "messages.0.content.0: tool_use blocks belong in assistant messages"},
		{"image bad base64", req(`"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]}]`), "messages.0.content.0.source.data: invalid base64 data"},
		{"image base64 without media type", req(`"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"iVBO"}}]}]`), "messages.0.content.0.source.media_type: required"},
		{"image file source", req(`"messages":[{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"file_1"}}]}]`), "messages.0.content.0.source: file sources (file_id) can't be read by this backend"},
		{"image without source", req(`"messages":[{"role":"user","content":[{"type":"image"}]}]`), "messages.0.content.0.source: required"},
		{"image bad in a tool result", req(`"messages":[{"role":"user","content":"q"},` + tu + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"%%%%"}}]}]}]`), "messages.2.content.0.content.0.source.data: invalid base64 data"},
		{"PDF document", req(`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}]}]`), "messages.0.content.0: PDF documents can't be read by this backend"},
		{"PDF by URL", req(`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}}]}]`), "messages.0.content.0: documents by URL (PDF) can't be read by this backend"},
		{"file document", req(`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_1"}}]}]`), "messages.0.content.0: file sources (file_id) can't be read by this backend"},
		{"tool without name", req(`"messages":[{"role":"user","content":"q"}],"tools":[{"input_schema":{"type":"object"}}]`), "tools.0.name: required"},
		{"tool_choice tool without name", req(`"messages":[{"role":"user","content":"q"}],"tools":[{"name":"T","input_schema":{}}],"tool_choice":{"type":"tool"}`), `tool_choice.name: required`},
		{"tool_choice unknown", req(`"messages":[{"role":"user","content":"q"}],"tools":[{"name":"T","input_schema":{}}],"tool_choice":{"type":"sometimes"}`), `tool_choice.type: must be "auto", "any", "tool" or "none", got "sometimes"`},
		{"temperature not a number", req(`"messages":[{"role":"user","content":"q"}],"temperature":"hot"`), "temperature: must be a number, got a string"},
		{"stop_sequences not strings", req(`"messages":[{"role":"user","content":"q"}],"stop_sequences":[1]`), "stop_sequences.0: must be a string, got a number"},
		{"user_id not a string", req(`"messages":[{"role":"user","content":"q"}],"metadata":{"user_id":5}`), "metadata.user_id: must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MessagesOnChatRequest([]byte(tt.body), resolverFor(tgtPlain))
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want a *RequestError", err, err)
			}
			if !strings.Contains(re.Msg, tt.want) {
				t.Errorf("error %q does not say %q", re.Msg, tt.want)
			}
		})
	}
}

type unknownAlias struct{ alias string }

func (e *unknownAlias) Error() string { return "NotFoundError: " + e.alias }

func TestMessagesToChatResolver(t *testing.T) {
	var asked string
	_, err := MessagesOnChatRequest([]byte(req(`"messages":[{"role":"user","content":"q"}]`)), func(alias string) (Target, error) {
		asked = alias
		return Target{}, fmt.Errorf("routing: %w", &unknownAlias{alias})
	})
	var ua *unknownAlias
	if !errors.As(err, &ua) || ua.alias != "a" || asked != "a" {
		t.Fatalf("err = %v; want the resolver's error for alias %q (asked %q)", err, "a", asked)
	}
	var re *RequestError
	if errors.As(err, &re) {
		t.Errorf("a resolver error must not look like a bad request: %v", err)
	}

	// A bad body is reported before the alias is resolved (the empty
	// alias asks for the client's memo only).
	called := false
	_, err = MessagesOnChatRequest([]byte(`{"model":"a"`), func(alias string) (Target, error) { called = called || alias != ""; return tgtPlain, nil })
	if !errors.As(err, &re) || called {
		t.Errorf("malformed body: err = %v, resolver called = %v", err, called)
	}

	// MessagesOnChatStream and Target come back.
	br := toChat(t, req(`"stream":true,"messages":[{"role":"user","content":"q"}]`), Target{BackendModel: "qwen3"})
	if !br.Stream || br.Target.BackendModel != "qwen3" || br.Target.Alias != "a" {
		t.Errorf("BackendRequest = %+v", br)
	}
	if br := toChat(t, req(`"messages":[{"role":"user","content":"q"}]`), tgtPlain); br.Stream {
		t.Error("Stream true for a request without stream")
	}
}

// The estimate grows with the prompt and lands near CountTokens on a mix
// of prose and code.
func TestMessagesToChatInputTokens(t *testing.T) {
	var long strings.Builder
	for _, name := range []string{"english.txt", "code.go.txt", "code.py.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tokens", name))
		if err != nil {
			t.Fatal(err)
		}
		long.Write(b)
	}
	text, _ := json.Marshal(long.String())
	small := toChat(t, req(`"messages":[{"role":"user","content":"hello there"}]`), tgtPlain)
	body := req(`"messages":[{"role":"user","content":` + string(text) + `}]`)
	big := toChat(t, body, tgtPlain)
	if small.InputTokens >= big.InputTokens {
		t.Fatalf("InputTokens small %d >= big %d", small.InputTokens, big.InputTokens)
	}
	want, err := CountTokens([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if d := float64(big.InputTokens-want) / float64(want); d < -0.2 || d > 0.2 {
		t.Errorf("InputTokens %d vs CountTokens %d: off by %.0f%%", big.InputTokens, want, 100*d)
	}
}
