// Package install owns "notify-chat install" and "notify-chat uninstall": it
// copies the binary into the client's config folder and registers it as the
// hook of the events asked for (Stop and Notification by default) in a Claude
// Code settings file, merging into what is there, writing atomically and
// keeping a backup of the previous file; it moves a registration an earlier
// version left where Claude Code does not read it (the spec's literal
// ~/.client and .client/); it sets Codex's notify in config.toml by editing
// that one line (codex.go, codextoml.go); and it removes exactly those hooks
// again, every other byte of the file kept, and the binary. A settings file
// it cannot read as settings is refused and left untouched.
package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ProjectSettings is the per-project settings file Claude Code reads,
// relative to the project folder.
var ProjectSettings = filepath.Join(".claude", "settings.local.json")

// LegacyProjectSettings is where earlier versions registered the hook per
// project, the spec's literal ".client/settings.local.json": Claude Code
// never reads it.
var LegacyProjectSettings = filepath.Join(".client", "settings.local.json")

// Legacy is an earlier registration in a settings file the client does not
// read (the spec's literal ~/.client or .client/), and the binary that
// install put beside it ("" when it is not one of install's).
type Legacy struct {
	Settings string
	Binary   string
	// Users are the other settings files that may run Binary: it stays
	// while one of them does.
	Users []string
}

// newSettingsMode is the mode of a settings file install creates; an existing
// file keeps its own.
const newSettingsMode fs.FileMode = 0o600

const binaryMode fs.FileMode = 0o755

// Options say what to install where.
type Options struct {
	Source    string   // the binary to install, normally the running one
	ConfigDir string   // the binary goes to ConfigDir/hooks/notify-chat
	Settings  string   // the settings file to register it in
	DryRun    bool     // print what would be written, write nothing
	Events    []string // the hook events to register for; nil means DefaultEvents
	// Legacy are earlier registrations to move into Settings: their
	// events join Events, their hooks leave the old files.
	Legacy []Legacy
}

func (o Options) events() []string {
	if len(o.Events) == 0 {
		return DefaultEvents
	}
	return o.Events
}

// BinaryPath is where install puts the binary under configDir.
func BinaryPath(configDir string) string {
	return filepath.Join(configDir, "hooks", "notify-chat")
}

// GlobalSettings is the client's global settings file under configDir.
func GlobalSettings(configDir string) string {
	return filepath.Join(configDir, "settings.json")
}

// Command is the hook command that runs binary: its path, quoted for the
// shell only when the path holds characters the shell would split or expand.
func Command(binary string) string {
	if !strings.ContainsFunc(binary, needsQuoting) {
		return binary
	}
	return "'" + strings.ReplaceAll(binary, "'", `'\''`) + "'"
}

func needsQuoting(r rune) bool {
	plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,=", r)
	return !plain
}

// Run installs as opts say and reports each step on out.
func Run(opts Options, out io.Writer) error {
	binary, err := filepath.Abs(BinaryPath(opts.ConfigDir))
	if err != nil {
		return err
	}
	settings, err := readSettings(opts.Settings)
	if err != nil {
		return err
	}
	moves := legacyRegistrations(opts.Legacy, settings.path)
	for _, m := range moves {
		opts.Events = union(opts.events(), m.Events)
	}
	merged, changed, err := Register(settings.data, Command(binary), opts.events())
	if err != nil {
		return fmt.Errorf("%s is not valid client settings (%v); it was left untouched. Fix or move it, then run install again", settings.path, err)
	}
	if opts.DryRun {
		printPlan(out, opts, binary, settings, merged, changed)
		for _, m := range moves {
			fmt.Fprintf(out, "would move notify-chat's hooks for %s from %s, a file Claude Code does not read, to %s\n", eventList(m.Events), m.Path, settings.path)
		}
		return nil
	}
	if err := installBinary(out, opts.Source, binary); err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(out, "%s already registers it for %s; left unchanged\n", settings.path, eventList(opts.events()))
	} else {
		if err := settings.replace(merged); err != nil {
			return err
		}
		fmt.Fprintf(out, "registered it for %s in %s%s\n", eventList(opts.events()), settings.path, settings.backupNote())
	}
	return moveLegacy(moves, opts.Legacy, settings.path, out)
}

// legacyRegistrations are the old files of legacy that run notify-chat;
// target itself is never one.
func legacyRegistrations(legacy []Legacy, target string) []Registration {
	var found []Registration
	for _, old := range legacy {
		reg := Find(old.Settings)
		if reg.Path != target && len(reg.Events) > 0 {
			found = append(found, reg)
		}
	}
	return found
}

// moveLegacy takes the hooks of moves out of their old files, now that
// target registers them, and the old binaries no old file runs.
func moveLegacy(moves []Registration, legacy []Legacy, target string, out io.Writer) error {
	for _, m := range moves {
		fmt.Fprintf(out, "moved notify-chat's hooks for %s from %s, a file Claude Code does not read, to %s:\n", eventList(m.Events), m.Path, target)
		if err := unregisterFrom(m.Path, "notify-chat", IsNotifyChat, false, out); err != nil {
			return fmt.Errorf("registered in %s, but taking the old registration out of %s failed: %w", target, m.Path, err)
		}
	}
	for _, old := range legacy {
		if len(moves) == 0 {
			break
		}
		if err := removeLegacyBinary(old, false, out); err != nil {
			return err
		}
	}
	return nil
}

func installBinary(out io.Writer, source, binary string) error {
	if sameFile(source, binary) {
		fmt.Fprintf(out, "%s is the running binary; kept as it is\n", binary)
		return nil
	}
	if err := copyExecutable(source, binary); err != nil {
		return fmt.Errorf("installing the binary: %w", err)
	}
	fmt.Fprintf(out, "installed %s\n", binary)
	return nil
}

func printPlan(out io.Writer, opts Options, binary string, settings settingsFile, merged []byte, changed bool) {
	fmt.Fprintf(out, "would copy %s to %s (mode %#o)\n", opts.Source, binary, binaryMode)
	if !changed {
		fmt.Fprintf(out, "%s already registers it for %s; nothing to write\n", settings.path, eventList(opts.events()))
		return
	}
	fmt.Fprintf(out, "would write %s%s:\n%s", settings.path, settings.backupNote(), merged)
}

func eventList(events []string) string {
	if len(events) < 2 {
		return strings.Join(events, "")
	}
	return strings.Join(events[:len(events)-1], ", ") + " and " + events[len(events)-1]
}

// settingsFile is a settings file as install found it.
type settingsFile struct {
	path   string
	data   []byte
	mode   fs.FileMode
	exists bool
}

func readSettings(path string) (settingsFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return settingsFile{}, err
	}
	file := settingsFile{path: abs, mode: newSettingsMode}
	info, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return file, nil
	}
	if err != nil {
		return settingsFile{}, err
	}
	file.data, err = os.ReadFile(abs)
	file.mode, file.exists = info.Mode().Perm(), true
	return file, err
}

func (f settingsFile) backupPath() string {
	return f.path + ".bak"
}

func (f settingsFile) backupNote() string {
	if !f.exists {
		return " (a new file)"
	}
	return " (previous version kept in " + f.backupPath() + ")"
}

// replace backs the current content up, then writes merged in its place.
func (f settingsFile) replace(merged []byte) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return err
	}
	if f.exists {
		if err := writeAtomic(f.backupPath(), bytes.NewReader(f.data), f.mode); err != nil {
			return fmt.Errorf("backing up %s: %w", f.path, err)
		}
	}
	return writeAtomic(f.path, bytes.NewReader(merged), f.mode)
}
