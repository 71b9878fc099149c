// Package warm sends the warmer's requests: one Chat Completions request
// with max_tokens 1 per backend model, its answer read and discarded, and
// on Ollama a read of GET /api/ps for when the model's keep-alive runs
// out. It owns the keepalive loop (Loop), the pre-warm that retries until
// every model answered (Once), and nothing of how targets are configured.
package warm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultPrompt is the user message of every warm request.
const DefaultPrompt = "ping"

// Target is one backend model to keep warm. Two targets are the same when
// they share APIBase and Model; the key is never logged or printed.
type Target struct {
	Model   string   // the backend model name sent in "model"
	APIBase string   // the backend's base URL, ending in /v1, no trailing slash
	APIKey  string   // sent as "Authorization: Bearer <APIKey>"
	Aliases []string // proxy aliases that reach this model, for logs; may be empty
}

// URL is where the warm request goes.
func (t Target) URL() string { return t.APIBase + "/chat/completions" }

// Base is APIBase with any password in it masked, for logs.
func (t Target) Base() string {
	u, err := url.Parse(t.APIBase)
	if err != nil {
		return "(unparsable api_base)"
	}
	return u.Redacted()
}

// String names the target, "model at base (aliases a, b)", without the key.
func (t Target) String() string {
	s := t.Model + " at " + t.Base()
	if len(t.Aliases) > 0 {
		s += " (aliases " + strings.Join(t.Aliases, ", ") + ")"
	}
	return s
}

// LogValue keeps the key out of structured logs.
func (t Target) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("model", t.Model), slog.String("api_base", t.Base())}
	if len(t.Aliases) > 0 {
		attrs = append(attrs, slog.String("aliases", strings.Join(t.Aliases, ",")))
	}
	return slog.GroupValue(attrs...)
}

// Warmer sends warm requests.
type Warmer struct {
	Client  *http.Client  // nil: http.DefaultClient; main uses NewClient
	Timeout time.Duration // per request, answer body included; 0: no limit beyond the context
	Log     *slog.Logger  // nil: slog.Default()
	Prompt  string        // the user message; empty: DefaultPrompt
}

// NewClient returns the HTTP client warm requests use: the default
// transport's settings (proxy from the environment, keep-alive), no
// client-wide timeout since every request carries its own.
func NewClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// Result is what one warm request came to.
type Result struct {
	Target  Target
	Start   time.Time
	Latency time.Duration // until the answer was read to its end, or the failure
	Status  int           // HTTP status; 0 when no answer came
	Err     error         // nil only for a 2xx whose body was read to its end
}

// OK reports whether the backend answered with a 2xx.
func (r Result) OK() bool { return r.Err == nil }

// StatusError is a non-2xx answer.
type StatusError struct {
	Code    int
	Message string // the start of the answer's body, the key masked
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("backend answered %d %s", e.Code, http.StatusText(e.Code))
	}
	return fmt.Sprintf("backend answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// TimeoutError is a request that got no full answer within Warmer.Timeout.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("no answer within %s (WARMER_TIMEOUT)", e.Timeout)
}

// Retryable reports whether trying again later may succeed: no answer at
// all (connection refused, reset, time-out), 408, 425, 429 and 5xx (such as
// 503 "Loading model"). Other 4xx (a wrong key, an unknown model) will not
// change by waiting.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		c := se.Code
		return c == http.StatusRequestTimeout || c == http.StatusTooEarly || c == http.StatusTooManyRequests || c >= 500
	}
	return true
}

// Warm sends one warm request to t and reads its answer to the end.
func (w *Warmer) Warm(ctx context.Context, t Target) Result {
	res := Result{Target: t, Start: time.Now()}
	reqCtx, cancel := ctx, context.CancelFunc(func() {})
	if w.Timeout > 0 {
		reqCtx, cancel = context.WithTimeoutCause(ctx, w.Timeout, &TimeoutError{w.Timeout})
	}
	defer cancel()

	status, err := w.send(reqCtx, t)
	res.Latency = time.Since(res.Start)
	res.Status = status
	var se *StatusError
	if err != nil && reqCtx.Err() != nil && !errors.As(err, &se) {
		// Say why the request was cut short, not how it surfaced.
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		} else {
			err = context.Cause(reqCtx)
		}
	}
	res.Err = err
	return res
}

func (w *Warmer) send(ctx context.Context, t Target) (int, error) {
	prompt := w.Prompt
	if prompt == "" {
		prompt = DefaultPrompt
	}
	body, err := json.Marshal(request{
		Model:     t.Model,
		Messages:  []message{{Role: "user", Content: prompt}},
		MaxTokens: 1,
	})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL(), bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+t.APIKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "dragoman-warmer")
	client := w.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the log line already
		}
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return resp.StatusCode, fmt.Errorf("reading the answer: %w", err)
		}
		return resp.StatusCode, nil
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	return resp.StatusCode, &StatusError{Code: resp.StatusCode, Message: errorText(head, t.APIKey)}
}

type request struct {
	Model     string    `json:"model"`
	Messages  []message `json:"messages"`
	MaxTokens int       `json:"max_tokens"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// errorText picks the message out of an error body ({"error":{"message":…}}
// or {"error":"…"} or {"message":…}, else the text itself), shortened and on
// one line, with the key masked should the backend echo it.
func errorText(body []byte, key string) string {
	var shaped struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	text := string(body)
	if json.Unmarshal(body, &shaped) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var plain string
		switch {
		case json.Unmarshal(shaped.Error, &inner) == nil && inner.Message != "":
			text = inner.Message
		case json.Unmarshal(shaped.Error, &plain) == nil && plain != "":
			text = plain
		case shaped.Message != "":
			text = shaped.Message
		}
	}
	if key != "" {
		text = strings.ReplaceAll(text, key, "[key]")
	}
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) + "…"
	}
	return text
}

func (w *Warmer) log() *slog.Logger {
	if w.Log != nil {
		return w.Log
	}
	return slog.Default()
}

// logResult writes one structured line per warm request.
func (w *Warmer) logResult(res Result, attrs ...any) {
	args := []any{
		slog.String("model", res.Target.Model),
		slog.String("api_base", res.Target.Base()),
		slog.Duration("latency", res.Latency.Round(time.Millisecond)),
		slog.Int("status", res.Status),
	}
	args = append(args, attrs...)
	if res.OK() {
		w.log().Info("warm ok", args...)
		return
	}
	args = append(args, slog.String("error", res.Err.Error()))
	w.log().Warn("warm failed", args...)
}
