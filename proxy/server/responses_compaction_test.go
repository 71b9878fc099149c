package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const compactionSettings = "  compaction_key: a-compaction-secret-of-this-deployment\n"

// conversation is a Responses input before a compaction: two user turns
// and the model's answer between them.
var conversation = []string{
	userItem("fix the parser in parse.go"),
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"I changed parse.go."}]}`,
	userItem("now the tests"),
}

func responsesBody(extra string, items ...string) string {
	return `{"model":"local-model","instructions":"Be brief.","store":false` + extra + `,"input":[` + strings.Join(items, ",") + `]}`
}

// compact asks h for a compaction of conversation (non-stream), with the
// request members extra (responsesBody), and returns the response object.
func compact(t *testing.T, h *harness, extra string) map[string]any {
	t.Helper()
	resp, b := h.do(http.MethodPost, "/v1/responses", responsesBody(extra, append(conversation, `{"type":"compaction_trigger"}`)...), nil, false)
	if resp.StatusCode != 200 {
		t.Fatalf("compaction: %d %s", resp.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func compactionOf(t *testing.T, output any) map[string]any {
	t.Helper()
	out, _ := output.([]any)
	var found []map[string]any
	for _, o := range out {
		if m, _ := o.(map[string]any); m["type"] == "compaction" {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one compaction item, got %d in %v", len(found), output)
	}
	return found[0]
}

// TestCompactionTrigger: a request ending in compaction_trigger gets
// exactly one output item, a compaction whose encrypted_content is sealed
// (the summary is not readable in it); the summary was asked of the
// alias's backend, without tools, and its tokens are the usage.
func TestCompactionTrigger(t *testing.T) {
	h := newHarness(t, harnessOptions{settings: compactionSettings})
	m := compact(t, h, shellTool)
	out := m["output"].([]any)
	if len(out) != 1 {
		t.Fatalf("output has %d items: %v", len(out), out)
	}
	item := compactionOf(t, out)
	sealed, _ := item["encrypted_content"].(string)
	if !strings.HasPrefix(sealed, "dgm1.") || strings.Contains(sealed, "stub") || strings.Contains(sealed, "parser") {
		t.Errorf("encrypted_content %q", sealed)
	}
	usage, _ := m["usage"].(map[string]any)
	if in, _ := usage["input_tokens"].(float64); in <= 0 {
		t.Errorf("usage %v: the summary's tokens are not counted", usage)
	}
	if outTok, _ := usage["output_tokens"].(float64); outTok <= 0 {
		t.Errorf("usage %v: no output tokens", usage)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 {
		t.Fatalf("backend requests: %d", len(reqs))
	}
	if _, ok := reqs[0]["tools"]; ok {
		t.Error("the summary request offered tools")
	}
	msgs := reqs[0]["messages"].([]any)
	lastMsg, _ := json.Marshal(msgs[len(msgs)-1])
	if !strings.Contains(string(lastMsg), "checkpoint summary") || !strings.Contains(string(msgs[1].(map[string]any)["content"].(string)), "fix the parser") {
		t.Errorf("summary request messages: %v", msgs)
	}

	// Streamed: the same one item, then response.completed.
	resp := h.post("/v1/responses", responsesBody(`,"stream":true`, append(conversation, `{"type":"compaction_trigger"}`)...))
	events := drain(t, resp)
	if strings.Count(events, "event: response.output_item.done") != 1 || !strings.Contains(events, `"type":"compaction"`) || !strings.HasSuffix(strings.TrimSpace(events), "}") || !strings.Contains(events, "event: response.completed") {
		t.Errorf("streamed compaction:\n%s", events)
	}
}

// TestCompactionItemReachesTheBackendAsItsSummary: a later request that
// carries the item gets the summary text in its place; a replica with the
// same config opens it; one with another key, a tampered item and an item
// of another server are 400 invalid_request_error, without a backend call.
func TestCompactionItemReachesTheBackendAsItsSummary(t *testing.T) {
	h := newHarness(t, harnessOptions{settings: compactionSettings})
	item := compactionOf(t, compact(t, h, shellTool)["output"])
	itemJSON, _ := json.Marshal(item)
	later := responsesBody("", userItem("fix the parser in parse.go"), string(itemJSON), userItem("what next?"))

	replica := newHarness(t, harnessOptions{settings: compactionSettings})
	for name, hh := range map[string]*harness{"same proxy": h, "replica": replica} {
		resp, b := hh.do(http.MethodPost, "/v1/responses", later, nil, false)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", name, resp.StatusCode, b)
		}
		reqs := hh.backendRequests()
		msgs, _ := json.Marshal(reqs[len(reqs)-1]["messages"])
		if !strings.Contains(string(msgs), "A summary of the conversation so far") || !strings.Contains(string(msgs), "stub-summary:") || strings.Contains(string(msgs), "dgm1.") {
			t.Errorf("%s: the backend got %s", name, msgs)
		}
	}

	sealed := item["encrypted_content"].(string)
	flip := byte('A')
	if sealed[len(sealed)-3] == 'A' {
		flip = 'B'
	}
	tampered := sealed[:len(sealed)-3] + string(flip) + sealed[len(sealed)-2:]
	other := newHarness(t, harnessOptions{settings: "  compaction_key: another-secret-entirely-000\n"})
	for _, c := range []struct {
		name string
		h    *harness
		item string
	}{
		{"another key", other, string(itemJSON)},
		{"tampered", h, `{"type":"compaction","encrypted_content":"` + tampered + `"}`},
		{"OpenAI's", h, `{"type":"compaction","encrypted_content":"gAAAAABo-opaque-openai-blob"}`},
		{"no content", h, `{"type":"compaction"}`},
	} {
		before := len(c.h.backendRequests())
		resp, b := c.h.do(http.MethodPost, "/v1/responses", responsesBody("", userItem("hi"), c.item, userItem("go")), nil, false)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_request_error") || !strings.Contains(string(b), "input.1") {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, b)
		}
		if n := len(c.h.backendRequests()); n != before {
			t.Errorf("%s: the backend was called", c.name)
		}
	}
}

// TestCompactionKeyRotation: a proxy whose compaction_key lists a new key
// first and the old one after opens the items the old one sealed.
func TestCompactionKeyRotation(t *testing.T) {
	old := newHarness(t, harnessOptions{settings: compactionSettings})
	item := compactionOf(t, compact(t, old, shellTool)["output"])
	itemJSON, _ := json.Marshal(item)
	rotated := newHarness(t, harnessOptions{settings: "  compaction_key:\n    - the-new-compaction-secret-2027\n    - a-compaction-secret-of-this-deployment\n"})
	resp, b := rotated.do(http.MethodPost, "/v1/responses", responsesBody("", string(itemJSON), userItem("go on")), nil, false)
	if resp.StatusCode != 200 {
		t.Fatalf("rotated proxy on an old item: %d %s", resp.StatusCode, b)
	}
	// What the rotated proxy seals, the old one cannot open.
	newItem, _ := json.Marshal(compactionOf(t, compact(t, rotated, shellTool)["output"]))
	resp, b = old.do(http.MethodPost, "/v1/responses", responsesBody("", string(newItem), userItem("go on")), nil, false)
	if resp.StatusCode != 400 {
		t.Errorf("the old key opened the new key's item: %d %s", resp.StatusCode, b)
	}
}

// TestCompactionOverWebSocket: the trigger over the WebSocket transport,
// the way Codex's built-in provider sends it.
func TestCompactionOverWebSocket(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	ws.send(create(shellTool, append(conversation, `{"type":"compaction_trigger"}`)...))
	evs := ws.response()
	completedID(t, evs)
	items := outputItems(evs)
	if len(items) != 1 {
		t.Fatalf("output items: %v", items)
	}
	compactionOf(t, items)
	// The master key derives the key without compaction_key: the item
	// opens on the next request.
	b, _ := json.Marshal(items[0])
	ws.send(create("", userItem("fix the parser in parse.go"), string(b), userItem("next")))
	completedID(t, ws.response())
}

// TestResponsesCompactEndpoint: POST /v1/responses/compact answers a
// response.compaction object: the user messages kept, the rest one
// compaction item, with usage.
func TestResponsesCompactEndpoint(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	resp, b := h.do(http.MethodPost, "/v1/responses/compact", `{"model":"local-model","instructions":"Be brief.","input":[`+strings.Join(conversation, ",")+`]}`, nil, false)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["object"] != "response.compaction" || m["id"] == "" || m["created_at"] == nil || m["usage"] == nil {
		t.Errorf("compacted response: %s", b)
	}
	out := m["output"].([]any)
	if len(out) != 3 || out[0].(map[string]any)["role"] != "user" || out[1].(map[string]any)["role"] != "user" {
		t.Fatalf("output: %v", out)
	}
	compactionOf(t, out)
	resp, b = h.do(http.MethodPost, "/v1/responses/compact", `{"model":"local-model","input":"x","previous_response_id":"resp_1"}`, nil, false)
	if resp.StatusCode != 400 {
		t.Errorf("compact with previous_response_id: %d %s", resp.StatusCode, b)
	}
}

// TestUnknownInputItems: an input item type the proxy does not know, a
// reasoning item with another server's encrypted_content, and a
// compaction_trigger that is not last are 400 invalid_request_error
// naming them, and never reach the backend.
func TestUnknownInputItems(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, c := range []struct{ item, want string }{
		{`{"type":"item_reference","id":"msg_1"}`, `\"item_reference\"`},
		{`{"type":"local_shell_call","call_id":"c","action":{"type":"exec","command":["ls"]}}`, `\"local_shell_call\"`},
		{`{"type":"reasoning","summary":[],"encrypted_content":"gAAAAAB-openai"}`, "encrypted_content"},
		{`{"type":"compaction_trigger"}`, "compaction_trigger must be the last"},
	} {
		resp, b := h.do(http.MethodPost, "/v1/responses", responsesBody("", userItem("hi"), c.item, userItem("go")), nil, false)
		if resp.StatusCode != 400 || !strings.Contains(string(b), "invalid_request_error") || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), "input.1") {
			t.Errorf("%s: %d %s", c.item, resp.StatusCode, b)
		}
	}
	if n := len(h.backendRequests()); n != 0 {
		t.Errorf("the backend was called %d times", n)
	}
	// A reasoning item without encrypted_content, and the record of a
	// search, still pass.
	resp, b := h.do(http.MethodPost, "/v1/responses", responsesBody("", userItem("hi"), `{"type":"reasoning","summary":[],"encrypted_content":null}`, `{"type":"web_search_call","id":"ws_1","status":"completed"}`, userItem("go")), nil, false)
	if resp.StatusCode != 200 {
		t.Errorf("reasoning without encrypted_content: %d %s", resp.StatusCode, b)
	}
}

// TestCompactionWhereTheTranslationMeetsIt: the server searches no body
// for compaction items; it opens them where the translation refuses one.
// That holds on every path a Responses request takes: a backend that
// speaks the Messages format (its model resolved before the translation),
// and web search on, whose loop translates the request itself.
func TestCompactionWhereTheTranslationMeetsIt(t *testing.T) {
	for name, o := range map[string]harnessOptions{
		"vendora":    {native: true, settings: compactionSettings + "  enable_vendora_pass_through: true\n"},
		"web search": {search: "searxng", settings: compactionSettings},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, o)
			tools := ""
			if o.search != "" {
				tools = `,"tools":[{"type":"web_search"}]`
			}
			itemJSON, _ := json.Marshal(compactionOf(t, compact(t, h, tools)["output"]))
			resp, b := h.do(http.MethodPost, "/v1/responses", responsesBody(tools, userItem("fix the parser"), string(itemJSON), userItem("what next?")), nil, false)
			if resp.StatusCode != 200 {
				t.Fatalf("after the compaction: %d %s", resp.StatusCode, b)
			}
			reqs := h.backend.Requests()
			if len(reqs) == 0 {
				t.Fatal("the backend got no request")
			}
			last := string(reqs[len(reqs)-1].Body)
			if !strings.Contains(last, "A summary of the conversation so far") || strings.Contains(last, "dgm1.") {
				t.Errorf("the backend got %s", last)
			}
			resp, b = h.do(http.MethodPost, "/v1/responses", responsesBody(tools, userItem("hi"), `{"type":"compaction_trigger"}`, userItem("go")), nil, false)
			if resp.StatusCode != 400 || !strings.Contains(string(b), "compaction_trigger must be the last") {
				t.Errorf("a trigger not last: %d %s", resp.StatusCode, b)
			}
		})
	}
}
