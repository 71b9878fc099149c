package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// The relay reads, translates and writes in one goroutine; its pings come
// from a timer. A backend that goes silent between events still gets pings
// to the client, each between two events and never inside one.
func TestMessagesStreamPingsBetweenSlowEvents(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{Events: 3, EventDelay: 350 * time.Millisecond}, ping: 100 * time.Millisecond})
	events := streamEvents(t, h, "/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
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

// The translator holds a tool call's arguments until the call is whole
// (see translate's stream state machine): while a backend streams them
// slowly nothing else reaches the client, so pings must.
func TestMessagesStreamPingsWhileToolArgumentsAreHeld(t *testing.T) {
	backend := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(delta string) {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta)
			w.(http.Flusher).Flush()
		}
		send(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"Bash","arguments":""}}]}`)
		for _, frag := range []string{`{\"command\":`, ` \"sleep`, ` 1\"`, `}`} {
			time.Sleep(150 * time.Millisecond)
			send(`{"tool_calls":[{"index":0,"function":{"arguments":"` + frag + `"}}]}`)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
	}))
	h := newHarness(t, harnessOptions{backendURL: backend, ping: 50 * time.Millisecond})
	events := streamEvents(t, h, "/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	text := string(events)
	start := strings.Index(text, `"type":"tool_use"`)
	delta := strings.Index(text, "event: content_block_delta")
	if start < 0 || delta < start {
		t.Fatalf("no tool_use block with its input:\n%s", text)
	}
	if n := strings.Count(text[start:delta], "event: ping"); n < 4 {
		t.Errorf("%d pings while the arguments came over 600 ms at a 50 ms interval, want 4 or more:\n%s", n, text)
	}
	if !strings.Contains(text[delta:], `"partial_json":"{\"command\": \"sleep 1\"}"`) {
		t.Errorf("the arguments must go out whole:\n%s", text)
	}
}
