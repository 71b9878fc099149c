package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
)

// chatAnswer is a backend's non-stream Chat completion.
const chatAnswer = `{"id":"c","object":"chat.completion","model":"qwen3-coder","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`

// forwardBackend answers a Chat completion once it has read the request,
// and tells when the request's first body bytes came.
func forwardBackend(t *testing.T) (url string, firstBytes <-chan struct{}, bodies <-chan string) {
	first := make(chan struct{}, 8)
	got := make(chan string, 8)
	url = serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1)
		n, _ := io.ReadFull(r.Body, buf)
		if n == 1 {
			first <- struct{}{}
		}
		rest, err := io.ReadAll(r.Body)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(buf[:n]) + string(rest)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	}))
	return url, first, got
}

// TestChatBodyForwardedWhileItArrives: the backend receives the start of
// the body before the client has sent its end, with model rewritten.
func TestChatBodyForwardedWhileItArrives(t *testing.T) {
	url, first, bodies := forwardBackend(t)
	h := newHarness(t, harnessOptions{backendURL: url})
	sendWhileBackendWaits(t, h, first, bodies, true)
}

// TestChatBodyHeldWithoutForwarding: without Options.ForwardChatBody (the
// binary's default) the backend gets nothing before the body arrived whole.
func TestChatBodyHeldWithoutForwarding(t *testing.T) {
	url, first, bodies := forwardBackend(t)
	h := newHarness(t, harnessOptions{backendURL: url, wholeBody: true})
	sendWhileBackendWaits(t, h, first, bodies, false)
}

// sendWhileBackendWaits sends a 64 KiB Chat body in two writes; the
// backend must (forwarded) or must not have received its start between
// them, and gets it whole with model rewritten either way.
func sendWhileBackendWaits(t *testing.T, h *harness, first <-chan struct{}, bodies <-chan string, forwarded bool) {
	t.Helper()
	head := `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"` + strings.Repeat("x", 64<<10) + `"}`
	tail := `],"stream":false,"max_tokens":77}`
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/chat/completions", pr)
	req.ContentLength = int64(len(head) + len(tail)) // as clients send it
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	io.WriteString(pw, head)
	if forwarded {
		select {
		case <-first:
		case <-time.After(10 * time.Second):
			pw.CloseWithError(io.ErrUnexpectedEOF)
			t.Fatal("the backend got nothing while the client was still sending: the body was held")
		}
	} else {
		select {
		case <-first:
			pw.CloseWithError(io.ErrUnexpectedEOF)
			t.Fatal("the backend got the body's start while the client was still sending, without ForwardChatBody")
		case <-time.After(500 * time.Millisecond):
		}
	}
	io.WriteString(pw, tail)
	pw.Close()
	resp := <-done
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	var out struct {
		Model string `json:"model"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil || out.Model != "claude-opus-5-5" {
		t.Fatalf("status %d, model %q", resp.StatusCode, out.Model)
	}
	body := <-bodies
	if want := strings.Replace(head+tail, `"claude-opus-5-5"`, `"qwen3-coder"`, 1); body != want {
		t.Fatalf("backend body %.80q…, want %.80q…", body, want)
	}
}

// TestChatMalformedAfterModel: a body that goes wrong after its model was
// read (and the backend chosen) still gets a 400 in the Chat shape, and
// the backend never receives it whole.
func TestChatMalformedAfterModel(t *testing.T) {
	url, _, bodies := forwardBackend(t)
	h := newHarness(t, harnessOptions{backendURL: url})
	big := strings.Repeat("y", 64<<10)
	for _, body := range []string{
		`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"` + big + `"}],"stream":"yes"}`,
		`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"` + big + `"}]} trailing`,
		`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"` + big + `"}],"max_tokens":0.5}`,
		`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"` + big + `"},{"role":7}]}`,
		`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"` + big + `"}]`,
	} {
		resp := h.post("/v1/chat/completions", body, "Content-Type", "application/json")
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		err := json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
			t.Fatalf("%.40q…%q: status %d, error %+v (%v); want a 400 in the Chat shape", body, body[len(body)-20:], resp.StatusCode, e, err)
		}
		t.Logf("malformed after model: %d %s", resp.StatusCode, e.Error.Message)
		select {
		case b := <-bodies:
			if !strings.HasPrefix(b, "error: ") {
				t.Fatalf("the backend received the malformed body whole: %.80q…", b)
			}
		case <-time.After(2 * time.Second):
			// The backend request was abandoned before the backend read it.
		}
	}
	if strings.Contains(h.logs.String(), "level=WARN") {
		t.Errorf("a client's malformed body logged as a backend failure:\n%s", h.logs.String())
	}
}

// TestChatForwardedBodyRetried: a forwarded body that a backend of the
// pool refused (503) after reading part of it goes whole to another
// backend of the pool, with that backend's model.
func TestChatForwardedBodyRetried(t *testing.T) {
	var calls atomic.Int32
	got := make(chan string, 4)
	backend := func(name string) string {
		return serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				io.ReadFull(r.Body, make([]byte, 1000))
				w.Header().Set("Connection", "close")
				http.Error(w, `{"error":{"message":"loading"}}`, http.StatusServiceUnavailable)
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			got <- name + " " + string(b)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, chatAnswer)
		}))
	}
	y := fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params: {model: vendorb/m0, api_base: '%s', api_key: k, name: b0}
  - model_name: coder
    proxy_params: {model: vendorb/m1, api_base: '%s', api_key: k, name: b1}
`, backend("b0"), backend("b1"))
	p := newPoolProxyYAML(t, y, nil, balance.Options{})
	body := `{"model":"coder","messages":[{"role":"user","content":"` + strings.Repeat("r", 48<<10) + `"}],"stream":false}`
	resp, b, err := p.post("/v1/chat/completions", "", body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %d %s", err, resp.StatusCode, b)
	}
	var second string
	select {
	case second = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no backend read the body whole")
	}
	name, sent, _ := strings.Cut(second, " ")
	model := map[string]string{"b0": "m0", "b1": "m1"}[name]
	if want := strings.Replace(body, `"coder"`, `"`+model+`"`, 1); sent != want {
		t.Fatalf("the retry at %s sent %d bytes %.60q…, want %d bytes with model %s", name, len(sent), sent, len(want), model)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d backend requests, want 2", n)
	}
}

// TestChatLargeBodyRewrittenWhole: a large body to a backend that needs
// more than model changed (system turns folded, max_tokens clamped) is
// read whole and translated, as before.
func TestChatLargeBodyRewrittenWhole(t *testing.T) {
	h := newHarness(t, harnessOptions{extraYAML: "      supports_system_message: false\n      max_output_tokens: 100\n"})
	body := `{"model":"claude-opus-5-5","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"` + strings.Repeat("s", 40<<10) + `"}],"max_tokens":5000}`
	resp := h.post("/v1/chat/completions", body, "Content-Type", "application/json")
	b := drain(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d backend requests", len(reqs))
	}
	msgs := reqs[0]["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["role"] != "user" || reqs[0]["max_tokens"] != float64(100) {
		t.Fatalf("not rewritten: %d messages, first %v, max_tokens %v", len(msgs), msgs[0].(map[string]any)["role"], reqs[0]["max_tokens"])
	}
}
