package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// The relay reads, translates and writes in one goroutine; its pings come
// from a timer. A backend that goes silent between events still gets pings
// to the client, each between two events and never inside one.
func TestMessagesStreamPingsBetweenSlowEvents(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{Events: 3, EventDelay: 350 * time.Millisecond}, ping: 100 * time.Millisecond})
	resp := h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events := readEvents(t, resp.Body)
	if err := ssecheck.Check(events); err != nil {
		t.Fatalf("grammar: %v\n%s", err, events)
	}
	text := string(events)
	first := strings.Index(text, "event: content_block_delta")
	if first < 0 {
		t.Fatalf("no delta:\n%s", text)
	}
	if n := strings.Count(text[first:], "event: ping"); n < 3 {
		t.Errorf("%d pings after the first delta, with the backend silent 350 ms between events at a 100 ms interval:\n%s", n, text)
	}
	if got := streamedText(t, events); got != "Hello from stub-backend. You said: hi" {
		t.Errorf("streamed text %q", got)
	}
}

// A chat stream relays every event as it comes, with no pings.
func TestChatStreamRelaysSlowEventsWithoutPings(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{Events: 3, EventDelay: 150 * time.Millisecond}, ping: 50 * time.Millisecond})
	resp := h.post("/v1/chat/completions", `{"model":"local-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	text := string(readEvents(t, resp.Body))
	if strings.Contains(text, "ping") || !strings.HasSuffix(strings.TrimSpace(text), "data: [DONE]") {
		t.Errorf("chat stream:\n%s", text)
	}
}
