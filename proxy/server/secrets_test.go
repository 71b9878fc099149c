package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// echoingBackend answers every request with the Authorization header it
// received, in the way a confused backend or an auth gateway in front of
// it might: in an error body of the given status, or mid-stream.
type echoingBackend struct {
	mu      sync.Mutex
	status  int
	shape   string // "chat": {"error":{...}}, "text": plain text, "midstream": 200, a chunk, then an error chunk
	headers []http.Header
}

func (e *echoingBackend) set(status int, shape string) {
	e.mu.Lock()
	e.status, e.shape = status, shape
	e.mu.Unlock()
}

func (e *echoingBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	e.mu.Lock()
	status, shape := e.status, e.shape
	e.headers = append(e.headers, r.Header.Clone())
	e.mu.Unlock()
	auth := r.Header.Get("Authorization")
	switch shape {
	case "chat":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"key %s is not valid here","type":"invalid_request_error","code":%d}}`, auth, status)
	case "text":
		w.WriteHeader(status)
		fmt.Fprintf(w, "denied for Authorization: %s\n", auth)
	case "midstream":
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprintf(w, `data: {"error":{"message":"upstream rejected %s","type":"server_error","code":500}}`+"\n\n", auth)
	}
}

// TestSecretsBackendKeyNotInResponses: whatever a backend says back, its
// key does not reach the client (body or headers) or the logs.
func TestSecretsBackendKeyNotInResponses(t *testing.T) {
	backend := &echoingBackend{}
	h := newHarness(t, harnessOptions{backendURL: serveBackend(t, backend), extraYAML: "      num_retries: 1\n"})
	type answer struct {
		status int
		shape  string
	}
	var answers []answer
	for _, status := range []int{400, 401, 403, 404, 413, 422, 429, 500, 502, 503} {
		answers = append(answers, answer{status, "chat"}, answer{status, "text"})
	}
	answers = append(answers, answer{200, "midstream"})
	requests := []struct{ path, body string }{
		{"/v1/messages", goodMessages},
		{"/v1/messages", `{"model":"local-model","max_tokens":32,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/chat/completions", goodChat},
		{"/v1/chat/completions", `{"model":"local-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, a := range answers {
		backend.set(a.status, a.shape)
		for _, r := range requests {
			if a.shape == "midstream" && !strings.Contains(r.body, `"stream":true`) {
				continue
			}
			resp, b := h.do(http.MethodPost, r.path, r.body, nil, false)
			what := fmt.Sprintf("backend %d %s, %s %s", a.status, a.shape, r.path, r.body[len(r.body)-40:])
			if resp.StatusCode < 400 && a.shape != "midstream" {
				t.Errorf("%s: status %d", what, resp.StatusCode)
			}
			if strings.Contains(string(b), backendKey) {
				t.Errorf("%s: the backend key is in the response: %s", what, b)
			}
			for name, vs := range resp.Header {
				if strings.Contains(strings.Join(vs, " "), backendKey) {
					t.Errorf("%s: the backend key is in header %s", what, name)
				}
			}
			if !strings.Contains(string(b), "[redacted]") {
				t.Errorf("%s: the backend's error text is not forwarded (scrubbed): %s", what, b)
			}
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, backendKey) || !strings.Contains(logs, "status=") {
		t.Errorf("logs hold the backend key, or nothing:\n%s", logs)
	}
	backend.mu.Lock()
	defer backend.mu.Unlock()
	if len(backend.headers) == 0 {
		t.Fatal("the backend saw nothing")
	}
}

// TestSecretsClientKeyNeverSentToBackend: on every endpoint, with either
// header, the client's key (and the client's other headers) stay at the
// proxy; the backend gets its own key.
func TestSecretsClientKeyNeverSentToBackend(t *testing.T) {
	// The stub records chat requests only: a recorder in front of it sees
	// /tokenize too.
	var mu sync.Mutex
	var seen []stub.Request
	backend := stub.New(stub.Options{Tokenize: true})
	recorder := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, stub.Request{Path: r.URL.Path, Header: r.Header.Clone()})
		mu.Unlock()
		backend.ServeHTTP(w, r)
	}))
	h := newHarness(t, harnessOptions{backendURL: recorder})
	const canary = "client-header-canary-7f3a"
	requests := []struct{ path, body string }{
		{"/v1/messages", goodMessages},
		{"/v1/messages?beta=true", `{"model":"local-model","max_tokens":32,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages/count_tokens?beta=true", `{"model":"local-model","messages":[{"role":"user","content":"count me"}]}`},
		{"/v1/chat/completions", goodChat},
		{"/v1/chat/completions", `{"model":"local-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/messages", `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"stub:error-midstream"}],"stream":true}`},
	}
	for _, header := range [][]string{
		{"X-Custom-Token", canary, "Anthropic-Beta", canary, "Cookie", "session=" + canary},
		{"Authorization", "", "x-api-key", clientKey, "X-Forwarded-For", canary},
	} {
		for _, r := range requests {
			resp, b := h.do(http.MethodPost, r.path, r.body, header, false)
			if resp.StatusCode != 200 {
				t.Fatalf("%s with %v: %d %s", r.path, header[0], resp.StatusCode, b)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	paths := map[string]int{}
	for _, r := range seen {
		paths[r.Path]++
		if got := r.Header.Get("Authorization"); got != "Bearer "+backendKey {
			t.Errorf("%s: backend Authorization %q, want the backend key", r.Path, got)
		}
		for name, vs := range r.Header {
			v := strings.Join(vs, " ")
			if strings.Contains(v, clientKey) || strings.Contains(v, canary) {
				t.Errorf("%s: the client's %s reached the backend: %q", r.Path, name, v)
			}
		}
	}
	// The second count_tokens of the same prompt is answered from the
	// count of the first (package tokenize's prefix cache).
	if paths["/v1/chat/completions"] != 10 || paths["/tokenize"] != 1 {
		t.Errorf("backend paths %v, want 10 chat and 1 tokenize requests", paths)
	}
}

// TestSecretsClientKeyNotEchoed: a wrong or malformed client key is not
// repeated back in the 401, nor logged.
func TestSecretsClientKeyNotEchoed(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	const wrong = "sk-wrong-but-secret-9c1d"
	for _, header := range [][]string{
		{"Authorization", "Bearer " + wrong},
		{"Authorization", "Basic " + wrong},
		{"Authorization", wrong},
		{"Authorization", "", "x-api-key", wrong},
	} {
		for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
			resp, b := h.do(http.MethodPost, path, goodMessages, header, false)
			if resp.StatusCode != 401 || strings.Contains(string(b), wrong) {
				t.Errorf("%s %v: %d %s", path, header, resp.StatusCode, b)
			}
		}
	}
	if strings.Contains(h.logs.String(), wrong) {
		t.Errorf("a client key reached the logs:\n%s", h.logs.String())
	}
	if n := len(h.backend.Requests()); n != 0 {
		t.Errorf("backend saw %d unauthenticated requests", n)
	}
}
