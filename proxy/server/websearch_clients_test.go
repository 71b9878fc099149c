package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// The coding clients' web search, headless: their recorded requests
// replayed turn by turn as each client builds the next one, through the
// proxy to the stub backend and its search (the scenario run by hand with
// the real clients in docs/web-search.md).

// recordedKind is the body of a recorded request of fixtures/kinds, decoded.
func recordedKind(t *testing.T, name string) (map[string]any, []string) {
	t.Helper()
	c, err := fixtures.KindCapture(name)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	var header []string
	for k, v := range c.Headers {
		switch strings.ToLower(k) {
		case "authorization", "x-api-key", "content-length", "host", "connection", "accept-encoding":
			continue
		}
		header = append(header, k, v)
	}
	return body, header
}

// streamedMessage posts a Messages stream, checks its grammar and returns
// its blocks as the events built them.
func streamedMessage(t *testing.T, h *harness, body map[string]any, header []string) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp := h.post("/v1/messages", string(b), header...)
	events := readEvents(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, events)
	}
	if err := ssecheck.Check(events); err != nil {
		t.Fatalf("stream: %v\n%s", err, events)
	}
	parsed, _ := ssecheck.Parse(events)
	var blocks []map[string]any
	for _, ev := range parsed {
		var d struct {
			ContentBlock map[string]any `json:"content_block"`
			Delta        map[string]any `json:"delta"`
		}
		json.Unmarshal(ev.Data, &d)
		switch ev.Name {
		case "content_block_start":
			blocks = append(blocks, d.ContentBlock)
		case "content_block_delta":
			last := blocks[len(blocks)-1]
			if s, ok := d.Delta["partial_json"].(string); ok {
				prev, _ := last["partial"].(string)
				last["partial"] = prev + s
			}
			if s, ok := d.Delta["text"].(string); ok {
				prev, _ := last["text"].(string)
				last["text"] = prev + s
			}
		}
	}
	return blocks
}

// TestClaudeCodeWebSearchScenario replays Claude Code 2.1.330's WebSearch:
// its main turn (WebSearch deferred behind ToolSearch), the turn after
// ToolSearch answers with a tool_reference, WebSearch's own request (the
// web_search_20250305 server tool, max_uses 8, its system prompt) and the
// main turn with WebSearch's result. The model found the tool, searched
// once, and its answer carries the stub's result.
func TestClaudeCodeWebSearchScenario(t *testing.T) {
	h := newHarness(t, harnessOptions{search: "searxng"})
	main, header := recordedKind(t, "claude-code-main.json")
	main["model"] = "claude-opus-5-5"
	// The user's prompt is the last block of the first turn (the client
	// ends the messages with a system turn of its own).
	msgs := main["messages"].([]any)
	prompt := msgs[0].(map[string]any)["content"].([]any)
	prompt[len(prompt)-1] = map[string]any{"type": "text", "text": "stub:websearch dragoman proxy"}

	// 1. WebSearch is deferred: the model asks ToolSearch for it.
	blocks := streamedMessage(t, h, main, header)
	if len(blocks) != 1 || blocks[0]["name"] != "ToolSearch" {
		t.Fatalf("turn 1 = %v", blocks)
	}
	// 2. The client answers with a tool_reference and offers WebSearch.
	main["messages"] = append(msgs,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": blocks[0]["id"], "name": "ToolSearch", "input": json.RawMessage(blocks[0]["partial"].(string))}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": blocks[0]["id"], "content": []any{map[string]any{"type": "tool_reference", "tool_name": "WebSearch"}}}}})
	main["tools"] = append(main["tools"].([]any), map[string]any{"name": "WebSearch", "description": "Search the web. Returns result blocks with titles and URLs.",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []any{"query"}}})
	blocks = streamedMessage(t, h, main, header)
	if len(blocks) != 1 || blocks[0]["name"] != "WebSearch" || blocks[0]["partial"] != `{"query":"dragoman proxy"}` {
		t.Fatalf("turn 2 = %v", blocks)
	}
	var toolResult string
	for _, r := range h.backendRequests() {
		b, _ := json.Marshal(r["messages"])
		if strings.Contains(string(b), "Tool WebSearch is now available") {
			toolResult = string(b)
		}
	}
	if toolResult == "" {
		t.Error("the model never read that WebSearch is available (the tool_reference was dropped)")
	}
	// 3. WebSearch's own request.
	search := map[string]any{
		"model": "claude-opus-5-5", "max_tokens": 4096, "stream": true,
		"system":      "You run a web search for another Claude model, which is waiting on the result and can search again. Search once, then reply with a brief summary of the results.",
		"messages":    []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Perform a web search for the query: dragoman proxy"}}}},
		"tools":       []any{map[string]any{"type": "web_search_20250305", "name": "web_search", "max_uses": 8}},
		"tool_choice": map[string]any{"type": "auto"},
	}
	blocks = streamedMessage(t, h, search, header)
	if len(blocks) != 3 || blocks[0]["type"] != "server_tool_use" || blocks[0]["partial"] != `{"query":"dragoman proxy"}` ||
		blocks[1]["type"] != "web_search_tool_result" || blocks[2]["type"] != "text" {
		t.Fatalf("WebSearch's request = %v", blocks)
	}
	results, _ := json.Marshal(blocks[1]["content"])
	if !strings.Contains(string(results), stub.SearchResultURL("dragoman proxy", 1)) {
		t.Fatalf("results = %s", results)
	}
	// 4. The client gives WebSearch's findings to the main turn, its
	// links as {title, url}.
	var links []map[string]any
	for _, r := range blocks[1]["content"].([]any) {
		r := r.(map[string]any)
		links = append(links, map[string]any{"title": r["title"], "url": r["url"]})
	}
	linksJSON, _ := json.Marshal(links)
	msgs = main["messages"].([]any)
	main["messages"] = append(msgs,
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": blocks[0]["id"], "name": "WebSearch", "input": map[string]any{"query": "dragoman proxy"}}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": blocks[0]["id"],
			"content": "Web search results for query: \"dragoman proxy\"\n\nLinks: " + string(linksJSON) + "\n\n" + blocks[2]["text"].(string)}}})
	blocks = streamedMessage(t, h, main, header)
	if len(blocks) != 1 || !strings.Contains(blocks[0]["text"].(string), stub.SearchResultTitle("dragoman proxy", 1)) {
		t.Fatalf("the answer = %v", blocks)
	}
}

// TestCodexWebSearchScenario replays Codex 0.169.0's turn with web search
// on (its recorded request, the hosted web_search tool among its tools):
// the stream has the web_search_call item with its query, and the answer
// carries the stub's result.
func TestCodexWebSearchScenario(t *testing.T) {
	h := newHarness(t, harnessOptions{search: "searxng"})
	body, header := recordedKind(t, "codex-turn.json")
	body["model"] = "local-model"
	input := body["input"].([]any)
	input[len(input)-1] = map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "stub:search dragoman proxy"}}}
	b, _ := json.Marshal(body)
	resp := h.post("/v1/responses", string(b), header...)
	events := string(readEvents(t, resp.Body))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, events)
	}
	var done []map[string]any
	for _, block := range strings.Split(events, "\n\n") {
		data, ok := strings.CutPrefix(block[strings.Index(block, "\n")+1:], "data: ")
		if !ok || !strings.HasPrefix(block, "event: response.output_item.done") {
			continue
		}
		var ev struct {
			Item map[string]any `json:"item"`
		}
		json.Unmarshal([]byte(data), &ev)
		done = append(done, ev.Item)
	}
	if len(done) != 2 || done[0]["type"] != "web_search_call" || done[0]["status"] != "completed" || done[1]["type"] != "message" {
		t.Fatalf("items = %v\n%s", done, events)
	}
	if a, _ := done[0]["action"].(map[string]any); a["query"] != "dragoman proxy" {
		t.Errorf("action = %v", done[0]["action"])
	}
	text, _ := json.Marshal(done[1]["content"])
	if !strings.Contains(string(text), stub.SearchResultTitle("dragoman proxy", 1)) {
		t.Errorf("the answer = %s", text)
	}
	if !strings.Contains(events, "event: response.completed") {
		t.Errorf("no response.completed:\n%s", events)
	}
}
