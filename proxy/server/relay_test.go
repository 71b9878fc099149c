package server_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/server"

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

// endedStream is a backend's Chat stream whose end the translators see
// before [DONE]: a text chunk, the finish, then the usage.
var endedStream = []string{
	`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"c","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`,
}

// A translated stream ends at the backend's finish and usage, and what
// the backend sends after them ([DONE], the end of its chunked answer) is
// still read: its connection goes back to the pool, and the next request
// takes it (a connection closed before its end made every request dial
// again). Messages and Responses streams, one after another: one
// connection.
func TestTranslatedStreamsKeepTheBackendConnection(t *testing.T) {
	defer server.SetDrainWait(server.SetDrainWait(time.Minute))
	var conns atomic.Int32
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range endedStream {
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
		}
		// A pause, so that the proxy reads the end before what follows it.
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	backend.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	backend.Start()
	t.Cleanup(backend.Close)
	h := newHarness(t, harnessOptions{backendURL: backend.URL + "/v1"})
	for range 2 {
		events := string(streamEvents(t, h, "/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if !strings.Contains(events, "event: message_stop") {
			t.Fatalf("the Messages stream did not end:\n%s", events)
		}
		resp := h.post("/v1/responses", `{"model":"local-model","input":"hi","stream":true}`)
		events = string(readEvents(t, resp.Body))
		resp.Body.Close()
		if !strings.Contains(events, "event: response.completed") {
			t.Fatalf("the Responses stream did not end:\n%s", events)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the backend took %d connections for 4 streams one after another, want 1", n)
	}
}

// A backend that keeps its answer open after the finish and the usage is
// not waited for: the client's stream ends all the same.
func TestTranslatedStreamEndsWhileTheBackendHangsOn(t *testing.T) {
	backend := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range endedStream {
			fmt.Fprintf(w, "data: %s\n\n", ev)
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done() // no [DONE], no end: until the proxy goes
	}))
	h := newHarness(t, harnessOptions{backendURL: backend})
	events := string(streamEvents(t, h, "/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if !strings.Contains(events, "event: message_stop") {
		t.Fatalf("the Messages stream did not end:\n%s", events)
	}
	resp := h.post("/v1/responses", `{"model":"local-model","input":"hi","stream":true}`)
	defer resp.Body.Close()
	if events := string(readEvents(t, resp.Body)); !strings.Contains(events, "event: response.completed") {
		t.Fatalf("the Responses stream did not end:\n%s", events)
	}
}
