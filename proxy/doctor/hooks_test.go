package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func settingsRunning(command string, events ...string) string {
	parts := make([]string, len(events))
	for i, e := range events {
		parts[i] = `"` + e + `":[{"matcher":"*","hooks":[{"type":"command","command":"` + command + `"}]}]`
	}
	return `{"model":"opus","hooks":{` + strings.Join(parts, ",") + `}}`
}

func TestHookChecks(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	p := Places(home, project, func(name string) string { return "" })
	claude := func() Result { return hookChecks(p)[0] }
	codex := func() Result { return hookChecks(p)[1] }

	if r := claude(); r.Status != Info || !strings.Contains(r.Detail, "not registered in "+filepath.Join(home, ".claude", "settings.json")) {
		t.Errorf("nothing installed: %+v", r)
	}
	writeTestFile(t, filepath.Join(home, ".client", "settings.json"), settingsRunning(home+"/.client/hooks/notify-chat", "Stop", "Notification"))
	if r := claude(); r.Status != Warn || !strings.Contains(r.Detail, "does not read") || !strings.Contains(r.Fix, "notify-chat install") {
		t.Errorf("only the old ~/.client registration: %+v", r)
	}
	writeTestFile(t, filepath.Join(project, ".claude", "settings.local.json"), settingsRunning("'/my dir/hooks/notify-chat'", "Stop"))
	if r := claude(); r.Status != OK || !strings.Contains(r.Detail, filepath.Join(project, ".claude", "settings.local.json")+" for Stop") {
		t.Errorf("project registration: %+v", r)
	}
	writeTestFile(t, filepath.Join(project, ".claude", "settings.local.json"), settingsRunning("/usr/bin/say", "Stop"))
	if r := claude(); r.Status != Warn {
		t.Errorf("another hook only, the old file still: %+v", r)
	}

	if r := codex(); r.Status != Info || !strings.Contains(r.Detail, "not Codex's notify") {
		t.Errorf("no config.toml: %+v", r)
	}
	config := filepath.Join(home, ".codex", "config.toml")
	writeTestFile(t, config, "model = \"m\"\nnotify = [\"/usr/bin/notify-send\"]\n")
	if r := codex(); r.Status != Info || !strings.Contains(r.Fix, "--force") {
		t.Errorf("another notify: %+v", r)
	}
	writeTestFile(t, config, "model = \"m\"\n[tui]\nnotify = [\""+home+"/.codex/hooks/notify-chat\"]\n")
	if r := codex(); r.Status != Info {
		t.Errorf("notify inside a table is not Codex's notify: %+v", r)
	}
	writeTestFile(t, config, "model = \"m\"\nnotify = [\""+home+"/.codex/hooks/notify-chat\"]\n[tui]\n")
	if r := codex(); r.Status != OK || !strings.Contains(r.Detail, config) {
		t.Errorf("registered: %+v", r)
	}
}

func TestPlacesFollowTheEnvironment(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": "/cc", "CODEX_HOME": "/cx"}
	p := Places("/h", "/w", func(name string) string { return env[name] })
	if p.ClaudeDir != "/cc" || p.CodexHome != "/cx" || p.LegacyDir != "/h/.client" || p.Project != "/w" {
		t.Errorf("%+v", p)
	}
	if p := Places("/h", "/w", nil); p.ClaudeDir != "/h/.claude" || p.CodexHome != "/h/.codex" {
		t.Errorf("%+v", p)
	}
}
