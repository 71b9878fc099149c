package translate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// clientBody returns the body of a captured coding-client request,
// compacted as the client sends it.
func clientBody(t testing.TB, name string) []byte {
	t.Helper()
	c, err := fixtures.ClientCapture(name)
	return compacted(t, c.Body, err)
}

// compacted returns a fixture read with error err, compacted.
func compacted(t testing.TB, raw []byte, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	v := jsontext.Value(bytes.Clone(raw))
	if err := v.Compact(); err != nil {
		t.Fatal(err)
	}
	return v
}

// golden compares got with the golden file at path; with -update it
// writes the file first.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if updatingGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update after checking the change):\n got:\n%s", path, got)
	}
}

// Targets of the golden tests: a local model without a system role and a
// 32k output limit (the common setup), and one with a system role and
// reasoning effort.
var goldenTargets = []struct {
	suffix string
	target Target
}{
	{"nosystem", Target{BackendModel: "qwen3-coder", SupportsSystemMessage: false, MaxOutputTokens: 32768}},
	{"system-reasoning", Target{BackendModel: "gpt-oss-20b", SupportsSystemMessage: true, SupportsReasoningEffort: true}},
}

// TestMessagesToChatGolden translates every captured client request and
// compares the Chat body (indented) with testdata/request/NAME.SUFFIX.json.
// go test ./proxy/translate -run Golden -update rewrites them.
func TestMessagesToChatGolden(t *testing.T) {
	requestGolden(t, filepath.Join("testdata", "request"), fixtures.ClientRequests(), 3, clientBody, MessagesOnChatRequest)
}

// requestGolden translates each named fixture (at least `least` of them; body
// reads one) for every golden target and compares the Chat body (indented)
// with dir/NAME.SUFFIX.json.
func requestGolden(t *testing.T, dir string, names []string, least int, body func(testing.TB, string) []byte, translate func([]byte, Resolver) (BackendRequest, error)) {
	if len(names) < least {
		t.Fatalf("only %d fixtures", len(names))
	}
	for _, name := range names {
		for _, gt := range goldenTargets {
			t.Run(name+"/"+gt.suffix, func(t *testing.T) {
				br, err := translate(body(t, name), resolverFor(gt.target))
				if err != nil {
					t.Fatal(err)
				}
				got := jsontext.Value(bytes.Clone(br.Body))
				if err := got.Indent(); err != nil {
					t.Fatalf("output is not valid JSON: %v", err)
				}
				golden(t, filepath.Join(dir, strings.TrimSuffix(name, ".json")+"."+gt.suffix+".json"), append(got, '\n'))
			})
		}
	}
}

// TestMessagesToChatFixtures checks the translated client requests rule by
// rule, independently of the golden files.
func TestMessagesToChatFixtures(t *testing.T) {
	for _, name := range fixtures.ClientRequests() {
		body := clientBody(t, name)
		var in messages.Request
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatal(err)
		}
		for _, gt := range goldenTargets {
			t.Run(name+"/"+gt.suffix, func(t *testing.T) {
				br, err := MessagesOnChatRequest(body, resolverFor(gt.target))
				if err != nil {
					t.Fatal(err)
				}
				var out chat.Request
				if err := json.Unmarshal(br.Body, &out); err != nil {
					t.Fatalf("output: %v", err)
				}
				var top map[string]jsontext.Value
				if err := json.Unmarshal(br.Body, &top); err != nil {
					t.Fatal(err)
				}
				if out.Model != gt.target.BackendModel {
					t.Errorf("model = %q", out.Model)
				}
				if !br.Stream || !out.Stream || out.StreamOptions == nil || !out.StreamOptions.IncludeUsage {
					t.Errorf("stream = %v / %v, stream_options = %+v", br.Stream, out.Stream, out.StreamOptions)
				}

				// The billing header never reaches the backend.
				if bytes.Contains(br.Body, []byte("x-anthropic-billing-header")) {
					t.Error("billing-header block forwarded")
				}

				// System text: the system prompt and each mid-list system turn.
				midSystem := 0
				for _, m := range in.Messages {
					if m.Role == "system" {
						midSystem++
					}
				}
				if midSystem == 0 {
					t.Fatal("fixture has no mid-list system turn; the test lost its point")
				}
				roles := make([]string, len(out.Messages))
				for i, m := range out.Messages {
					roles[i] = m.Role
				}
				systemMsgs := 0
				for _, r := range roles {
					if r == "system" {
						systemMsgs++
					}
				}
				wrapped := bytes.Count(br.Body, []byte(`<system>\n`))
				if gt.target.SupportsSystemMessage {
					if systemMsgs != 1+midSystem || roles[0] != "system" {
						t.Errorf("roles %v: want a leading system message and %d mid-list ones", roles, midSystem)
					}
				} else {
					if systemMsgs != 0 {
						t.Errorf("roles %v: a system message reached a backend without a system role", roles)
					}
					if wrapped != 1+midSystem {
						t.Errorf("%d wrapped system texts, want %d", wrapped, 1+midSystem)
					}
					if roles[0] != "user" || !bytes.HasPrefix(out.Messages[0].Content, []byte(`[{"type":"text","text":"<system>\n`)) {
						t.Errorf("first message %s %.80s: want the system prompt at the top of the first user turn", roles[0], out.Messages[0].Content)
					}
				}
				for i := 1; i < len(roles); i++ {
					if roles[i] == roles[i-1] && roles[i] != "tool" {
						t.Errorf("roles %v: %s twice in a row at %d", roles, roles[i], i)
					}
				}

				// Tools: all with an input_schema, schema bytes unchanged.
				var schemas []string
				for _, tl := range in.Tools {
					if len(tl.InputSchema) > 0 {
						schemas = append(schemas, tl.Name)
					}
				}
				if len(in.Tools) != 12 || len(schemas) != 12 || !slices.Contains(schemas, "DeferredToolPlaceholder") {
					t.Fatalf("fixture tools %d, with input_schema %v", len(in.Tools), schemas)
				}
				if len(out.Tools) != len(schemas) {
					t.Fatalf("%d tools out, want %d", len(out.Tools), len(schemas))
				}
				for i, tl := range out.Tools {
					if tl.Type != "function" || tl.Function.Name != in.Tools[i].Name {
						t.Errorf("tool %d = %s %q, want function %q", i, tl.Type, tl.Function.Name, in.Tools[i].Name)
					}
					if !bytes.Equal(tl.Function.Parameters, in.Tools[i].InputSchema) {
						t.Errorf("tool %s: parameters differ from input_schema", tl.Function.Name)
					}
				}
				if bytes.Contains(br.Body, []byte("defer_loading")) {
					t.Error("defer_loading forwarded")
				}

				// max_tokens 128000 clamped to the model's limit.
				if *in.MaxTokens != 128000 {
					t.Fatalf("fixture max_tokens %d", *in.MaxTokens)
				}
				wantMax := int64(128000)
				if gt.target.MaxOutputTokens > 0 {
					wantMax = int64(gt.target.MaxOutputTokens)
				}
				if out.MaxTokens == nil || *out.MaxTokens != wantMax {
					t.Errorf("max_tokens = %v, want %d", out.MaxTokens, wantMax)
				}

				// Fields the backend can't use stay behind.
				for _, k := range []string{"context_management", "output_config", "thinking", "metadata", "system", "stop_sequences"} {
					if _, ok := top[k]; ok {
						t.Errorf("%s forwarded", k)
					}
				}
				if _, ok := top["reasoning_effort"]; ok != gt.target.SupportsReasoningEffort {
					t.Errorf("reasoning_effort present = %v, want %v", ok, gt.target.SupportsReasoningEffort)
				}
				if gt.target.SupportsReasoningEffort && out.ReasoningEffort != "medium" {
					t.Errorf("reasoning_effort = %q, want medium (output_config.effort)", out.ReasoningEffort)
				}
				if !bytes.Equal(out.User, in.Metadata.UserID) {
					t.Errorf("user = %s, want metadata.user_id", out.User)
				}

				// The tool turn: tool_use → tool_calls, tool_result → tool message.
				if name == "03-tool-result-turn.json" {
					var call *chat.ToolCall
					var tool *chat.RequestMsg
					for i := range out.Messages {
						m := &out.Messages[i]
						if m.Role == "assistant" && len(m.ToolCalls) > 0 {
							call = &m.ToolCalls[0]
						}
						if m.Role == "tool" {
							tool = m
						}
					}
					if call == nil || call.ID != "toolu_01" || call.Function.Name != "Bash" ||
						call.Function.Arguments != `{"command":"echo hello-from-tool","description":"print"}` {
						t.Errorf("tool call = %+v", call)
					}
					if tool == nil || tool.ToolCallID != "toolu_01" || string(tool.Content) != `"hello-from-tool"` {
						t.Errorf("tool message = %+v", tool)
					}
					if roles[len(roles)-1] != "tool" || roles[len(roles)-2] != "assistant" {
						t.Errorf("roles %v: want the conversation to end assistant, tool", roles)
					}
				}
			})
		}
	}
}
