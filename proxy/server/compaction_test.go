package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// TestCompactionOfAClaudeCodeSessionFitsFirstTry: a Claude Code session
// (its real system prompt and tools, from the capture) on a vLLM whose
// context fills up, then the compaction summary request Claude Code sends
// (its own short system prompt, no tools): the summary request is
// answered at its first attempt, not refused once for a max_tokens that
// does not fit beside its prompt (a wasted prefill).
func TestCompactionOfAClaudeCodeSessionFitsFirstTry(t *testing.T) {
	const window = 40000
	v, base := newVLLM2026(t, window)
	// Its tokenizer makes fewer tokens of the tools' JSON than of prose,
	// against the estimate: what the proxy learns of its counts from the
	// session's turns (tools and prose) overrates the estimate of the
	// summary request (prose only).
	v.toolBytes = 6
	v.tokenizer = true
	h := newHarness(t, harnessOptions{routesYAML: vllmRoutes(base)})
	h.server.Discover(t.Context())
	raw, err := fixtures.ClientRequest("01-text-turn.json")
	if err != nil {
		t.Fatal(err)
	}
	var capture struct {
		Body map[string]any `json:"body"`
	}
	if err := json.Unmarshal(raw, &capture); err != nil {
		t.Fatal(err)
	}
	summary := compactionRequest(t)
	post := func(body map[string]any) (int, string) {
		b, _ := json.Marshal(body)
		resp, out := h.do(http.MethodPost, "/v1/messages", string(b), []string{"anthropic-version", "2023-06-01"}, false)
		return resp.StatusCode, string(out)
	}
	var history []any
	for i := 0; ; i++ {
		history = append(history,
			map[string]any{"role": "user", "content": fmt.Sprintf("step %d: read the next file. ", i) + proseOf(1200)},
			map[string]any{"role": "assistant", "content": fmt.Sprintf("Read it; step %d done. ", i) + proseOf(400)})
		turn := map[string]any{"model": "local-model", "max_tokens": 32000, "stream": true, "system": capture.Body["system"], "tools": capture.Body["tools"],
			"messages": append(append([]any(nil), history...), map[string]any{"role": "user", "content": "go on"})}
		status, out := post(turn)
		if strings.Contains(out, "prompt is too long") {
			// The context is full: Claude Code compacts the conversation
			// so far.
			history = history[:len(history)-2]
			break
		}
		if status != 200 || strings.Contains(out, "event: error") {
			t.Fatalf("turn %d: %d %s", i, status, out)
		}
	}
	_, refusedBefore, _ := v.stats()
	msgs, _ := summary["messages"].([]any)
	req := map[string]any{"model": "local-model", "max_tokens": summary["max_tokens"], "stream": true, "system": summary["system"],
		"messages": append(append([]any(nil), history...), msgs[len(msgs)-1])}
	status, out := post(req)
	if status != 200 || !strings.Contains(out, "the summary") || strings.Contains(out, "event: error") {
		t.Fatalf("summary request: %d %s", status, out)
	}
	asked, refused, _ := v.stats()
	if v.tokenized == 0 {
		t.Error("the backend's tokenizer was never asked")
	}
	if refused != refusedBefore {
		t.Errorf("the summary request was refused %d times before it fitted (max_tokens asked %v, its prompt %d of %d)", refused-refusedBefore, asked, v.count(req), window)
	}
	t.Logf("max_tokens asked %v; %d refused during the session, %d for the summary", asked, refusedBefore, refused-refusedBefore)
}
