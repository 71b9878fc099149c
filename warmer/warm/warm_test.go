package warm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

const testKey = "sk-warm-test-7f3a"

// lockedBuffer collects log output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newWarmer(timeout time.Duration) (*Warmer, *lockedBuffer) {
	logs := &lockedBuffer{}
	return &Warmer{Client: NewClient(), Timeout: timeout, Log: slog.New(slog.NewTextHandler(logs, nil))}, logs
}

// startStub serves a stub backend on loopback and returns it with its /v1 base.
func startStub(t *testing.T, opts stub.Options) (*stub.Server, string) {
	t.Helper()
	s := stub.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL + "/v1"
}

// startHandler serves h on loopback and returns its /v1 base.
func startHandler(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/v1"
}

// blockUntilGone is a backend that never answers. It reads the body first:
// only then does the server notice the client hanging up.
func blockUntilGone(_ http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

type warmBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens *int `json:"max_tokens"`
	Stream    bool `json:"stream"`
}

// checkWarmRequest fails unless r is a warm request for model with key.
func checkWarmRequest(t *testing.T, r stub.Request, model, key string) {
	t.Helper()
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization = %q, want Bearer <key>", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	var b warmBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	if b.Model != model || b.MaxTokens == nil || *b.MaxTokens != 1 || b.Stream ||
		len(b.Messages) != 1 || b.Messages[0].Role != "user" || b.Messages[0].Content == "" {
		t.Errorf("body = %s, want model %q, max_tokens 1, one user message, no stream", r.Body, model)
	}
}

func TestWarmSendsOneTokenRequest(t *testing.T) {
	t.Parallel()
	s, base := startStub(t, stub.Options{})
	w, logs := newWarmer(5 * time.Second)
	res := w.Warm(t.Context(), Target{Model: "qwen3-coder", APIBase: base, APIKey: testKey})
	if !res.OK() || res.Status != 200 || res.Latency <= 0 {
		t.Fatalf("result = %+v, want 200 OK with a latency", res)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("stub got %d requests, want 1", len(reqs))
	}
	checkWarmRequest(t, reqs[0], "qwen3-coder", testKey)
	w.logResult(res)
	if out := logs.String(); !strings.Contains(out, "model=qwen3-coder") || !strings.Contains(out, "status=200") || !strings.Contains(out, "latency=") {
		t.Errorf("log line lacks model, status or latency: %s", out)
	}
}

func TestWarmStatusErrorMasksKey(t *testing.T) {
	t.Parallel()
	base := startHandler(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// A careless backend that echoes the key it was sent.
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "invalid key " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), "type": "auth"}})
	})
	w, logs := newWarmer(5 * time.Second)
	target := Target{Model: "m", APIBase: base, APIKey: testKey}
	res := w.Warm(t.Context(), target)
	var se *StatusError
	if !errors.As(res.Err, &se) || se.Code != 401 || res.Status != 401 {
		t.Fatalf("err = %v, status %d; want a 401 StatusError", res.Err, res.Status)
	}
	if !strings.Contains(se.Message, "invalid key [key]") {
		t.Errorf("message = %q, want the backend's text with the key masked", se.Message)
	}
	if Retryable(res.Err) {
		t.Error("a 401 was judged retryable")
	}
	w.logResult(res)
	slog.New(slog.NewTextHandler(logs, nil)).Info("target", "target", target)
	if out := logs.String(); strings.Contains(out, testKey) || strings.Contains(res.Err.Error(), testKey) || strings.Contains(target.String(), testKey) {
		t.Errorf("the key leaked: %s / %v", out, res.Err)
	}
}

func TestWarmTimeout(t *testing.T) {
	t.Parallel()
	base := startHandler(t, blockUntilGone)
	w, _ := newWarmer(300 * time.Millisecond)
	start := time.Now()
	res := w.Warm(t.Context(), Target{Model: "m", APIBase: base, APIKey: testKey})
	var te *TimeoutError
	if !errors.As(res.Err, &te) || te.Timeout != 300*time.Millisecond {
		t.Fatalf("err = %v, want a TimeoutError of 300ms", res.Err)
	}
	// The handler never answers, so the TimeoutError is the 300 ms
	// timeout's; it cannot come sooner (no upper bound: load decides).
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("took %s, less than the 300ms timeout", el)
	}
	if !Retryable(res.Err) || !strings.Contains(res.Err.Error(), "WARMER_TIMEOUT") {
		t.Errorf("timeout error %q: want retryable and naming WARMER_TIMEOUT", res.Err)
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), true},
		{&TimeoutError{time.Second}, true},
		{&StatusError{Code: 503, Message: "Loading model"}, true},
		{&StatusError{Code: 502}, true},
		{&StatusError{Code: 429}, true},
		{&StatusError{Code: 408}, true},
		{&StatusError{Code: 401}, false},
		{&StatusError{Code: 404, Message: "model not found"}, false},
		{&StatusError{Code: 400}, false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`: "Loading model",
		`{"error":"model 'x' not found"}`:                                             "model 'x' not found",
		`{"message":"busy"}`:                                                          "busy",
		"upstream\n  connect error":                                                   "upstream connect error",
		strings.Repeat("x", 300):                                                      strings.Repeat("x", 200) + "…",
	} {
		if got := errorText([]byte(body), "k"); got != want {
			t.Errorf("errorText(%.40q) = %q, want %q", body, got, want)
		}
	}
}

func TestTargetRedactsPassword(t *testing.T) {
	tg := Target{Model: "m", APIBase: "https://user:hunter2@gpu.example/v1", APIKey: testKey}
	if s := tg.String(); strings.Contains(s, "hunter2") || !strings.Contains(s, "gpu.example/v1") {
		t.Errorf("String() = %q", s)
	}
}

// waitFor polls cond until it holds or the time runs out.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %s waiting for %s", d, what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
