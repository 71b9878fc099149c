package translate

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// Seeds beyond the captured requests: one of each block kind and shape.
var fuzzMessagesSeeds = []string{
	req(`"system":"S","messages":[{"role":"user","content":"hi"},{"role":"system","content":"n"}]`),
	req(`"messages":[{"role":"user","content":"run"},{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}],"is_error":true}]}]`),
	req(`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","data":"d"}},{"type":"image","source":{"type":"url","url":"https://x"}},{"type":"thinking","thinking":"t"}]}],"tools":[{"name":"A","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"A","disable_parallel_tool_use":true},"stop_sequences":["x"],"temperature":1,"top_k":3,"metadata":{"user_id":"u"},"thinking":{"type":"enabled","budget_tokens":2000},"stream":true`),
	req(`"messages":[{"role":"user","content":"\u00e9\ud83d\ude00 \\ \" </"}]`),
}

// fuzzOutput checks what a request translator made of a fuzzed body: an
// error must be a *RequestError (fuzzOutput then reports false: there is no
// output to check); otherwise the body must be valid JSON and, unless out
// is nil, decode into out. opts are the JSON options (AllowDuplicateNames
// where the translator keeps the client's bytes).
func fuzzOutput(t *testing.T, br BackendRequest, err error, out any, opts ...jsontext.Options) bool {
	t.Helper()
	if err != nil {
		var re *RequestError
		if !errors.As(err, &re) {
			t.Fatalf("error is not a *RequestError: %v", err)
		}
		return false
	}
	if !jsontext.Value(br.Body).IsValid(opts...) {
		t.Fatalf("invalid JSON out:\n%s", br.Body)
	}
	if out != nil {
		if err := json.Unmarshal(br.Body, out, opts...); err != nil {
			t.Fatalf("output does not decode as %T: %v\n%s", out, err, br.Body)
		}
	}
	return true
}

// checkChatRoles checks a translated Chat request's roles: no system
// message for a backend without a system role, and no two turns in a row
// of the same role but tool.
func checkChatRoles(t *testing.T, out *chat.Request, systemRole bool, body []byte) {
	t.Helper()
	for i, m := range out.Messages {
		if !systemRole && m.Role == "system" {
			t.Fatalf("system message %d reached a backend without a system role", i)
		}
		if i > 0 && m.Role == out.Messages[i-1].Role && m.Role != "tool" {
			t.Fatalf("roles do not alternate at %d: %s", i, body)
		}
	}
}

func FuzzMessagesToChat(f *testing.F) {
	for _, name := range fixtures.ClientRequests() {
		f.Add(clientBody(f, name), false, 32768)
	}
	for _, s := range fuzzMessagesSeeds {
		f.Add([]byte(s), false, 0)
		f.Add([]byte(s), true, 10)
	}
	f.Fuzz(func(t *testing.T, body []byte, systemRole bool, maxOut int) {
		tgt := Target{BackendModel: "m", SupportsSystemMessage: systemRole, SupportsReasoningEffort: true, MaxOutputTokens: maxOut}
		br, err := MessagesOnChatRequest(body, resolverFor(tgt))
		var out chat.Request
		// Tool schemas go as the client wrote them, repeated names too.
		if !fuzzOutput(t, br, err, &out, jsontext.AllowDuplicateNames(true)) {
			return
		}
		checkChatRoles(t, &out, systemRole, br.Body)
		if maxOut > 0 && (out.MaxTokens == nil || *out.MaxTokens > int64(maxOut)) {
			t.Fatalf("max_tokens %v over the limit %d", out.MaxTokens, maxOut)
		}
	})
}

func FuzzChatToChat(f *testing.F) {
	for _, name := range fixtures.ClientRequests() {
		br, err := MessagesOnChatRequest(clientBody(f, name), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(br.Body, false)
	}
	f.Add([]byte(`{"model":"a","messages":[{"role":"system","content":[{"type":"text","text":"S"}]},{"role":"user","content":"q","name":"n"},{"role":"developer","content":"d"}],"max_tokens":99999}`), false)
	f.Fuzz(func(t *testing.T, body []byte, systemRole bool) {
		br, err := ChatOnChatRequest(body, resolverFor(Target{BackendModel: "m", SupportsSystemMessage: systemRole, MaxOutputTokens: 100}))
		if !fuzzOutput(t, br, err, nil, jsontext.AllowDuplicateNames(true)) || systemRole {
			return
		}
		var out struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if json.Unmarshal(br.Body, &out, jsontext.AllowDuplicateNames(true)) == nil {
			for _, m := range out.Messages {
				if m.Role == "system" || m.Role == "developer" {
					t.Fatalf("%s message reached a backend without a system role:\n%s", m.Role, br.Body)
				}
			}
		}
	})
}

func FuzzChatToMessages(f *testing.F) {
	f.Add([]byte(chatResp(`{"role":"assistant","content":"Hello!","reasoning_content":"r","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`, `"tool_calls"`, "")))
	f.Add([]byte(chatResp(`{"role":"assistant","content":null}`, `"stop"`, `,"stop_reason":"END"`)))
	f.Add([]byte(`{"id":"x","model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":9}}}`))
	// Every chunk of the backend stream fixtures, and every chunk sample,
	// is a Chat-shaped object too.
	for _, data := range chunkData(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := MessagesOnChatResponse(body, "alias")
		if err != nil {
			return
		}
		if !jsontext.Value(out).IsValid() {
			t.Fatalf("invalid JSON out:\n%s", out)
		}
		var m messages.Response
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("output does not decode as a message: %v\n%s", err, out)
		}
		if m.Type != "message" || m.Model != "alias" || m.StopReason == nil || m.Content == nil {
			t.Fatalf("incomplete message: %s", out)
		}
		if m.Usage.InputTokens < 0 {
			t.Fatalf("negative input_tokens: %s", out)
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" && jsontext.Value(b.Input).Kind() != '{' {
				t.Fatalf("tool_use input is not an object: %s", out)
			}
		}
	})
}

// chunkData returns the data of every chunk of the backend stream
// fixtures.
func chunkData(t testing.TB) [][]byte {
	var out [][]byte
	for _, name := range fixtures.BackendStreams() {
		b, err := fixtures.Backend(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && !bytes.Equal(bytes.TrimSpace(data), doneData) {
				out = append(out, bytes.TrimSpace(data))
			}
		}
	}
	return out
}
