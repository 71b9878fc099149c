package install

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codexConfig is a config.toml as people write them: comments, a
// multi-line string holding what looks like a table and a notify line,
// an array over several lines, tables after.
const codexConfig = `# my Codex settings
model = "qwen3-coder"   # the alias
model_provider = 'dragoman'
developer_instructions = """
Keep answers short.
[not_a_table]
notify = ["not", "this"]
"""
sandbox_permissions = [
  "disk-full-read-access", # a comment inside
  "network-full-access",
]
[model_providers.dragoman]
name = "Dragoman"
base_url = "http://127.0.0.1:4000/v1"

[analytics]
enabled = false
`

func TestSetNotifyAddsOneLineAndKeepsEveryOtherByte(t *testing.T) {
	out, changed, err := SetNotify([]byte(codexConfig), []string{"/h/.codex/hooks/notify-chat"}, false)
	if err != nil || !changed {
		t.Fatalf("changed %v err %v", changed, err)
	}
	const line = "notify = [\"/h/.codex/hooks/notify-chat\"]\n"
	at := strings.Index(codexConfig, "[model_providers.dragoman]")
	if want := codexConfig[:at] + line + codexConfig[at:]; string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	again, changed, err := SetNotify(out, []string{"/h/.codex/hooks/notify-chat"}, false)
	if err != nil || changed || !bytes.Equal(again, out) {
		t.Errorf("second run: changed %v err %v", changed, err)
	}
	back, found, other, err := RemoveNotify(out, "/h/.codex/hooks/notify-chat")
	if err != nil || !found || other != "" || string(back) != codexConfig {
		t.Errorf("remove: found %v other %q err %v, file\n%s", found, other, err, back)
	}
}

func TestSetNotifyPlaces(t *testing.T) {
	argv := []string{`/a "b"/notify-chat`}
	line := `notify = ["/a \"b\"/notify-chat"]` + "\n"
	for name, tt := range map[string]struct{ in, want string }{
		"empty file":         {"", line},
		"only a table":       {"[tui]\nx = 1\n", line + "[tui]\nx = 1\n"},
		"no final newline":   {`model = "m"`, "model = \"m\"\n" + line},
		"no tables":          {"model = \"m\"\n\n# end\n", "model = \"m\"\n" + line + "\n# end\n"},
		"comment then table": {"# top\n[tui]\n", line + "# top\n[tui]\n"},
	} {
		out, _, err := SetNotify([]byte(tt.in), argv, false)
		if err != nil || string(out) != tt.want {
			t.Errorf("%s: err %v, got %q want %q", name, err, out, tt.want)
		}
		if list, ok := stringList(valueOf(line)); !ok || list[0] != argv[0] {
			t.Errorf("the line does not read back: %v %v", list, ok)
		}
	}
}

func TestSetNotifyRefusesAnotherProgramWithoutForce(t *testing.T) {
	in := "model = \"m\"\nnotify = [\"python3\", \"/home/u/notify.py\"] # mine\n[tui]\n"
	_, _, err := SetNotify([]byte(in), []string{"/x/notify-chat"}, false)
	if !errors.Is(err, ErrOtherNotify) || !strings.Contains(err.Error(), `notify = ["python3", "/home/u/notify.py"]`) {
		t.Errorf("err %v, want ErrOtherNotify naming the line", err)
	}
	out, changed, err := SetNotify([]byte(in), []string{"/x/notify-chat"}, true)
	if want := "model = \"m\"\nnotify = [\"/x/notify-chat\"]\n[tui]\n"; err != nil || !changed || string(out) != want {
		t.Errorf("--force: err %v got %q want %q", err, out, want)
	}
	kept, found, other, err := RemoveNotify([]byte(in), "/x/notify-chat")
	if err != nil || found || string(kept) != in || !strings.HasPrefix(other, "notify = [") {
		t.Errorf("remove of another program: found %v other %q err %v", found, other, err)
	}
}

func TestSetNotifyMultiLineAndLiteralNotify(t *testing.T) {
	in := "notify = [\n  '/x/notify-chat',\n]\nmodel = \"m\"\n"
	if _, changed, err := SetNotify([]byte(in), []string{"/x/notify-chat"}, false); err != nil || changed {
		t.Errorf("the same program in other quotes: changed %v err %v", changed, err)
	}
	out, found, _, err := RemoveNotify([]byte(in), "/x/notify-chat")
	if err != nil || !found || string(out) != "model = \"m\"\n" {
		t.Errorf("found %v err %v out %q", found, err, out)
	}
}

func TestSetNotifyRefusesWhatItCannotRead(t *testing.T) {
	for _, in := range []string{"model = \"unclosed\n", "x = [1, 2\n", "just words\n", "s = \"\"\"never closed\n"} {
		if _, _, err := SetNotify([]byte(in), []string{"/x/notify-chat"}, false); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestRunCodexAndUninstallCodex(t *testing.T) {
	root := t.TempDir()
	source := filepath.Join(root, "build", "notify-chat")
	writeFile(t, source, "binary")
	home := filepath.Join(root, ".codex")
	writeFile(t, CodexConfig(home), codexConfig)
	if err := os.Chmod(CodexConfig(home), 0o640); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RunCodex(CodexOptions{Source: source, Home: home}, &out); err != nil {
		t.Fatal(err)
	}
	binary := BinaryPath(home)
	if readFile(t, binary) != "binary" {
		t.Error("binary not copied")
	}
	got := readFile(t, CodexConfig(home))
	if strings.Replace(got, "notify = [\""+binary+"\"]\n", "", 1) != codexConfig {
		t.Errorf("config.toml now\n%s", got)
	}
	if readFile(t, CodexConfig(home)+".bak") != codexConfig {
		t.Error("no backup of the previous config.toml")
	}
	if info, _ := os.Stat(CodexConfig(home)); info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", info.Mode().Perm())
	}
	if !strings.Contains(out.String(), "set notify = [\""+binary+"\"] in "+CodexConfig(home)) {
		t.Errorf("output %q", out.String())
	}
	out.Reset()
	if err := UninstallCodex(CodexOptions{Home: home}, &out); err != nil {
		t.Fatal(err)
	}
	if readFile(t, CodexConfig(home)) != codexConfig {
		t.Errorf("after uninstall:\n%s", readFile(t, CodexConfig(home)))
	}
	assertMissing(t, binary)
}

func TestRunCodexRefusesAnotherNotify(t *testing.T) {
	root := t.TempDir()
	source := filepath.Join(root, "notify-chat")
	writeFile(t, source, "binary")
	home := filepath.Join(root, ".codex")
	in := "notify = [\"/usr/bin/notify-send\", \"codex\"]\n"
	writeFile(t, CodexConfig(home), in)
	var out bytes.Buffer
	err := RunCodex(CodexOptions{Source: source, Home: home}, &out)
	if err == nil || !strings.Contains(err.Error(), "--force") || readFile(t, CodexConfig(home)) != in {
		t.Errorf("err %v, file %q", err, readFile(t, CodexConfig(home)))
	}
	assertMissing(t, BinaryPath(home))
	if err := RunCodex(CodexOptions{Source: source, Home: home, Force: true}, &out); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, CodexConfig(home)); got != "notify = [\""+BinaryPath(home)+"\"]\n" {
		t.Errorf("--force wrote %q", got)
	}
}

func TestRunCodexIntoNoConfig(t *testing.T) {
	root := t.TempDir()
	source := filepath.Join(root, "notify-chat")
	writeFile(t, source, "binary")
	home := filepath.Join(root, ".codex")
	var out bytes.Buffer
	if err := RunCodex(CodexOptions{Source: source, Home: home, DryRun: true}, &out); err != nil {
		t.Fatal(err)
	}
	assertMissing(t, home)
	if err := RunCodex(CodexOptions{Source: source, Home: home}, &out); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, CodexConfig(home)); got != "notify = [\""+BinaryPath(home)+"\"]\n" {
		t.Errorf("new config.toml %q", got)
	}
}
