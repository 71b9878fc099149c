package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/notifier/install"
	"github.com/dragoman-dev/dragoman/notifier/webhook"
)

const secretPath = "/services/T0SECRET/B0SECRET/xoxSECRETtoken"

const stopInput = `{"session_id":"abc123","cwd":"/home/dev/myproj","hook_event_name":"Stop",` +
	`"transcript_path":"/home/dev/.client/projects/x.jsonl","last_assistant_message":"All <3> tests pass & done."}`

const notificationInput = `{"session_id":"abc123","cwd":"/home/dev/myproj","hook_event_name":"Notification",` +
	`"message":"The client needs your permission to use Bash","title":"Client","notification_type":"permission_prompt"}`

// chatWebhook is a loopback webhook that records each request body and
// answers with respond (200 when nil).
type chatWebhook struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
	uris    []string // path and query of each request
}

func newChatWebhook(t *testing.T, respond http.HandlerFunc) *chatWebhook {
	t.Helper()
	hook := &chatWebhook{}
	hook.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hook.mu.Lock()
		hook.bodies = append(hook.bodies, string(body))
		hook.headers = append(hook.headers, r.Header)
		hook.uris = append(hook.uris, r.URL.RequestURI())
		hook.mu.Unlock()
		if respond != nil {
			respond(w, r)
		}
	}))
	t.Cleanup(hook.Close)
	return hook
}

func (h *chatWebhook) secretURL() string { return h.URL + secretPath }

func (h *chatWebhook) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

func (h *chatWebhook) onlyBody(t *testing.T) string {
	t.Helper()
	bodies := h.received()
	if len(bodies) != 1 {
		t.Fatalf("webhook got %d requests, want 1: %q", len(bodies), bodies)
	}
	return bodies[0]
}

func respondWith(status int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(status)
	}
}

// hang never answers; the server cancels it once the client gives up.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

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

func testApp(env map[string]string, budget time.Duration) app {
	a := newApp(func(name string) string { return env[name] })
	a.sender = webhook.Sender{Budget: budget}
	a.executable = func() (string, error) { return "", errors.New("no executable in this test") }
	a.homeDir = func() (string, error) { return "", errors.New("no home in this test") }
	return a
}

type result struct {
	status         int
	stdout, stderr string
}

func (a app) runWith(args []string, stdin io.Reader) result {
	var stdout, stderr bytes.Buffer
	status := a.run(args, stdin, &stdout, &stderr)
	return result{status, stdout.String(), stderr.String()}
}

func notifyWith(t *testing.T, webhookURL, stdin string, args ...string) result {
	t.Helper()
	a := testApp(map[string]string{envWebhookURL: webhookURL}, time.Second)
	res := a.runWith(args, strings.NewReader(stdin))
	if res.status != 0 {
		t.Errorf("exit status %d, want 0", res.status)
	}
	return res
}

func TestDefaultBudgetIsFiveSeconds(t *testing.T) {
	if got := newApp(os.Getenv).sender.Budget; got != 5*time.Second {
		t.Errorf("notify-chat's webhook budget is %v, want 5s", got)
	}
}

func TestRunPostsExactStopBody(t *testing.T) {
	hook := newChatWebhook(t, nil)
	res := notifyWith(t, hook.secretURL(), stopInput)
	want := "{\"text\":\"✅ Task complete in `myproj` (session `abc123`)\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
	if got := hook.headers[0].Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	if res.stdout != "" || res.stderr != "" {
		t.Errorf("a delivered message printed stdout %q stderr %q, want nothing", res.stdout, res.stderr)
	}
}

func TestRunPostsExactNotificationBody(t *testing.T) {
	hook := newChatWebhook(t, nil)
	notifyWith(t, hook.secretURL(), notificationInput)
	want := "{\"text\":\"🔔 Attention needed in `myproj` (session `abc123`): The client needs your permission to use Bash\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}

func TestRunEventArgumentOverridesInput(t *testing.T) {
	hook := newChatWebhook(t, nil)
	notifyWith(t, hook.secretURL(), stopInput, "Notification")
	if got := hook.onlyBody(t); !strings.Contains(got, "Attention needed") {
		t.Errorf("body = %s, want the Notification message", got)
	}
}

func TestRunDefaultsWithoutSessionOrCwd(t *testing.T) {
	hook := newChatWebhook(t, nil)
	res := notifyWith(t, hook.secretURL(), `{"hook_event_name":"Stop"}`)
	want := "{\"text\":\"✅ Task complete in `unknown` (session `unknown`)\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
	if res.stderr != "" {
		t.Errorf("stderr = %q, want nothing for valid input", res.stderr)
	}
}

func TestRunSendsNothingWithoutWebhookURL(t *testing.T) {
	hook := newChatWebhook(t, nil)
	for name, env := range map[string]map[string]string{
		"unset": {},
		"empty": {envWebhookURL: ""},
	} {
		t.Run(name, func(t *testing.T) {
			res := testApp(env, time.Second).runWith(nil, strings.NewReader("not even JSON"))
			if res.status != 0 || res.stdout != "" || res.stderr != "" {
				t.Errorf("got %+v, want status 0 and no output", res)
			}
		})
	}
	if got := hook.received(); len(got) != 0 {
		t.Errorf("webhook got %q, want nothing", got)
	}
}

func TestRunNonJSONStdinSendsDefaults(t *testing.T) {
	hook := newChatWebhook(t, nil)
	res := notifyWith(t, hook.secretURL(), "Stop: this is not JSON")
	want := "{\"text\":\"✅ Task complete in `unknown` (session `unknown`)\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
	if !strings.Contains(res.stderr, "not the hook JSON") || !strings.Contains(res.stderr, "defaults") {
		t.Errorf("stderr = %q, want it to say stdin was not JSON and defaults were sent", res.stderr)
	}
}

// chunkReader hands out its data a few KiB at a time, like a pipe.
type chunkReader struct{ data []byte }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 4096)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// hugeStopInput puts a 1 MiB last_assistant_message before session_id and
// cwd: reading less than all of stdin loses them.
func hugeStopInput(t *testing.T) []byte {
	t.Helper()
	input, err := json.Marshal(struct {
		Event   string `json:"hook_event_name"`
		Message string `json:"last_assistant_message"`
		Session string `json:"session_id"`
		Cwd     string `json:"cwd"`
	}{"Stop", "<" + strings.Repeat("x", 1<<20), "big-session", "/work/bigproj"})
	if err != nil {
		t.Fatal(err)
	}
	return input
}

func TestRunReadsStdinLargerThanPipeBufferWhole(t *testing.T) {
	hook := newChatWebhook(t, nil)
	a := testApp(map[string]string{envWebhookURL: hook.secretURL(), envExcerpt: "3"}, time.Second)
	res := a.runWith(nil, &chunkReader{data: hugeStopInput(t)})
	want := "{\"text\":\"✅ Task complete in `bigproj` (session `big-session`)\\n> &lt;xx…\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
	if res.status != 0 || res.stderr != "" {
		t.Errorf("got status %d stderr %q, want 0 and nothing", res.status, res.stderr)
	}
}

func TestRunExcerptIsEscaped(t *testing.T) {
	hook := newChatWebhook(t, nil)
	a := testApp(map[string]string{envWebhookURL: hook.secretURL(), envExcerpt: "20"}, time.Second)
	a.runWith(nil, strings.NewReader(stopInput))
	want := "{\"text\":\"✅ Task complete in `myproj` (session `abc123`)\\n> All &lt;3&gt; tests pass &amp;…\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}

func TestRunIgnoresBadExcerptSetting(t *testing.T) {
	hook := newChatWebhook(t, nil)
	a := testApp(map[string]string{envWebhookURL: hook.secretURL(), envExcerpt: "lots"}, time.Second)
	res := a.runWith(nil, strings.NewReader(stopInput))
	if got := hook.onlyBody(t); strings.Contains(got, "tests pass") {
		t.Errorf("body = %s, want no excerpt", got)
	}
	if !strings.Contains(res.stderr, envExcerpt) {
		t.Errorf("stderr = %q, want it to name %s", res.stderr, envExcerpt)
	}
}

func TestRunFailuresExitZeroWithinBudgetAndHideURL(t *testing.T) {
	// 3 s: the 429 case waits its 1 s Retry-After and must then deliver
	// its retry inside the budget, which a loaded machine may not do in
	// the 0.5 s a 1.5 s budget left.
	const budget = 3 * time.Second
	tests := []struct {
		name      string
		url       func(t *testing.T) string
		requests  int // -1: no server to count
		stderrHas string
	}{
		{"webhook 500", func(t *testing.T) string {
			return newChatWebhook(t, respondWith(http.StatusInternalServerError)).secretURL()
		}, 1, "500"},
		{"webhook 429 with Retry-After", nil, 2, "429"},
		{"webhook 429 asking for longer than the budget", func(t *testing.T) string {
			return newChatWebhook(t, respondWith(http.StatusTooManyRequests, "Retry-After", "60")).secretURL()
		}, 1, "Retry-After"},
		{"webhook hangs", func(t *testing.T) string { return newChatWebhook(t, hang).secretURL() }, 1, "budget"},
		{"connection refused", refusingURL, -1, "refused"},
		{"malformed URL", func(*testing.T) string { return "http://127.0.0.1:port" + secretPath }, -1, "port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hook *chatWebhook
			webhookURL := ""
			if tt.url == nil {
				hook = newChatWebhook(t, respondWith(http.StatusTooManyRequests, "Retry-After", "1"))
				webhookURL = hook.secretURL()
			} else {
				webhookURL = tt.url(t)
			}
			a := testApp(map[string]string{envWebhookURL: webhookURL}, budget)
			start := time.Now()
			res := a.runWith([]string{"Stop"}, strings.NewReader(stopInput))
			// That the budget ended a hanging delivery is its error's
			// word ("budget", below); 10 s over it only ends a hang (it
			// was 0.5 s, a speed a loaded machine need not meet).
			if took := time.Since(start); took > budget+10*time.Second {
				t.Errorf("took %v with a %v budget", took, budget)
			}
			if res.status != 0 {
				t.Errorf("exit status %d, want 0", res.status)
			}
			if !strings.Contains(res.stderr, "not delivered") || !strings.Contains(res.stderr, tt.stderrHas) {
				t.Errorf("stderr = %q, want a delivery failure mentioning %q", res.stderr, tt.stderrHas)
			}
			if strings.Contains(res.stderr, "SECRET") || strings.Contains(res.stderr, webhookURL) {
				t.Errorf("stderr reveals the webhook URL: %q", res.stderr)
			}
			if hook != nil && len(hook.received()) != tt.requests {
				t.Errorf("webhook got %d requests, want %d", len(hook.received()), tt.requests)
			}
		})
	}
}

func TestNeverFailTurnsPanicIntoStatusZero(t *testing.T) {
	var stderr bytes.Buffer
	status := neverFail(&stderr, func() { panic("boom") })
	if status != 0 || !strings.Contains(stderr.String(), "boom") {
		t.Errorf("status %d stderr %q, want 0 and the panic reported", status, stderr.String())
	}
}

func TestRunUnknownOptionSendsNothingAndExitsZero(t *testing.T) {
	hook := newChatWebhook(t, nil)
	res := notifyWith(t, hook.secretURL(), stopInput, "--verbose")
	if len(hook.received()) != 0 || !strings.Contains(res.stderr, "--verbose") {
		t.Errorf("webhook got %q, stderr %q; want nothing sent and the option named", hook.received(), res.stderr)
	}
}

func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"install", "-h"}, {"install", "--help"}} {
		res := testApp(nil, time.Second).runWith(args, strings.NewReader(""))
		if res.status != 0 || !strings.Contains(res.stdout, "notify-chat install [--global | --project | --client codex] [--config-dir DIR] [--events LIST] [--force] [--dry-run]") {
			t.Errorf("%v: status %d stdout %q, want 0 and the usage", args, res.status, res.stdout)
		}
	}
	for _, args := range [][]string{{"-h"}, {"uninstall", "-h"}, {"uninstall", "--help"}} {
		res := testApp(nil, time.Second).runWith(args, strings.NewReader(""))
		if res.status != 0 || !strings.Contains(res.stdout, "notify-chat uninstall [--global | --project | --client codex] [--config-dir DIR] [--dry-run]") {
			t.Errorf("%v: status %d stdout %q, want 0 and the usage", args, res.status, res.stdout)
		}
	}
}

// installApp is an app whose running binary is a small fake file.
func installApp(t *testing.T, env map[string]string) app {
	t.Helper()
	source := filepath.Join(t.TempDir(), "notify-chat")
	if err := os.WriteFile(source, []byte("fake binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := testApp(env, time.Second)
	a.executable = func() (string, error) { return source, nil }
	return a
}

func TestInstallConfigDirDefaults(t *testing.T) {
	home, fromEnv, fromClaude, fromFlag := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantDir string
	}{
		{"home", nil, nil, filepath.Join(home, ".claude")},
		{"CLAUDE_CONFIG_DIR", map[string]string{envClaudeDir: fromClaude}, nil, fromClaude},
		{"CLIENT_CONFIG_DIR overrides CLAUDE_CONFIG_DIR", map[string]string{envConfigDir: fromEnv, envClaudeDir: fromClaude}, nil, fromEnv},
		{"--config-dir wins", map[string]string{envConfigDir: fromEnv}, []string{"--config-dir", fromFlag}, fromFlag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := installApp(t, tt.env)
			a.homeDir = func() (string, error) { return home, nil }
			res := a.runWith(append([]string{"install", "--global"}, tt.args...), nil)
			if res.status != 0 {
				t.Fatalf("status %d, stderr %q", res.status, res.stderr)
			}
			settings, err := os.ReadFile(filepath.Join(tt.wantDir, "settings.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(settings), install.BinaryPath(tt.wantDir)) {
				t.Errorf("settings do not run %s:\n%s", install.BinaryPath(tt.wantDir), settings)
			}
		})
	}
}

func TestInstallProjectWritesSettingsLocal(t *testing.T) {
	projectDir, configDir := t.TempDir(), t.TempDir()
	t.Chdir(projectDir)
	res := installApp(t, nil).runWith([]string{"install", "--project", "--config-dir", configDir}, nil)
	if res.status != 0 {
		t.Fatalf("status %d, stderr %q", res.status, res.stderr)
	}
	settings, err := os.ReadFile(filepath.Join(projectDir, ".claude", "settings.local.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(settings), install.BinaryPath(configDir)) {
		t.Errorf("project settings do not run %s:\n%s", install.BinaryPath(configDir), settings)
	}
	if _, err := os.Stat(install.GlobalSettings(configDir)); !os.IsNotExist(err) {
		t.Errorf("--project also wrote the global settings (stat err %v)", err)
	}
	if _, err := os.Stat(install.BinaryPath(configDir)); err != nil {
		t.Errorf("binary not installed under the config dir: %v", err)
	}
}

func TestInstallDryRunWritesNothing(t *testing.T) {
	configDir := filepath.Join(t.TempDir(), "client")
	res := installApp(t, nil).runWith([]string{"install", "--dry-run", "--config-dir", configDir}, nil)
	if res.status != 0 || !strings.Contains(res.stdout, `"command": "`+install.BinaryPath(configDir)+`"`) {
		t.Errorf("status %d stdout %q, want 0 and the settings it would write", res.status, res.stdout)
	}
	if _, err := os.Stat(configDir); !os.IsNotExist(err) {
		t.Errorf("dry run created %s (stat err %v)", configDir, err)
	}
}

func TestInstallMalformedSettingsExitsNonZero(t *testing.T) {
	configDir := t.TempDir()
	settings := install.GlobalSettings(configDir)
	if err := os.WriteFile(settings, []byte("{oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := installApp(t, nil).runWith([]string{"install", "--config-dir", configDir}, nil)
	if res.status == 0 || !strings.Contains(res.stderr, settings) || !strings.Contains(res.stderr, "left untouched") {
		t.Errorf("status %d stderr %q, want non-zero and a message naming the file", res.status, res.stderr)
	}
	if got, _ := os.ReadFile(settings); string(got) != "{oops" {
		t.Errorf("malformed file now holds %q", got)
	}
}

func TestInstallRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{{"--global", "--project"}, {"--nope"}, {"extra"}} {
		res := installApp(t, nil).runWith(append([]string{"install", "--config-dir", t.TempDir()}, args...), nil)
		if res.status != 2 || !strings.Contains(res.stderr, "Usage:") {
			t.Errorf("%v: status %d stderr %q, want 2 and the usage", args, res.status, res.stderr)
		}
	}
}
