package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The backend's stream, in each protocol, says the backend key's text in
// its answer (text, tool arguments, and for Chat system_fingerprint): a
// model may well write it (with docs/configuration.md's Ollama example the key is
// "ollama"), and the coding client runs the tool call it gets.
var (
	keyText = "echo " + backendKey
	keyArgs = `{"command":"echo ` + backendKey + `"}`

	chatKeyStream = "" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"local-model","system_fingerprint":"fp_` + backendKey + `","choices":[{"index":0,"delta":{"role":"assistant","content":"` + keyText + `"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"local-model","system_fingerprint":"fp_` + backendKey + `","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"Bash","arguments":` + jsonString(keyArgs) + `}}]},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"local-model","system_fingerprint":"fp_` + backendKey + `","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}` + "\n\n" +
		"data: [DONE]\n\n"

	messagesKeyStream = "" +
		"event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"local-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}` + "\n\n" +
		"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + keyText + `"}}` + "\n\n" +
		"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n" +
		"event: content_block_start\ndata: " + `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}` + "\n\n" +
		"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":` + jsonString(keyArgs) + `}}` + "\n\n" +
		"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":1}` + "\n\n" +
		"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}` + "\n\n" +
		"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"
)

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// keyStreamBackend answers every request with stream, as an event stream.
func keyStreamBackend(stream string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	})
}

// TestModelOutputPassesUnaltered: a stream whose text and tool arguments
// hold the backend key's text reaches the client with that text unaltered
// on every streamed path (endpoint × backend protocol); the pass-through
// streams (Chat to a Chat backend, Messages to a Messages backend) byte
// for byte. Only what the proxy writes itself is kept free of the key.
func TestModelOutputPassesUnaltered(t *testing.T) {
	tool := `"tools":[{"name":"Bash","description":"run","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`
	chatTool := `"tools":[{"type":"function","function":{"name":"Bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]`
	respTool := `"tools":[{"type":"function","name":"Bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}]`
	requests := map[string]string{
		"/v1/messages":         `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"run it"}],` + tool + `}`,
		"/v1/chat/completions": `{"model":"local-model","stream":true,"messages":[{"role":"user","content":"run it"}],` + chatTool + `}`,
		"/v1/responses":        `{"model":"local-model","stream":true,"input":"run it",` + respTool + `}`,
	}
	for _, backend := range []struct {
		name   string
		native bool
		stream string
		same   string // the endpoint whose stream passes through as the backend sent it
	}{
		{"chat backend", false, chatKeyStream, "/v1/chat/completions"},
		{"messages backend", true, messagesKeyStream, "/v1/messages"},
	} {
		h := newHarness(t, harnessOptions{native: backend.native, backendURL: serveBackend(t, keyStreamBackend(backend.stream))})
		for _, path := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses"} {
			t.Run(backend.name+" "+path, func(t *testing.T) {
				resp := h.post(path, requests[path])
				b := readEvents(t, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("%d %s", resp.StatusCode, b)
				}
				if bytes.Contains(b, []byte("[redacted]")) {
					t.Errorf("the answer was altered:\n%s", b)
				}
				if path == backend.same && string(b) != backend.stream {
					t.Errorf("the stream did not pass through byte for byte:\n got %s\nwant %s", b, backend.stream)
				}
				text, args := streamedOutput(t, b)
				if !strings.Contains(text, keyText) {
					t.Errorf("the text %q lacks %q:\n%s", text, keyText, b)
				}
				if !strings.Contains(args, keyArgs) {
					t.Errorf("the tool arguments %q lack %q:\n%s", args, keyArgs, b)
				}
			})
		}
	}
}

// streamedOutput gathers, from the JSON of each data: line of a stream in
// any of the three formats, the strings that carry text (content, text,
// a Responses output_text delta) and those that carry tool arguments
// (arguments, partial_json, a function_call_arguments delta).
func streamedOutput(t *testing.T, stream []byte) (text, args string) {
	t.Helper()
	var tb, ab strings.Builder
	var walk func(v any, eventType string)
	walk = func(v any, eventType string) {
		switch v := v.(type) {
		case map[string]any:
			if typ, ok := v["type"].(string); ok {
				eventType = typ
			}
			for k, x := range v {
				s, isString := x.(string)
				switch {
				case isString && (k == "content" || k == "text"):
					tb.WriteString(s)
				case isString && (k == "arguments" || k == "partial_json"):
					ab.WriteString(s)
				case isString && k == "delta" && strings.Contains(eventType, "output_text"):
					tb.WriteString(s)
				case isString && k == "delta" && strings.Contains(eventType, "function_call_arguments"):
					ab.WriteString(s)
				default:
					walk(x, eventType)
				}
			}
		case []any:
			for _, x := range v {
				walk(x, eventType)
			}
		}
	}
	for line := range strings.Lines(string(stream)) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("a data line is not JSON: %v: %s", err, data)
		}
		walk(v, "")
	}
	return tb.String(), ab.String()
}
