package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/notifier/install"
)

func testCommandApp(env map[string]string) app {
	a := testApp(env, time.Second)
	a.workingDir = func() (string, error) { return "/home/dev/myproj", nil }
	return a
}

func TestTestSendsOneMessageAndPrintsTheStatus(t *testing.T) {
	hook := newChatWebhook(t, nil)
	res := testCommandApp(map[string]string{envWebhookURL: hook.secretURL()}).runWith([]string{"test"}, nil)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("status %d stderr %q, want 0 and nothing", res.status, res.stderr)
	}
	// No home in this test, nothing in the working folder: registered nowhere.
	if want := "not registered in any file Claude Code or Codex reads: run notify-chat install (Claude Code) or notify-chat install --client codex\n" +
		"sent a test message (format text, chosen from the URL): HTTP 200 OK\n"; res.stdout != want {
		t.Errorf("stdout = %q, want %q", res.stdout, want)
	}
	want := "{\"text\":\"🧪 notify-chat test in `myproj` (session `test`): the hook can post to this channel\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
}

func TestTestUsesTheFormatSet(t *testing.T) {
	hook := newChatWebhook(t, respondWith(http.StatusNoContent))
	res := testCommandApp(map[string]string{envWebhookURL: hook.secretURL(), envFormat: "discord"}).runWith([]string{"test"}, nil)
	if res.status != 0 || !strings.Contains(res.stdout, "format discord, set by CHAT_WEBHOOK_FORMAT): HTTP 204 No Content") {
		t.Errorf("status %d stdout %q", res.status, res.stdout)
	}
	if got := hook.onlyBody(t); !strings.HasPrefix(got, `{"content":"🧪 notify-chat test in `) {
		t.Errorf("body = %s, want a Discord body", got)
	}
}

func TestTestFailsLoudlyWithoutPrintingTheURL(t *testing.T) {
	tests := []struct {
		name   string
		env    func(t *testing.T) map[string]string
		status int
		stderr string
	}{
		{"webhook 404", func(t *testing.T) map[string]string {
			return map[string]string{envWebhookURL: newChatWebhook(t, echoRequest404).secretURL()}
		}, 1, "404"},
		{"connection refused", func(t *testing.T) map[string]string {
			return map[string]string{envWebhookURL: refusingURL(t)}
		}, 1, "refused"},
		{"webhook hangs", func(t *testing.T) map[string]string {
			return map[string]string{envWebhookURL: newChatWebhook(t, hang).secretURL()}
		}, 1, "budget"},
		{"no URL", func(*testing.T) map[string]string { return nil }, 2, "CHAT_WEBHOOK_URL is not set"},
		{"unknown format", func(t *testing.T) map[string]string {
			return map[string]string{envWebhookURL: newChatWebhook(t, nil).secretURL(), envFormat: "slack"}
		}, 2, `unknown format "slack"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env(t)
			start := time.Now()
			res := testCommandApp(env).runWith([]string{"test"}, nil)
			// A hang bound, not a speed (it was 2 s): the hanging
			// webhook's error names the budget that ended it.
			if took := time.Since(start); took > 11*time.Second {
				t.Errorf("took %v with a 1s budget", took)
			}
			if res.status != tt.status || !strings.Contains(res.stderr, tt.stderr) || strings.Contains(res.stdout, "sent") {
				t.Errorf("status %d stdout %q stderr %q; want %d and %q", res.status, res.stdout, res.stderr, tt.status, tt.stderr)
			}
			if url := env[envWebhookURL]; url != "" && (strings.Contains(res.stderr, "SECRET") || strings.Contains(res.stderr, url)) {
				t.Errorf("stderr reveals the webhook URL: %q", res.stderr)
			}
		})
	}
}

func echoRequest404(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "no_service for "+r.URL.String(), http.StatusNotFound)
}

func TestTestRejectsArguments(t *testing.T) {
	res := testCommandApp(nil).runWith([]string{"test", "now"}, nil)
	if res.status != 2 || !strings.Contains(res.stderr, `"now"`) {
		t.Errorf("status %d stderr %q, want 2 and the argument named", res.status, res.stderr)
	}
}

func TestHookFallsBackToAutoOnAnUnknownFormat(t *testing.T) {
	hook := newChatWebhook(t, nil)
	a := testApp(map[string]string{envWebhookURL: hook.secretURL(), envFormat: "slack"}, time.Second)
	res := a.runWith(nil, strings.NewReader(stopInput))
	if res.status != 0 || !strings.Contains(res.stderr, `unknown format "slack"`) || !strings.Contains(res.stderr, "auto") {
		t.Errorf("status %d stderr %q, want 0 and the bad value named", res.status, res.stderr)
	}
	if got := hook.onlyBody(t); !strings.HasPrefix(got, `{"text":"✅ Task complete`) {
		t.Errorf("body = %s, want the auto (text) body", got)
	}
}

func TestInstallEventsAndUninstall(t *testing.T) {
	configDir := t.TempDir()
	a := installApp(t, nil)
	res := a.runWith([]string{"install", "--config-dir", configDir, "--events", "Stop,Notification,SubagentStop"}, nil)
	if res.status != 0 {
		t.Fatalf("install: status %d stderr %q", res.status, res.stderr)
	}
	settings, _ := os.ReadFile(install.GlobalSettings(configDir))
	if n := strings.Count(string(settings), install.BinaryPath(configDir)); n != 3 {
		t.Errorf("settings run the binary %d times, want 3:\n%s", n, settings)
	}
	t.Chdir(t.TempDir()) // no project settings here
	res = a.runWith([]string{"uninstall", "--config-dir", configDir}, nil)
	if res.status != 0 || !strings.Contains(res.stdout, "removed "+install.BinaryPath(configDir)) {
		t.Errorf("uninstall: status %d stdout %q stderr %q", res.status, res.stdout, res.stderr)
	}
	entries, _ := os.ReadDir(configDir)
	if len(entries) != 0 {
		t.Errorf("%s still holds %v after uninstall", configDir, entries)
	}
}

func TestInstallRejectsUnknownEvents(t *testing.T) {
	res := installApp(t, nil).runWith([]string{"install", "--config-dir", t.TempDir(), "--events", "Stop,PreToolUse"}, nil)
	if res.status != 2 || !strings.Contains(res.stderr, `"PreToolUse"`) || !strings.Contains(res.stderr, "SubagentStop") {
		t.Errorf("status %d stderr %q, want 2 and the known events listed", res.status, res.stderr)
	}
}

func TestUninstallProjectKeepsTheBinaryTheGlobalSettingsRun(t *testing.T) {
	configDir, projectDir := t.TempDir(), t.TempDir()
	t.Chdir(projectDir)
	a := installApp(t, nil)
	for _, scope := range []string{"--global", "--project"} {
		if res := a.runWith([]string{"install", scope, "--config-dir", configDir}, nil); res.status != 0 {
			t.Fatalf("install %s: %q", scope, res.stderr)
		}
	}
	res := a.runWith([]string{"uninstall", "--project", "--config-dir", configDir}, nil)
	if res.status != 0 || !strings.Contains(res.stdout, "kept") {
		t.Errorf("uninstall --project: status %d stdout %q", res.status, res.stdout)
	}
	if _, err := os.Stat(install.BinaryPath(configDir)); err != nil {
		t.Errorf("binary removed while the global settings run it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(projectDir, install.ProjectSettings)); !os.IsNotExist(err) {
		t.Errorf("project settings still there (err %v)", err)
	}
	if res := a.runWith([]string{"uninstall", "--global", "--config-dir", configDir}, nil); res.status != 0 {
		t.Errorf("uninstall --global: %q", res.stderr)
	}
	if _, err := os.Stat(install.BinaryPath(configDir)); !os.IsNotExist(err) {
		t.Errorf("binary still there after the last uninstall (err %v)", err)
	}
}

func TestUninstallRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{{"--global", "--project"}, {"--events", "Stop"}, {"extra"}} {
		res := installApp(t, nil).runWith(append([]string{"uninstall", "--config-dir", t.TempDir()}, args...), nil)
		if res.status != 2 || !strings.Contains(res.stderr, "Usage:") {
			t.Errorf("%v: status %d stderr %q, want 2 and the usage", args, res.status, res.stderr)
		}
	}
}
