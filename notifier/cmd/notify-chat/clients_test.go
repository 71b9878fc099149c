package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/notifier/install"
)

// codexTurn is the argument Codex 0.169 gives its notify program at the
// end of a turn.
const codexTurn = `{"type":"agent-turn-complete","thread-id":"019a-thread","turn-id":"7",` +
	`"cwd":"/home/dev/myproj","client":"codex-exec","input-messages":["say hi"],` +
	`"last-assistant-message":"Hi! All <3> tests pass."}`

func TestCodexNotifyPostsTaskComplete(t *testing.T) {
	hook := newChatWebhook(t, nil)
	a := testApp(map[string]string{envWebhookURL: hook.secretURL(), envExcerpt: "40"}, time.Second)
	// Codex gives no stdin: the argument is all; a reader that fails shows
	// it is not read.
	res := a.runWith([]string{codexTurn}, failingReader{t})
	want := "{\"text\":\"✅ Task complete in `myproj` (session `019a-thread`)\\n> Hi! All &lt;3&gt; tests pass.\"}"
	if got := hook.onlyBody(t); got != want {
		t.Errorf("body = %s\nwant   %s", got, want)
	}
	if res.status != 0 || res.stderr != "" {
		t.Errorf("status %d stderr %q", res.status, res.stderr)
	}
}

type failingReader struct{ t *testing.T }

func (r failingReader) Read([]byte) (int, error) {
	r.t.Error("stdin was read for Codex's notify")
	return 0, os.ErrClosed
}

func TestCodexNotifyBadArguments(t *testing.T) {
	for arg, stderr := range map[string]string{
		`{"type":"approval-requested"}`: `"approval-requested" has no message`,
		`{"thread-id":"x"}`:             `not Codex's notify JSON`,
		`{oops`:                         `not Codex's notify JSON`,
	} {
		hook := newChatWebhook(t, nil)
		res := testApp(map[string]string{envWebhookURL: hook.secretURL()}, time.Second).runWith([]string{arg}, failingReader{t})
		if res.status != 0 || !strings.Contains(res.stderr, stderr) || len(hook.received()) != 0 {
			t.Errorf("%s: status %d stderr %q sent %v", arg, res.status, res.stderr, hook.received())
		}
	}
}

// homeApp is an app whose home and working folder are temporary.
func homeApp(t *testing.T, env map[string]string) (app, string) {
	t.Helper()
	home := t.TempDir()
	a := installApp(t, env)
	a.homeDir = func() (string, error) { return home, nil }
	t.Chdir(t.TempDir())
	return a, home
}

func TestInstallMovesTheOldClientRegistration(t *testing.T) {
	a, home := homeApp(t, nil)
	oldDir := filepath.Join(home, ".client")
	// What the earlier version's install wrote, by the earlier default.
	if res := a.runWith([]string{"install", "--config-dir", oldDir}, nil); res.status != 0 {
		t.Fatal(res.stderr)
	}
	res := a.runWith([]string{"install"}, nil)
	if res.status != 0 {
		t.Fatal(res.stderr)
	}
	newDir := filepath.Join(home, ".claude")
	if !strings.Contains(res.stdout, "moved notify-chat's hooks for Stop and Notification from "+install.GlobalSettings(oldDir)+", a file Claude Code does not read, to "+install.GlobalSettings(newDir)) {
		t.Errorf("stdout does not say it moved:\n%s", res.stdout)
	}
	if reg := install.Find(install.GlobalSettings(newDir)); strings.Join(reg.Commands, ",") != install.BinaryPath(newDir) {
		t.Errorf("new settings run %v", reg.Commands)
	}
	for _, gone := range []string{install.GlobalSettings(oldDir), install.BinaryPath(oldDir)} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s still there (err %v)", gone, err)
		}
	}
	test := a.runWith([]string{"test"}, nil)
	if !strings.Contains(test.stdout, "registered in "+install.GlobalSettings(newDir)+" for Stop, Notification: Claude Code reads this file") {
		t.Errorf("test says:\n%s", test.stdout)
	}
}

func TestInstallProjectMovesTheOldProjectRegistration(t *testing.T) {
	a, home := homeApp(t, nil)
	oldDir := filepath.Join(home, ".client")
	old, _, _ := install.Register(nil, install.Command(install.BinaryPath(oldDir)), []string{"Stop"})
	if err := os.MkdirAll(".client", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(install.LegacyProjectSettings, old, 0o644); err != nil {
		t.Fatal(err)
	}
	before := a.runWith([]string{"test"}, nil)
	if !strings.Contains(before.stdout, "settings.local.json for Stop, but Claude Code does not read this file: run notify-chat install to move it") {
		t.Errorf("test before the move says:\n%s", before.stdout)
	}
	res := a.runWith([]string{"install", "--project"}, nil)
	if res.status != 0 || !strings.Contains(res.stdout, "moved notify-chat's hooks for Stop from ") {
		t.Fatalf("status %d stdout %s stderr %s", res.status, res.stdout, res.stderr)
	}
	if _, err := os.Stat(install.LegacyProjectSettings); !os.IsNotExist(err) {
		t.Errorf("old project file still there (err %v)", err)
	}
	if reg := install.Find(install.ProjectSettings); strings.Join(reg.Events, ",") != "Stop,Notification" {
		t.Errorf(".claude/settings.local.json registers %v", reg.Events)
	}
	if res := a.runWith([]string{"uninstall", "--project"}, nil); res.status != 0 {
		t.Fatal(res.stderr)
	}
	if _, err := os.Stat(install.ProjectSettings); !os.IsNotExist(err) {
		t.Errorf("project settings still there (err %v)", err)
	}
}

func TestUninstallTakesTheOldRegistrationToo(t *testing.T) {
	a, home := homeApp(t, map[string]string{envClaudeDir: ""})
	oldDir := filepath.Join(home, ".client")
	if res := a.runWith([]string{"install", "--config-dir", oldDir}, nil); res.status != 0 {
		t.Fatal(res.stderr)
	}
	res := a.runWith([]string{"uninstall"}, nil)
	if res.status != 0 {
		t.Fatal(res.stderr)
	}
	for _, gone := range []string{install.GlobalSettings(oldDir), install.BinaryPath(oldDir)} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s still there after uninstall (err %v); stdout %s", gone, err, res.stdout)
		}
	}
}

func TestInstallClientCodex(t *testing.T) {
	codexHome := filepath.Join(t.TempDir(), "codex-home")
	a, _ := homeApp(t, map[string]string{envCodexHome: codexHome})
	config := install.CodexConfig(codexHome)
	const mine = "model = \"qwen\"\n\n[analytics]\nenabled = false\n"
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	res := a.runWith([]string{"install", "--client", "codex"}, nil)
	if res.status != 0 {
		t.Fatal(res.stderr)
	}
	binary := install.BinaryPath(codexHome)
	got, _ := os.ReadFile(config)
	if want := "model = \"qwen\"\nnotify = [\"" + binary + "\"]\n\n[analytics]\nenabled = false\n"; string(got) != want {
		t.Errorf("config.toml\n%s\nwant\n%s", got, want)
	}
	test := a.runWith([]string{"test"}, nil)
	if !strings.Contains(test.stdout, "registered in "+config+" as notify: Codex reads this file") {
		t.Errorf("test says:\n%s", test.stdout)
	}
	if res := a.runWith([]string{"uninstall", "--client", "codex"}, nil); res.status != 0 {
		t.Fatal(res.stderr)
	}
	if got, _ := os.ReadFile(config); string(got) != mine {
		t.Errorf("after uninstall:\n%s", got)
	}
}

func TestInstallClientFlags(t *testing.T) {
	for _, args := range [][]string{{"--client", "cursor"}, {"--client", "codex", "--project"}, {"--client", "codex", "--events", "Stop"}, {"--force"}} {
		res := installApp(t, nil).runWith(append([]string{"install", "--config-dir", t.TempDir()}, args...), nil)
		if res.status != 2 || !strings.Contains(res.stderr, "Usage:") {
			t.Errorf("%v: status %d stderr %q", args, res.status, res.stderr)
		}
	}
}

func TestInstallElsewhereSaysClaudeCodeDoesNotReadIt(t *testing.T) {
	a, home := homeApp(t, nil)
	elsewhere := filepath.Join(home, "elsewhere")
	res := a.runWith([]string{"install", "--config-dir", elsewhere}, nil)
	if want := "note: Claude Code reads " + filepath.Join(home, ".claude", "settings.json") + ", not " + install.GlobalSettings(elsewhere); res.status != 0 || !strings.Contains(res.stdout, want) {
		t.Errorf("status %d stdout %q, want %q", res.status, res.stdout, want)
	}
	if res := a.runWith([]string{"install"}, nil); strings.Contains(res.stdout, "note: Claude Code reads") {
		t.Errorf("the default folder got the note: %q", res.stdout)
	}
}
