package server_test

import (
	"encoding/json"
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
// that answers with each server's recorded overflow, through both
// endpoints, streamed and not: each is a real 400 (a stream fails before
// its commit) in the words the caller's clients act on.
func TestOverflowEachServerWordingBothEndpoints(t *testing.T) {
	all, err := fixtures.OverflowErrors()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		t.Run(f.Name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{backendURL: cannedBackend(t, f.Status, string(f.Body))})
			for _, stream := range []bool{false, true} {
				s := "false"
				if stream {
					s = "true"
				}
				status, e, raw := readError(t, h.post("/v1/messages", `{"model":"local-model","max_tokens":64,"stream":`+s+`,"messages":[{"role":"user","content":"hi"}]}`))
				if status != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" || e.Error.Message != f.Want {
					t.Errorf("messages stream=%s: %d %s, want 400 invalid_request_error %q", s, status, raw, f.Want)
				}
				status, e, raw = readError(t, h.post("/v1/chat/completions", `{"model":"local-model","max_tokens":64,"stream":`+s+`,"messages":[{"role":"user","content":"hi"}]}`))
				if status != 400 || e.Error.Code != "context_length_exceeded" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "Please reduce the length of the messages") {
					t.Errorf("chat stream=%s: %d %s, want 400 context_length_exceeded", s, status, raw)
				}
			}
		})
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
