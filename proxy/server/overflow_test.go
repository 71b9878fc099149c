package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code"`
		Param   string `json:"param"`
	} `json:"error"`
}

func readError(t *testing.T, resp *http.Response) (int, errorBody, string) {
	t.Helper()
	b := drain(t, resp)
	var e errorBody
	if err := json.Unmarshal([]byte(b), &e); err != nil {
		t.Fatalf("%d: not a JSON error: %s", resp.StatusCode, b)
	}
	return resp.StatusCode, e, b
}

// TestOverflowEachServerWordingBothEndpoints sends a request to a backend
// that answers with each server's recorded overflow (and the made-up
// wordings read by their meaning), through the Messages, Chat and
// Responses endpoints, streamed and not, to a Chat backend and to a
// Messages one: each is a real 400 (a stream fails before its commit) in
// the words the caller's clients act on, with the numbers the backend
// named.
func TestOverflowEachServerWordingBothEndpoints(t *testing.T) {
	all, err := fixtures.OverflowErrors()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		t.Run(f.Name, func(t *testing.T) {
			for _, native := range []bool{false, true} {
				h := newHarness(t, harnessOptions{backendURL: cannedBackend(t, f.Status, string(f.Body)), native: native})
				checkOverflowAnswers(t, h, f.Want, fmt.Sprintf("status %d, native %v", f.Status, native), true)
			}
		})
	}
}

// TestOverflowAsTheFirstEventOfAStream: a backend that answers 200 and
// an event stream whose first event (after a role chunk or
// message_start) is the overflow, in each of the shapes servers send it
// (data: {"error": …} chunks, LM Studio 0.4.21, lmstudio-bug-tracker#2322;
// llama.cpp's event: error with {"code","message","type"}; a Messages
// error event): the client still gets a real 400 in its own words.
func TestOverflowAsTheFirstEventOfAStream(t *testing.T) {
	lmstudio, err := fixtures.ReadOverflowError("lmstudio-0421.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := chatErrorText(t, lmstudio.Body)
	quoted, _ := json.Marshal(text)
	for _, c := range []struct {
		name, events string
		native       bool
	}{
		{"chat error chunk", "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
			"data: {\"error\":{\"message\":" + string(quoted) + "}}\n\n", false},
		{"chat error chunk first", "data: " + string(lmstudio.Body) + "\n\n", false},
		{"llama.cpp error event", "event: error\ndata: {\"code\":400,\"message\":" + string(quoted) + ",\"type\":\"exceed_context_size_error\"}\n\n", false},
		{"messages error event", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\",\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":" + string(quoted) + "}}\n\n", true},
		{"llama.cpp error event, native", "event: error\ndata: {\"code\":500,\"message\":" + string(quoted) + ",\"type\":\"server_error\"}\n\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			backend := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(200)
				io.WriteString(w, c.events)
			}))
			h := newHarness(t, harnessOptions{backendURL: backend, native: c.native})
			checkOverflowAnswers(t, h, lmstudio.Want, c.name, false)
		})
	}
}

func chatErrorText(t *testing.T, body []byte) string {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not a Chat error: %s", body)
	}
	return e.Error.Message
}

// checkOverflowAnswers posts a small request to each endpoint (streamed,
// and when whole is set not streamed too) and checks that each answer is
// the 400 of an overflow with want's numbers, in the endpoint's words.
func checkOverflowAnswers(t *testing.T, h *harness, want, what string, whole bool) {
	t.Helper()
	var tokens, maximum int
	fmt.Sscanf(want, "prompt is too long: %d tokens > %d maximum", &tokens, &maximum)
	modes := []string{"true"}
	if whole {
		modes = []string{"false", "true"}
	}
	for _, s := range modes {
		status, e, raw := readError(t, h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"stream":`+s+`,"messages":[{"role":"user","content":"hi"}]}`))
		if status != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || e.Error.Message != want {
			t.Errorf("%s: messages stream=%s: %d %s, want 400 invalid_request_error %q", what, s, status, raw, want)
		}
		for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
			body := `{"model":"local-model","max_tokens":64,"stream":` + s + `,"messages":[{"role":"user","content":"hi"}]}`
			if path == "/v1/responses" {
				body = `{"model":"local-model","max_output_tokens":64,"stream":` + s + `,"input":"hi"}`
			}
			status, e, raw = readError(t, h.post(path, body))
			if status != 400 || e.Error.Code != "context_length_exceeded" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "Please reduce the length of the messages") {
				t.Errorf("%s: %s stream=%s: %d %s, want 400 context_length_exceeded", what, path, s, status, raw)
			}
			if maximum > 0 && !strings.Contains(e.Error.Message, fmt.Sprintf("maximum context length is %d tokens. However, your messages resulted in %d tokens.", maximum, tokens)) {
				t.Errorf("%s: %s stream=%s: %s, want the numbers %d and %d", what, path, s, raw, tokens, maximum)
			}
		}
	}
}

// TestOverflowNumbersFromTheConfiguredWindow: a backend that names no
// numbers (Ollama) gets them from proxy_params.context_window.
func TestOverflowNumbersFromTheConfiguredWindow(t *testing.T) {
	f, err := fixtures.ReadOverflowError("ollama-excess.txt")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOptions{backendURL: cannedBackend(t, f.Status, string(f.Body)), extraYAML: "      context_window: 8192\n"})
	status, e, raw := readError(t, h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
	if status != 400 || e.Error.Message != "prompt is too long: 12213 tokens > 8192 maximum" {
		t.Errorf("%d %s", status, raw)
	}
	status, e, raw = readError(t, h.post("/v1/chat/completions", `{"model":"local-model","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
	if status != 400 || e.Error.Message != "This model's maximum context length is 8192 tokens. However, your messages resulted in 12213 tokens. Please reduce the length of the messages." {
		t.Errorf("%d %s", status, raw)
	}
}

// TestOverflowAfterCommit: a backend slower than the ping interval has
// committed the Messages stream; its overflow then ends the stream with an
// error event in the same words.
func TestOverflowAfterCommit(t *testing.T) {
	f, err := fixtures.ReadOverflowError("llamacpp.txt")
	if err != nil {
		t.Fatal(err)
	}
	backend := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(f.Status)
		w.Write(f.Body)
	}))
	h := newHarness(t, harnessOptions{backendURL: backend, ping: 50 * time.Millisecond})
	resp := h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "event: error") ||
		!strings.Contains(string(b), `"type":"invalid_request_error","message":"prompt is too long: 9000 tokens \u003e 8192 maximum"`) &&
			!strings.Contains(string(b), `"type":"invalid_request_error","message":"prompt is too long: 9000 tokens > 8192 maximum"`) {
		t.Errorf("%d\n%s", resp.StatusCode, b)
	}
}
