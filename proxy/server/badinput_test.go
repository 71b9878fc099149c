package server_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
)

// badCase is a request the proxy must refuse with a clean 4xx in the
// endpoint's own error shape, without bothering the backend.
type badCase struct {
	name    string
	path    string
	method  string // default POST
	body    string
	header  []string // pairs; a value "" deletes the header
	addAuth bool     // a second Authorization header
	status  int
	typ     string // error.type
	message string // in error.message
	backend bool   // the backend answers it (pass-through): it may see the request
}

// nested returns a JSON value nested depth arrays deep.
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func badCases() []badCase {
	const msgs = "/v1/messages"
	const chat = "/v1/chat/completions"
	invalidUTF8 := "{\"model\":\"local-model\",\"max_tokens\":32,\"messages\":[{\"role\":\"user\",\"content\":\"bad \xff\xfe bytes\"}]}"
	toolTurn := func(use, result string) string {
		return `{"model":"local-model","max_tokens":32,"messages":[
			{"role":"user","content":"run it"},
			{"role":"assistant","content":[` + use + `]},
			{"role":"user","content":[` + result + `]}]}`
	}
	image := func(data string) string {
		return `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":[
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}},
			{"type":"text","text":"what is it"}]}]}`
	}
	return []badCase{
		// Malformed JSON.
		{name: "messages/malformed JSON", path: msgs, body: `{"model":"local-model","messages":[`, status: 400, typ: "invalid_request_error", message: "malformed JSON"},
		{name: "chat/malformed JSON", path: chat, body: `{"model":"local-model","messages":[`, status: 400, typ: "invalid_request_error", message: "malformed JSON"},
		{name: "messages/not an object", path: msgs, body: `["model"]`, status: 400, typ: "invalid_request_error"},
		{name: "chat/not an object", path: chat, body: `["model"]`, status: 400, typ: "invalid_request_error"},
		{name: "messages/trailing garbage", path: msgs, body: goodMessages + `}`, status: 400, typ: "invalid_request_error"},
		{name: "chat/trailing garbage", path: chat, body: goodChat + `}`, status: 400, typ: "invalid_request_error"},
		{name: "messages/empty body", path: msgs, body: ``, status: 400, typ: "invalid_request_error", message: "empty"},
		{name: "chat/empty body", path: chat, body: ``, status: 400, typ: "invalid_request_error", message: "empty"},
		// Wrong JSON types.
		{name: "messages/messages is a string", path: msgs, body: `{"model":"local-model","max_tokens":32,"messages":"hi"}`, status: 400, typ: "invalid_request_error", message: "messages"},
		{name: "messages/max_tokens is a string", path: msgs, body: `{"model":"local-model","max_tokens":"32","messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "max_tokens"},
		{name: "messages/model is a number", path: msgs, body: `{"model":5,"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "model"},
		{name: "messages/content is a number", path: msgs, body: `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":5}]}`, status: 400, typ: "invalid_request_error", message: "content"},
		{name: "messages/stream is a string", path: msgs, body: `{"model":"local-model","max_tokens":32,"stream":"yes","messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "stream"},
		{name: "chat/messages is a string", path: chat, body: `{"model":"local-model","messages":"hi"}`, status: 400, typ: "invalid_request_error", message: "messages"},
		{name: "chat/model is a number", path: chat, body: `{"model":5,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "model"},
		{name: "chat/stream is a string", path: chat, body: `{"model":"local-model","stream":"yes","messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "stream"},
		// Empty messages, missing model.
		{name: "messages/empty messages", path: msgs, body: `{"model":"local-model","max_tokens":32,"messages":[]}`, status: 400, typ: "invalid_request_error", message: "messages"},
		{name: "chat/empty messages", path: chat, body: `{"model":"local-model","messages":[]}`, status: 400, typ: "invalid_request_error", message: "messages: must not be empty"},
		{name: "chat/empty messages, spaced", path: chat, body: `{"model":"local-model","messages":[ ]}`, status: 400, typ: "invalid_request_error", message: "messages: must not be empty"},
		{name: "messages/missing model", path: msgs, body: `{"max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "model"},
		{name: "chat/missing model", path: chat, body: `{"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "model"},
		{name: "count_tokens/missing model", path: "/v1/messages/count_tokens", body: `{"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "model"},
		// Invalid UTF-8.
		{name: "messages/invalid UTF-8", path: msgs, body: invalidUTF8, status: 400, typ: "invalid_request_error", message: "UTF-8"},
		{name: "chat/invalid UTF-8", path: chat, body: invalidUTF8, status: 400, typ: "invalid_request_error", message: "UTF-8"},
		// Deeply nested JSON, in a member the proxy otherwise ignores.
		{name: "messages/deeply nested", path: msgs, body: `{"model":"local-model","max_tokens":32,"context_management":` + nested(100000) + `,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "depth"},
		{name: "chat/deeply nested", path: chat, body: `{"model":"local-model","logit_bias":` + nested(100000) + `,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "depth"},
		{name: "messages/deeply nested tool input", path: msgs, body: toolTurn(`{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"a":`+nested(100000)+`}}`, `{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}`), status: 400, typ: "invalid_request_error", message: "depth"},
		// Content blocks.
		{name: "messages/tool_use without id", path: msgs, body: toolTurn(`{"type":"tool_use","name":"Bash","input":{}}`, `{"type":"text","text":"done"}`), status: 400, typ: "invalid_request_error", message: "id"},
		{name: "messages/tool_result naming no tool_use", path: msgs, body: toolTurn(`{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}`, `{"type":"tool_result","tool_use_id":"toolu_other","content":"ok"}`), status: 400, typ: "invalid_request_error", message: "toolu_other"},
		{name: "messages/tool_result with no tool_use at all", path: msgs, body: `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"ok"}]}]}`, status: 400, typ: "invalid_request_error", message: "toolu_9"},
		{name: "messages/bad base64 image", path: msgs, body: image("not base64!!"), status: 400, typ: "invalid_request_error", message: "base64"},
		{name: "messages/bad base64 padding", path: msgs, body: image("iVBORw0KGgo"), status: 400, typ: "invalid_request_error", message: "base64"},
		// max_tokens.
		{name: "messages/zero max_tokens", path: msgs, body: `{"model":"local-model","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "max_tokens"},
		{name: "messages/negative max_tokens", path: msgs, body: `{"model":"local-model","max_tokens":-5,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "max_tokens"},
		{name: "messages/missing max_tokens", path: msgs, body: `{"model":"local-model","messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "max_tokens"},
		{name: "chat/zero max_tokens", path: chat, body: `{"model":"local-model","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "max_tokens: must be at least 1"},
		{name: "chat/negative max_completion_tokens", path: chat, body: `{"model":"local-model","max_completion_tokens":-5,"messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "max_completion_tokens: must be at least 1"},
		{name: "chat/max_tokens is a string", path: chat, body: `{"model":"local-model","max_tokens":"32","messages":[{"role":"user","content":"hi"}]}`, status: 400, typ: "invalid_request_error", message: "max_tokens: must be a number"},
		// Headers.
		{name: "messages/two Authorization headers", path: msgs, body: goodMessages, addAuth: true, status: 400, typ: "invalid_request_error", message: "one Authorization"},
		{name: "chat/two Authorization headers", path: chat, body: goodChat, addAuth: true, status: 400, typ: "invalid_request_error", message: "one Authorization"},
		{name: "messages/multipart", path: msgs, body: goodMessages, header: []string{"Content-Type", "multipart/form-data; boundary=x"}, status: 415, typ: "invalid_request_error", message: "Content-Type"},
		{name: "chat/xml", path: chat, body: goodChat, header: []string{"Content-Type", "application/xml"}, status: 415, typ: "invalid_request_error", message: "Content-Type"},
		{name: "chat/unparsable content type", path: chat, body: goodChat, header: []string{"Content-Type", "application/json; ===="}, status: 415, typ: "invalid_request_error", message: "Content-Type"},
		// Methods.
		{name: "messages/GET", path: msgs, method: http.MethodGet, status: 405, typ: "invalid_request_error", message: "POST"},
		{name: "messages/PUT", path: msgs, method: http.MethodPut, body: goodMessages, status: 405, typ: "invalid_request_error", message: "POST"},
		{name: "count_tokens/GET", path: "/v1/messages/count_tokens", method: http.MethodGet, status: 405, typ: "invalid_request_error", message: "POST"},
		{name: "chat/GET", path: chat, method: http.MethodGet, status: 405, typ: "invalid_request_error", message: "POST"},
		{name: "chat/DELETE", path: chat, method: http.MethodDelete, status: 405, typ: "invalid_request_error", message: "POST"},
		{name: "chat/PATCH", path: chat, method: http.MethodPatch, body: goodChat, status: 405, typ: "invalid_request_error", message: "POST"},
		{name: "models/POST", path: "/v1/models", method: http.MethodPost, body: `{}`, status: 405, typ: "invalid_request_error", message: "GET"},
	}
}

// checkErrorShape asserts an error body in the endpoint's own shape:
// {"type":"error","error":{"type","message"}} for Messages endpoints,
// {"error":{"message","type"}} for Chat ones.
func checkErrorShape(t *testing.T, path string, body []byte, wantType, wantMessage string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("error body is not JSON: %q", body)
	}
	var e struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(m["error"], &e); err != nil || e.Message == "" {
		t.Fatalf("error body lacks error.message: %s", body)
	}
	if strings.HasPrefix(path, "/v1/messages") {
		if string(m["type"]) != `"error"` || len(m) != 2 {
			t.Errorf("not the Messages error shape: %s", body)
		}
	} else if len(m) != 1 {
		t.Errorf("not the Chat error shape: %s", body)
	}
	if e.Type != wantType {
		t.Errorf("error.type %q, want %q: %s", e.Type, wantType, body)
	}
	if !strings.Contains(strings.ToLower(e.Message), strings.ToLower(wantMessage)) {
		t.Errorf("error.message %q does not mention %q", e.Message, wantMessage)
	}
}

// TestBadInput sends each kind of bad request to the endpoint it targets:
// each gets a 4xx in that endpoint's error shape, the backend never sees
// it, and the proxy goes on serving good requests.
func TestBadInput(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, tc := range badCases() {
		t.Run(tc.name, func(t *testing.T) {
			h.backend.Reset()
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			resp, b := h.do(method, tc.path, tc.body, tc.header, tc.addAuth)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.status, b)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if resp.StatusCode == 405 && resp.Header.Get("Allow") == "" {
				t.Error("405 without an Allow header")
			}
			checkErrorShape(t, tc.path, b, tc.typ, tc.message)
			if len(b) > 2048 {
				t.Errorf("a %d-byte error body: %.200s…", len(b), b)
			}
			seen := h.backend.Requests()
			if n := len(seen); n != 0 && !tc.backend {
				t.Errorf("the backend saw %d requests for a bad one", n)
			}
			h.stillServing()
		})
	}
}

// TestBadInputContentTypesAccepted: the types clients send JSON under
// without saying so are accepted (curl -d sends form-urlencoded).
func TestBadInputContentTypesAccepted(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "application/vnd.api+json", "application/x-www-form-urlencoded", "text/plain"} {
		for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
			resp, b := h.do(http.MethodPost, path, goodChat, []string{"Content-Type", ct}, false)
			if resp.StatusCode != 200 {
				t.Errorf("%s with Content-Type %q: %d %s", path, ct, resp.StatusCode, b)
			}
		}
	}
}

// TestBadInputUnknownBlockIgnored: a content block of a type the proxy
// does not know is dropped, not fatal; the rest of the turn reaches the
// backend.
func TestBadInputUnknownBlockIgnored(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	body := `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":[
		{"type":"hologram","payload":{"x":1}},
		{"type":"text","text":"keep this text"},
		{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}]}]}`
	resp, b := h.do(http.MethodPost, "/v1/messages", body, nil, false)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "keep this text") {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d backend requests", len(reqs))
	}
	sent, _ := json.Marshal(reqs[0]["messages"])
	if !strings.Contains(string(sent), "keep this text") || strings.Contains(string(sent), "hologram") || strings.Contains(string(sent), "srvtoolu_1") {
		t.Errorf("backend messages %s", sent)
	}
}

// TestBadInputTooLarge: a body over general_settings.max_request_bytes
// gets 413 in the endpoint's shape, announced by Content-Length or not
// (chunked).
func TestBadInputTooLarge(t *testing.T) {
	h := newHarness(t, harnessOptions{settings: "  enable_vendora_pass_through: true\n  max_request_bytes: 4096\n"})
	big := `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`
	for _, tc := range []struct{ path, typ string }{{"/v1/messages", "request_too_large"}, {"/v1/chat/completions", "invalid_request_error"}, {"/v1/messages/count_tokens", "request_too_large"}} {
		for _, chunked := range []bool{false, true} {
			h.backend.Reset()
			req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+tc.path, strings.NewReader(big))
			if chunked {
				req, _ = http.NewRequest(http.MethodPost, h.proxy.URL+tc.path, io.MultiReader(strings.NewReader(big)))
				req.ContentLength = -1
			}
			req.Header.Set("Authorization", "Bearer "+clientKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b := drain(t, resp)
			if resp.StatusCode != 413 {
				t.Fatalf("%s chunked=%v: %d %s", tc.path, chunked, resp.StatusCode, b)
			}
			checkErrorShape(t, tc.path, []byte(b), tc.typ, "4096 bytes")
			if !strings.Contains(b, "max_request_bytes") {
				t.Errorf("413 does not name the setting: %s", b)
			}
			if n := len(h.backend.Requests()); n != 0 {
				t.Errorf("backend saw %d requests", n)
			}
		}
	}
	// Just under the limit passes.
	ok := `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"` + strings.Repeat("y", 3000) + `"}]}`
	if resp, b := h.do(http.MethodPost, "/v1/messages", ok, nil, false); resp.StatusCode != 200 {
		t.Errorf("a body under the limit: %d %s", resp.StatusCode, b)
	}
	h.stillServing()
}

// TestBadInputTooLargeDefault: the default limit is 32 MB, the Messages
// API's own: 32 MB passes the size check, one byte more does not.
func TestBadInputTooLargeDefault(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	const limit = 32 << 20
	head := `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	// An alias no route has: past the size check, the proxy answers 404
	// without asking the backend.
	at := strings.Replace(head, "local-model", "no-such-model", 1)
	at += strings.Repeat("z", limit-len(at)-len(tail)) + tail
	resp, b := h.do(http.MethodPost, "/v1/chat/completions", at, nil, false)
	if resp.StatusCode != 404 {
		t.Fatalf("a body of exactly 32 MB: %d %.200s, want 404 (past the size check)", resp.StatusCode, b)
	}
	over := head + strings.Repeat("z", limit+1-len(head)-len(tail)) + tail
	resp, b = h.do(http.MethodPost, "/v1/messages", over, nil, false)
	if resp.StatusCode != 413 {
		t.Fatalf("32 MB + 1: %d %.200s", resp.StatusCode, b)
	}
	checkErrorShape(t, "/v1/messages", b, "request_too_large", "33554432 bytes")
}

// TestBadInputSDKErrors: the official SDKs read the proxy's 400s as API
// errors of the right type.
func TestBadInputSDKErrors(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	params := userText("local-model", "hi")
	params.MaxTokens = 0
	_, err := messagesClient(h, clientKey).Messages.New(t.Context(), params)
	var mErr *anthropic.Error
	if !errors.As(err, &mErr) || mErr.StatusCode != 400 || !strings.Contains(mErr.RawJSON(), `"invalid_request_error"`) {
		t.Errorf("Messages SDK, max_tokens 0: %v", err)
	}
	cp := chatParams("local-model", "hi")
	cp.Messages = nil
	_, err = chatClient(h, clientKey).Chat.Completions.New(t.Context(), cp)
	var cErr *openai.Error
	if !errors.As(err, &cErr) || cErr.StatusCode != 400 || cErr.Type != "invalid_request_error" {
		t.Errorf("Chat SDK, no messages: %v", err)
	}
}
