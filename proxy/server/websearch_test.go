package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// searchParams asks the model to search for query, offering the web
// search server tool with max_uses.
func searchParams(text string, maxUses int64) anthropic.MessageNewParams {
	p := userText("claude-opus-5-5", text)
	p.Tools = []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{MaxUses: anthropic.Int(maxUses)}}}
	return p
}

// searchedMessage checks a message whose model searched once for query
// and answered from the stub's results: server_tool_use, its result, the
// text that cites the first result; one search counted.
func searchedMessage(t *testing.T, msg anthropic.Message, query string) {
	t.Helper()
	if len(msg.Content) != 3 {
		t.Fatalf("content = %d blocks, want server_tool_use, web_search_tool_result, text: %s", len(msg.Content), msg.RawJSON())
	}
	use := msg.Content[0].AsServerToolUse()
	if msg.Content[0].Type != "server_tool_use" || !strings.HasPrefix(use.ID, "srvtoolu_") || use.Name != "web_search" {
		t.Errorf("block 0 = %s", msg.Content[0].RawJSON())
	}
	in, _ := json.Marshal(use.Input)
	sameJSON(t, string(in), `{"query":`+quote(query)+`}`)
	res := msg.Content[1].AsWebSearchToolResult()
	if msg.Content[1].Type != "web_search_tool_result" || res.ToolUseID != use.ID {
		t.Fatalf("block 1 = %s", msg.Content[1].RawJSON())
	}
	results := res.Content.OfWebSearchResultBlockArray
	if len(results) != stub.SearchResults {
		t.Fatalf("results = %s", msg.Content[1].RawJSON())
	}
	for i, r := range results {
		if r.URL != stub.SearchResultURL(query, i+1) || r.Title != stub.SearchResultTitle(query, i+1) || r.EncryptedContent == "" {
			t.Errorf("result %d = %+v", i, r)
		}
		back, ok := translate.ReadEncryptedContent(r.EncryptedContent)
		if !ok || back.URL != r.URL || !strings.Contains(back.Snippet, "search stub found") {
			t.Errorf("encrypted_content of result %d reads back as %+v, %v", i, back, ok)
		}
	}
	text := msg.Content[2].AsText()
	if msg.Content[2].Type != "text" || !strings.Contains(text.Text, stub.SearchResultTitle(query, 1)) {
		t.Errorf("block 2 = %s", msg.Content[2].RawJSON())
	}
	if len(text.Citations) == 0 || text.Citations[0].Type != "web_search_result_location" || text.Citations[0].URL != stub.SearchResultURL(query, 1) ||
		text.Citations[0].EncryptedIndex == "" || text.Citations[0].CitedText == "" {
		t.Errorf("citations = %s", msg.Content[2].RawJSON())
	}
	if msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("stop_reason = %q", msg.StopReason)
	}
	if msg.Usage.ServerToolUse.WebSearchRequests != 1 || msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
		t.Errorf("usage = %s", msg.Usage.RawJSON())
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestWebSearchMessagesSDK: the official Messages SDK through the proxy to
// a backend model that calls web_search, translated (vendorb/) and native
// (vendora/), non-stream and stream: the blocks in order, the SDK's
// accumulator giving the same message, the stream in the event grammar.
func TestWebSearchMessagesSDK(t *testing.T) {
	for _, native := range []bool{false, true} {
		name := "vendorb"
		if native {
			name = "vendora"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{native: native, search: "searxng"})
			c := messagesClient(h, clientKey)
			msg, err := c.Messages.New(context.Background(), searchParams("stub:search dragoman proxy", 3))
			if err != nil {
				t.Fatal(err)
			}
			searchedMessage(t, *msg, "dragoman proxy")

			streamed := accumulate(t, c, searchParams("stub:search dragoman proxy", 3))
			searchedMessage(t, streamed, "dragoman proxy")

			body, _ := json.Marshal(searchParams("stub:search dragoman proxy", 3))
			raw := strings.Replace(string(body), `{`, `{"stream":true,`, 1)
			resp := h.post("/v1/messages", raw)
			events := readEvents(t, resp.Body)
			resp.Body.Close()
			if err := ssecheck.Check(events); err != nil {
				t.Fatalf("stream: %v\n%s", err, events)
			}
			// The backend offered the model the web_search function, and
			// read the results as the call's result.
			var sawResult bool
			for _, r := range h.backend.Requests() {
				if bytes.Contains(r.Body, []byte(`"web_search"`)) && bytes.Contains(r.Body, []byte(stub.SearchResultURL("dragoman proxy", 1))) {
					sawResult = true
				}
				if bytes.Contains(r.Body, []byte("web_search_20250305")) {
					t.Errorf("the server tool reached the backend: %s", r.Body)
				}
			}
			if !sawResult {
				t.Error("no backend turn carried the search results")
			}
		})
	}
}

// TestWebSearchProviders: each provider's request reaches the stub in its
// own shape (key where the provider wants it) and its answer is read.
func TestWebSearchProviders(t *testing.T) {
	for _, p := range []struct{ provider, path, keyHeader string }{
		{"searxng", "/search", "Authorization"},
		{"brave", "/res/v1/web/search", "X-Subscription-Token"},
		{"tavily", "/search", "Authorization"},
	} {
		t.Run(p.provider, func(t *testing.T) {
			h := newHarness(t, harnessOptions{search: p.provider})
			msg, err := messagesClient(h, clientKey).Messages.New(context.Background(), searchParams("stub:search golang release", 3))
			if err != nil {
				t.Fatal(err)
			}
			searchedMessage(t, *msg, "golang release")
			var asked bool
			for _, r := range h.backend.Requests() {
				if r.Path == p.path && strings.Contains(r.Header.Get(p.keyHeader), "test-search-key") {
					asked = true
				}
			}
			if !asked {
				t.Errorf("no %s request at %s with the key in %s", p.provider, p.path, p.keyHeader)
			}
		})
	}
}

// searchErrors runs text through the proxy with max_uses and returns the
// message; its answer must still be a normal one.
func searchMessage(t *testing.T, h *harness, text string, maxUses int64) anthropic.Message {
	t.Helper()
	msg, err := messagesClient(h, clientKey).Messages.New(context.Background(), searchParams(text, maxUses))
	if err != nil {
		t.Fatalf("a search problem failed the request: %v", err)
	}
	if msg.StopReason != anthropic.StopReasonEndTurn || msg.Content[len(msg.Content)-1].Type != "text" {
		t.Errorf("not a normal answer: %s", msg.RawJSON())
	}
	return *msg
}

// errorCodes lists the error codes of a message's search results, "" for
// a result with results.
func errorCodes(msg anthropic.Message) []string {
	var codes []string
	for _, b := range msg.Content {
		if b.Type == "web_search_tool_result" {
			codes = append(codes, string(b.AsWebSearchToolResult().Content.ErrorCode))
		}
	}
	return codes
}

// TestWebSearchErrorsInANormalAnswer: max_uses reached, the provider down,
// the provider slow (past the time budget), a query the model repeats:
// each a web_search_tool_result_error with its code inside a normal
// answer; a model that never calls the function: a plain answer.
func TestWebSearchErrorsInANormalAnswer(t *testing.T) {
	t.Run("max_uses", func(t *testing.T) {
		h := newHarness(t, harnessOptions{search: "searxng"})
		msg := searchMessage(t, h, "stub:search-many topic", 2)
		if got := strings.Join(errorCodes(msg), ","); got != ",,max_uses_exceeded" {
			t.Errorf("codes = %q, want two searches then max_uses_exceeded: %s", got, msg.RawJSON())
		}
		if msg.Usage.ServerToolUse.WebSearchRequests != 2 {
			t.Errorf("web_search_requests = %d", msg.Usage.ServerToolUse.WebSearchRequests)
		}
	})
	t.Run("provider down", func(t *testing.T) {
		h := newHarness(t, harnessOptions{search: "searxng"})
		msg := searchMessage(t, h, "stub:search stub-down", 3)
		if got := strings.Join(errorCodes(msg), ","); got != "unavailable" {
			t.Errorf("codes = %q: %s", got, msg.RawJSON())
		}
		if !strings.Contains(h.logs.String(), "web search failed") {
			t.Error("the failure was not logged")
		}
	})
	t.Run("provider rate limits", func(t *testing.T) {
		h := newHarness(t, harnessOptions{search: "searxng"})
		if got := strings.Join(errorCodes(searchMessage(t, h, "stub:search stub-ratelimit", 3)), ","); got != "too_many_requests" {
			t.Errorf("codes = %q", got)
		}
	})
	t.Run("provider slow", func(t *testing.T) {
		h := newHarness(t, harnessOptions{search: "searxng", searchExtra: "  timeout: 0.2\n  time_budget: 0.3\n"})
		start := time.Now()
		msg := searchMessage(t, h, "stub:search stub-slow", 3)
		if got := strings.Join(errorCodes(msg), ","); got != "unavailable" {
			t.Errorf("codes = %q: %s", got, msg.RawJSON())
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the slow provider held the answer %v", took)
		}
	})
	t.Run("repeated query", func(t *testing.T) {
		h := newHarness(t, harnessOptions{search: "searxng"})
		msg := searchMessage(t, h, "stub:search-repeat same thing", 5)
		if got := strings.Join(errorCodes(msg), ","); got != ",invalid_input" {
			t.Errorf("codes = %q, want a search then invalid_input: %s", got, msg.RawJSON())
		}
	})
	t.Run("model never calls", func(t *testing.T) {
		h := newHarness(t, harnessOptions{search: "searxng", stub: stub.Options{NoTools: true}})
		msg := searchMessage(t, h, "stub:search anything", 3)
		if len(msg.Content) != 1 || len(errorCodes(msg)) != 0 || msg.Usage.ServerToolUse.WebSearchRequests != 0 {
			t.Errorf("message = %s", msg.RawJSON())
		}
	})
	t.Run("query too long", func(t *testing.T) {
		h := newHarness(t, harnessOptions{search: "searxng"})
		if got := strings.Join(errorCodes(searchMessage(t, h, "stub:search "+strings.Repeat("x", 500), 3)), ","); got != "query_too_long" {
			t.Errorf("codes = %q", got)
		}
	})
}

// TestWebSearchHistory: a later turn carries the blocks of a search; the
// backend model reads them as its call and the call's result, from
// encrypted_content.
func TestWebSearchHistory(t *testing.T) {
	h := newHarness(t, harnessOptions{search: "searxng"})
	first, err := messagesClient(h, clientKey).Messages.New(context.Background(), searchParams("stub:search history test", 3))
	if err != nil {
		t.Fatal(err)
	}
	h.backend.Reset()
	p := searchParams("thanks", 3)
	p.Messages = []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("stub:search history test")),
		first.ToParam(),
		anthropic.NewUserMessage(anthropic.NewTextBlock("thanks")),
	}
	if _, err := messagesClient(h, clientKey).Messages.New(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	reqs := h.backendRequests()
	if len(reqs) == 0 {
		t.Fatal("no backend request")
	}
	msgs, _ := json.Marshal(reqs[0]["messages"])
	for _, want := range []string{`"tool_calls"`, `"role":"tool"`, stub.SearchResultURL("history test", 1), "search stub found"} {
		if !strings.Contains(string(msgs), want) {
			t.Errorf("the backend's history lacks %s: %s", want, msgs)
		}
	}
}

// TestWebSearchResponses: Codex's hosted web_search tool, non-stream and
// stream: web_search_call items before the answer, and their events.
func TestWebSearchResponses(t *testing.T) {
	h := newHarness(t, harnessOptions{search: "searxng"})
	body := `{"model":"local-model","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"stub:search codex topic"}]}],"tools":[{"type":"web_search","external_web_access":true}]}`
	resp, b := h.do(http.MethodPost, "/v1/responses", body, nil, false)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var out struct {
		Output []struct {
			Type   string `json:"type"`
			ID     string `json:"id"`
			Status string `json:"status"`
			Action struct {
				Type, Query string
			} `json:"action"`
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
	}
	json.Unmarshal(b, &out)
	if len(out.Output) != 2 || out.Output[0].Type != "web_search_call" || !strings.HasPrefix(out.Output[0].ID, "ws_") ||
		out.Output[0].Status != "completed" || out.Output[0].Action.Type != "search" || out.Output[0].Action.Query != "codex topic" ||
		out.Output[1].Type != "message" || !strings.Contains(out.Output[1].Content[0].Text, stub.SearchResultTitle("codex topic", 1)) {
		t.Fatalf("output = %s", b)
	}
	resp = h.post("/v1/responses", strings.Replace(body, `{`, `{"stream":true,`, 1))
	events, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.web_search_call.in_progress",
		"response.web_search_call.searching", "response.web_search_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	var names []string
	seq := 0
	for _, block := range strings.Split(strings.TrimSpace(string(events)), "\n\n") {
		head, data, _ := strings.Cut(block, "\n")
		name, ok := strings.CutPrefix(head, "event: ")
		if !ok {
			continue
		}
		names = append(names, name)
		var ev struct {
			Type string `json:"type"`
			Seq  int    `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &ev); err != nil || ev.Type != name || ev.Seq != seq {
			t.Errorf("event %s: %s (%v)", name, data, err)
		}
		seq++
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(names, " "), strings.Join(want, " "))
	}
	if !strings.Contains(string(events), `"action":{"type":"search","query":"codex topic"}`) {
		t.Errorf("no search action in the stream:\n%s", events)
	}
}

// TestWebSearchOffDropsTheTool: without search_settings a request with
// the server tool goes as before: the tool dropped, no search.
func TestWebSearchOffDropsTheTool(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	msg, err := messagesClient(h, clientKey).Messages.New(context.Background(), searchParams("stub:search anything", 3))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" {
		t.Errorf("message = %s", msg.RawJSON())
	}
	for _, r := range h.backendRequests() {
		if _, ok := r["tools"]; ok {
			t.Errorf("the backend was offered tools: %v", r["tools"])
		}
	}
}

// TestWebSearchPings: a stream whose search is slow keeps its client's
// idle timer alive with pings, and still passes the event grammar.
func TestWebSearchPings(t *testing.T) {
	h := newHarness(t, harnessOptions{search: "searxng", ping: 50 * time.Millisecond, searchExtra: "  timeout: 2\n",
		stub: stub.Options{SearchDelay: 300 * time.Millisecond}})
	body, _ := json.Marshal(searchParams("stub:search stub-slow pinged", 3))
	resp := h.post("/v1/messages", strings.Replace(string(body), `{`, `{"stream":true,`, 1))
	events := readEvents(t, resp.Body)
	resp.Body.Close()
	if err := ssecheck.Check(events); err != nil {
		t.Fatalf("stream: %v\n%s", err, events)
	}
	if n := bytes.Count(events, []byte("event: ping")); n < 3 {
		t.Errorf("%d pings while the search took 300 ms at a 50 ms interval:\n%s", n, events)
	}
	if !bytes.Contains(events, []byte(stub.SearchResultURL("stub-slow pinged", 1))) {
		t.Errorf("the slow search's results are missing:\n%s", events)
	}
}

// TestWebSearchMetrics: each search counted by provider and result (the
// error code the client was told), and timed when it reached the
// provider.
func TestWebSearchMetrics(t *testing.T) {
	h := newHarness(t, harnessOptions{search: "searxng", metrics: true})
	searchMessage(t, h, "stub:search-many topic", 2) // two searches, then max_uses_exceeded
	searchMessage(t, h, "stub:search stub-down", 3)  // unavailable
	mfs := scrape(t, h.proxy.URL)
	checkSeries(t, mfs, "dragoman_web_searches_total", map[string]float64{
		"provider=searxng,result=ok": 2, "provider=searxng,result=max_uses_exceeded": 1, "provider=searxng,result=unavailable": 1,
	})
	checkSeries(t, mfs, "dragoman_web_search_duration_seconds", map[string]float64{"provider=searxng": 3})
}
