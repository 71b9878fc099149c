package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oldInstall is what an earlier version left: ~/.client/hooks/notify-chat
// and its hooks in ~/.client/settings.json beside the user's own.
type oldInstall struct {
	dir, settings, binary string
}

const userHookOld = `{
  "model": "opus",
  "hooks": {
    "Stop": [
      {"matcher": "*", "hooks": [{"type": "command", "command": "/usr/bin/say done"}]}
    ]
  }
}
`

func newOldInstall(t *testing.T, events []string) oldInstall {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".client")
	old := oldInstall{dir: dir, settings: GlobalSettings(dir), binary: BinaryPath(dir)}
	writeFile(t, old.binary, "old binary")
	writeFile(t, old.settings, userHookOld)
	merged, _, err := Register([]byte(userHookOld), Command(old.binary), events)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, old.settings, string(merged))
	return old
}

func (o oldInstall) legacy() Legacy { return Legacy{Settings: o.settings, Binary: o.binary} }

func TestRunMovesAnOldRegistrationAndSaysSo(t *testing.T) {
	f := newFixture(t)
	old := newOldInstall(t, []string{"Stop", "SubagentStop"})
	opts := f.options()
	opts.Legacy = []Legacy{old.legacy()}
	out, err := runInstall(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The new file runs the new binary for the asked events and the old ones.
	events, commands, err := RegisteredEvents([]byte(readFile(t, f.settings)), IsNotifyChat)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(events, ","); got != "Stop,Notification,SubagentStop" {
		t.Errorf("new settings register %s, want Stop,Notification,SubagentStop", got)
	}
	if len(commands) != 1 || commands[0] != f.binary() {
		t.Errorf("new settings run %v, want only %s", commands, f.binary())
	}
	// The old file lost exactly notify-chat's hooks, byte for byte otherwise.
	// (the earlier install had reindented the file, as install does)
	if got, want := readFile(t, old.settings), reindented(t, userHookOld); got != want {
		t.Errorf("old settings now\n%s\nwant them as the user had them\n%s", got, want)
	}
	assertMissing(t, old.binary)
	for _, want := range []string{
		"moved notify-chat's hooks for Stop and SubagentStop from " + old.settings + ", a file Claude Code does not read, to " + f.settings,
		"removed notify-chat's 2 hook(s) from " + old.settings + "; everything else in it is as it was",
		"removed " + old.binary,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunMovesAnOldFileThatHeldOnlyNotifyChat(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), ".client")
	old := oldInstall{dir: dir, settings: GlobalSettings(dir), binary: BinaryPath(dir)}
	merged, _, _ := Register(nil, Command(old.binary), DefaultEvents)
	writeFile(t, old.settings, string(merged))
	opts := f.options()
	opts.Legacy = []Legacy{old.legacy()} // the old binary is already gone
	out, err := runInstall(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	assertMissing(t, old.settings)
	if !strings.Contains(out, "removed "+old.settings+": only notify-chat's 2 hook(s) were in it") {
		t.Errorf("output:\n%s", out)
	}
}

func TestRunDryRunMovesNothing(t *testing.T) {
	f := newFixture(t)
	old := newOldInstall(t, DefaultEvents)
	before := readFile(t, old.settings)
	opts := f.options()
	opts.Legacy, opts.DryRun = []Legacy{old.legacy()}, true
	out, err := runInstall(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, old.settings) != before {
		t.Error("dry run changed the old settings")
	}
	assertMissing(t, f.settings)
	if !strings.Contains(out, "would move notify-chat's hooks for Stop and Notification from "+old.settings) {
		t.Errorf("output:\n%s", out)
	}
}

func TestRunWithoutOldRegistrationSaysNothingOfIt(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), ".client")
	writeFile(t, GlobalSettings(dir), userHookOld) // the user's own, no notify-chat
	opts := f.options()
	opts.Legacy = []Legacy{{Settings: GlobalSettings(dir), Binary: BinaryPath(dir)}}
	out, err := runInstall(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "moved") || readFile(t, GlobalSettings(dir)) != userHookOld {
		t.Errorf("output %q, old file %q", out, readFile(t, GlobalSettings(dir)))
	}
}

func TestUninstallRemovesFromTheOldFileToo(t *testing.T) {
	f := newFixture(t)
	if _, err := runInstall(t, f.options()); err != nil {
		t.Fatal(err)
	}
	old := newOldInstall(t, DefaultEvents)
	opts := f.uninstallOptions()
	opts.Legacy = []Legacy{old.legacy()}
	out := runUninstall(t, opts)
	assertMissing(t, f.settings)
	assertMissing(t, f.binary())
	assertMissing(t, old.binary)
	if got, want := readFile(t, old.settings), reindented(t, userHookOld); got != want {
		t.Errorf("old settings now\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(out, "removed notify-chat's 2 hook(s) from "+old.settings) {
		t.Errorf("output:\n%s", out)
	}
}

func TestUninstallKeepsTheOldBinaryWhileAnotherOldFileRunsIt(t *testing.T) {
	f := newFixture(t)
	old := newOldInstall(t, DefaultEvents)
	project := filepath.Join(t.TempDir(), LegacyProjectSettings)
	merged, _, _ := Register(nil, Command(old.binary), DefaultEvents)
	writeFile(t, project, string(merged))
	opts := f.uninstallOptions()
	opts.Legacy = []Legacy{{Settings: old.settings, Binary: old.binary, Users: []string{project}}}
	out := runUninstall(t, opts)
	if _, err := os.Stat(old.binary); err != nil {
		t.Errorf("old binary removed while %s runs it: %v", project, err)
	}
	if !strings.Contains(out, "kept "+old.binary+": "+project+" still runs it") {
		t.Errorf("output:\n%s", out)
	}
}

func TestIsNotifyChat(t *testing.T) {
	for command, want := range map[string]bool{
		"/home/u/.client/hooks/notify-chat":       true,
		"'/home/u/my dir/hooks/notify-chat'":      true,
		"/usr/local/bin/notify-chat":              true,
		"/usr/bin/say done":                       false,
		"/home/u/.client/hooks/notify-chat-other": false,
	} {
		if got := IsNotifyChat(command); got != want {
			t.Errorf("IsNotifyChat(%q) = %v, want %v", command, got, want)
		}
	}
}
