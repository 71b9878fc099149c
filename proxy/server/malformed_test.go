package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// postRecorder is a backend that notes every POST it receives, before it
// reads a byte of the body, and then lets the stub answer it.
type postRecorder struct {
	next  http.Handler
	mu    sync.Mutex
	posts []string // "path body"
}

func (p *postRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		p.mu.Lock()
		i := len(p.posts)
		p.posts = append(p.posts, r.URL.Path)
		p.mu.Unlock()
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.posts[i] += " " + string(b)
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	p.next.ServeHTTP(w, r)
}

// since returns the POSTs received from the n-th on.
func (p *postRecorder) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.posts[n:]...)
}

func (p *postRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.posts)
}

// TestMalformedBodyNeverReachesBackend: a client's body that is not valid
// JSON, wherever the fault lies (past the members a pass-through edits,
// inside a string's text, after the object), gets a 400 in the endpoint's
// own error shape and no backend receives any request for it, on every
// endpoint × backend protocol (a translated vendorb/ route, a native
// vendora/ one) × stream or not. The same body made valid reaches the
// backend on every row, so the table covers paths that do send.
func TestMalformedBodyNeverReachesBackend(t *testing.T) {
	// Each endpoint's body, with TEXT inside a string of its prompt and
	// EXTRA before the closing brace.
	messagesBody := `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":[{"type":"text","text":"TEXT"}]}]EXTRA}`
	chatBody := `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"TEXT"}]EXTRA}`
	responsesBody := `{"model":"local-model","max_output_tokens":32,"input":[{"role":"user","content":[{"type":"input_text","text":"TEXT"}]}]EXTRA}`
	endpoints := []struct {
		path, body string
		stream     bool // the endpoint takes "stream"
	}{
		{"/v1/messages", messagesBody, true},
		{"/v1/messages/count_tokens", messagesBody, false},
		{"/v1/chat/completions", chatBody, true},
		{"/chat/completions", chatBody, true},
		{"/v1/responses", responsesBody, true},
		{"/responses", responsesBody, true},
	}
	// A long text (past the 16 KB a body may be read whole within) before
	// some of the faults.
	long := strings.Repeat("a long prompt ", 1500)
	faults := []struct{ name, text, extra, after string }{
		{"literal", "hi", `,"x":tru`, ""},
		{"literal after a long text", long, `,"x":tru`, ""},
		{"number", "hi", `,"metadata":{"n":01}`, ""},
		{"trailing comma in an array", "hi", `,"x":[1,]`, ""},
		{"trailing comma in the object", "hi", `,`, ""},
		{"missing colon", "hi", `,"x":{"a" "b"}`, ""},
		{"bad escape", `a \q b`, "", ""},
		{"lone surrogate", `\ud800`, "", ""},
		{"invalid UTF-8", "a \xff b", "", ""},
		{"invalid UTF-8 after a long text", long + "\xff", "", ""},
		{"control character", "a \x01 b", "", ""},
		{"data after the object", "hi", "", ` {"x":1}`},
		{"unterminated", "hi", `,"x":"`, ""},
	}
	for _, protocol := range []string{stub.ProtocolChat, stub.ProtocolMessages} {
		rec := &postRecorder{next: stub.New(stub.Options{Protocol: protocol, Tokenize: true})}
		backend := httptest.NewServer(rec)
		t.Cleanup(backend.Close)
		h := newHarness(t, harnessOptions{backendURL: backend.URL + "/v1", native: protocol == stub.ProtocolMessages})
		for _, ep := range endpoints {
			for _, stream := range []bool{false, true} {
				if stream && !ep.stream {
					continue
				}
				streamMember := ""
				if stream {
					streamMember = `,"stream":true`
				}
				row := protocol + " " + ep.path
				if stream {
					row += " stream"
				}
				for _, f := range faults {
					body := strings.NewReplacer("TEXT", f.text, "EXTRA", streamMember+f.extra).Replace(ep.body) + f.after
					n := rec.count()
					resp, b := h.do(http.MethodPost, ep.path, body, nil, false)
					if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
						t.Errorf("%s, %s: %d %s %.300s", row, f.name, resp.StatusCode, resp.Header.Get("Content-Type"), b)
						continue
					}
					// "malformed JSON at byte offset …", or "… data after the JSON object".
					checkErrorShape(t, ep.path, b, "invalid_request_error", "JSON")
					if got := rec.since(n); len(got) > 0 {
						t.Errorf("%s, %s: the backend received %d requests: %.300q", row, f.name, len(got), got)
					}
				}
				// The same body, valid, reaches the backend.
				n := rec.count()
				resp, b := h.do(http.MethodPost, ep.path, strings.NewReplacer("TEXT", "hi", "EXTRA", streamMember).Replace(ep.body), nil, false)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s, valid: %d %.300s", row, resp.StatusCode, b)
				}
				if rec.count() == n {
					t.Errorf("%s, valid: no request reached the backend", row)
				}
			}
		}
	}
}
