package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const secretPath = "/services/T0SECRET/B0SECRET/xoxSECRETtoken"

// webhookServer answers each request with the next handler of answers, the
// last one repeating, and counts the requests.
type webhookServer struct {
	*httptest.Server
	requests atomic.Int32
}

func newWebhookServer(t *testing.T, answers ...http.HandlerFunc) *webhookServer {
	t.Helper()
	ws := &webhookServer{}
	ws.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(ws.requests.Add(1))
		answers[min(n, len(answers))-1](w, r)
	}))
	t.Cleanup(ws.Close)
	return ws
}

func (ws *webhookServer) secretURL() string { return ws.URL + secretPath }

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

// hang never answers. It reads the body first: only then does the server
// notice the client hanging up and cancel the request context.
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func jsonRequest(webhookURL, body string) Request {
	return Request{URL: webhookURL, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

func assertHidesURL(t *testing.T, err error, webhookURL string) {
	t.Helper()
	if err == nil {
		t.Fatal("Send succeeded, want an error")
	}
	if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), webhookURL) {
		t.Errorf("error reveals the webhook URL: %v", err)
	}
}

func TestDefaultBudgetIsFiveSeconds(t *testing.T) {
	if DefaultBudget != 5*time.Second {
		t.Errorf("DefaultBudget = %v, want 5s", DefaultBudget)
	}
	if got := (Sender{}).budget(); got != DefaultBudget {
		t.Errorf("zero Sender budget = %v, want DefaultBudget", got)
	}
}

func TestSendPostsBodyAndHeadersAsGiven(t *testing.T) {
	var method, contentType, body, path string
	ws := newWebhookServer(t, func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		method, contentType, body, path = r.Method, r.Header.Get("Content-Type"), string(raw), r.URL.Path
	})
	const sent = `{"text":"done <in> ` + "`p`" + ` & \"q\"\n✅"}`
	status, err := Sender{Budget: time.Second}.Send(context.Background(), jsonRequest(ws.secretURL(), sent))
	if err != nil {
		t.Fatal(err)
	}
	if status != "200 OK" {
		t.Errorf("status = %q, want 200 OK", status)
	}
	if method != http.MethodPost || contentType != "application/json" || path != secretPath {
		t.Errorf("request %s %s with Content-Type %q, want POST %s with application/json", method, path, contentType, secretPath)
	}
	if body != sent {
		t.Errorf("body = %s, want %s", body, sent)
	}
}

func TestSendRetriesOnceOn429HonouringRetryAfter(t *testing.T) {
	ws := newWebhookServer(t, status(http.StatusTooManyRequests, "Retry-After", "1"), status(http.StatusOK))
	start := time.Now()
	if _, err := (Sender{Budget: 3 * time.Second}).Send(context.Background(), jsonRequest(ws.secretURL(), `{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if n := ws.requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("retried after %v, before the 1s Retry-After", waited)
	}
}

func TestSendRetriesOnlyOnce(t *testing.T) {
	ws := newWebhookServer(t, status(http.StatusTooManyRequests, "Retry-After", "0"))
	_, err := Sender{Budget: time.Second}.Send(context.Background(), jsonRequest(ws.secretURL(), `{"text":"hi"}`))
	if !errors.As(err, new(*StatusError)) || !strings.Contains(err.Error(), "429") {
		t.Errorf("error = %v, want the second 429", err)
	}
	if n := ws.requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestSendGivesUpWhenRetryAfterExceedsBudget(t *testing.T) {
	ws := newWebhookServer(t, status(http.StatusTooManyRequests, "Retry-After", "30"), status(http.StatusOK))
	const budget = 10 * time.Second // not waited: the give-up comes well before it
	start := time.Now()
	_, err := Sender{Budget: budget}.Send(context.Background(), jsonRequest(ws.secretURL(), `{"text":"hi"}`))
	if err == nil || !strings.Contains(err.Error(), "Retry-After") {
		t.Errorf("error = %v, want one naming Retry-After", err)
	}
	if n := ws.requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	// Bounded by the budget, not by a guess at a loaded machine's speed
	// (it was 1 s): a Sender that waited would reach the budget.
	if took := time.Since(start); took >= budget {
		t.Errorf("took %v, want a give-up before the %v budget runs out", took, budget)
	}
}

func TestSendStopsAtBudget(t *testing.T) {
	ws := newWebhookServer(t, hang)
	budget := 200 * time.Millisecond
	start := time.Now()
	_, err := Sender{Budget: budget}.Send(context.Background(), jsonRequest(ws.secretURL(), `{"text":"hi"}`))
	// The webhook never answers: the error naming the budget (below) is
	// the budget ending Send. 10 s over it only ends a hang (it was 1 s,
	// a speed a loaded machine need not meet).
	if took := time.Since(start); took > budget+10*time.Second {
		t.Errorf("Send took %v with a %v budget", took, budget)
	}
	assertHidesURL(t, err, ws.secretURL())
	if !strings.Contains(err.Error(), "budget") {
		t.Errorf("error = %v, want one naming the budget", err)
	}
}

func TestSendErrorsHideURL(t *testing.T) {
	echoPath := func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no route for "+r.URL.String(), http.StatusNotFound)
	}
	tests := []struct {
		name     string
		url      func(t *testing.T) string
		contains string
	}{
		{"500", func(t *testing.T) string {
			return newWebhookServer(t, status(http.StatusInternalServerError)).secretURL()
		}, "500"},
		{"404 echoing the path", func(t *testing.T) string {
			return newWebhookServer(t, echoPath).secretURL()
		}, "404"},
		{"refused connection", func(t *testing.T) string { return refusingURL(t) }, "refused"},
		{"malformed URL", func(t *testing.T) string { return "http://127.0.0.1:bad" + secretPath }, "port"},
		{"unsupported scheme", func(t *testing.T) string { return "ftp://127.0.0.1" + secretPath }, "scheme"},
		{"redirect not followed", func(t *testing.T) string {
			return newWebhookServer(t, status(http.StatusFound, "Location", "/elsewhere")).secretURL()
		}, "302"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			webhookURL := tt.url(t)
			_, err := Sender{Budget: time.Second}.Send(context.Background(), jsonRequest(webhookURL, `{"text":"hi"}`))
			assertHidesURL(t, err, webhookURL)
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error = %v, want it to mention %q", err, tt.contains)
			}
		})
	}
}

func refusingURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + secretPath
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", defaultRetryAfter},
		{"3", 3 * time.Second},
		{"0", 0},
		{"-4", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"soon", defaultRetryAfter},
	}
	for _, tt := range tests {
		if got := retryDelay(tt.header, now); got != tt.want {
			t.Errorf("retryDelay(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestSnippetIsShortAndValidUTF8(t *testing.T) {
	got := snippet([]byte(strings.Repeat("é", snippetLimit)))
	if len(got) > snippetLimit+len("…") || !strings.HasSuffix(got, "…") {
		t.Errorf("snippet is %d bytes, want at most %d ending in an ellipsis", len(got), snippetLimit+len("…"))
	}
	if !strings.HasPrefix(got, "éé") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("snippet %q is not cut on a rune boundary", got)
	}
}

func TestSendErrorsHideQueryTokensAndPassword(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad token "+r.URL.Query().Get("token")+" for user with "+r.Header.Get("Authorization"), http.StatusUnauthorized)
	}
	ws := newWebhookServer(t, echo)
	webhookURL := strings.Replace(ws.URL, "http://", "http://me:PASSWORDSECRET@", 1) + "/v1/spaces/AAA/messages?key=KEYSECRET123&token=TOKENSECRET456"
	_, err := Sender{Budget: time.Second}.Send(context.Background(), jsonRequest(webhookURL, `{"text":"hi"}`))
	assertHidesURL(t, err, webhookURL)
	if !strings.Contains(err.Error(), "401") {
		t.Errorf("error = %v, want the 401", err)
	}
}
