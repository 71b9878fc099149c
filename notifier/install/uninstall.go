package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// UninstallOptions say what to uninstall from where.
type UninstallOptions struct {
	ConfigDir string // the binary is ConfigDir/hooks/notify-chat
	Settings  string // the settings file to unregister it from
	// Others are settings files that may register the binary too: while
	// one of them does, the binary stays.
	Others []string
	// Legacy are registrations of an earlier install in files the client
	// does not read: they go too.
	Legacy []Legacy
	DryRun bool // print what would change, change nothing
}

// Uninstall undoes Run: it removes the hooks that run the installed binary
// from opts.Settings, every other byte of the file kept (the file itself
// goes when nothing else is left in it), and then the binary, unless
// another settings file still runs it.
func Uninstall(opts UninstallOptions, out io.Writer) error {
	binary, err := filepath.Abs(BinaryPath(opts.ConfigDir))
	if err != nil {
		return err
	}
	command := Command(binary)
	if err := unregisterFrom(opts.Settings, command, func(c string) bool { return c == command }, opts.DryRun, out); err != nil {
		return err
	}
	for _, old := range opts.Legacy {
		if err := unregisterLegacy(old, opts.DryRun, out); err != nil {
			return err
		}
	}
	if user := registeredIn(opts.Others, command); user != "" {
		fmt.Fprintf(out, "kept %s: %s still runs it\n", binary, user)
		return nil
	}
	return removeBinary(binary, opts.DryRun, out)
}

// unregisterLegacy removes every notify-chat hook from an old settings
// file, and the old binary when no old file runs it any more.
func unregisterLegacy(old Legacy, dryRun bool, out io.Writer) error {
	if reg := Find(old.Settings); len(reg.Events) == 0 && reg.Err == nil {
		return nil // nothing of ours there: say nothing of a file the user may never have had
	}
	if err := unregisterFrom(old.Settings, "notify-chat", IsNotifyChat, dryRun, out); err != nil {
		return err
	}
	return removeLegacyBinary(old, dryRun, out)
}

// removeLegacyBinary removes the binary an old install put beside an old
// settings file, unless that file still runs it (a dry run left it).
func removeLegacyBinary(old Legacy, dryRun bool, out io.Writer) error {
	if old.Binary == "" {
		return nil
	}
	if _, err := os.Lstat(old.Binary); err != nil {
		return nil
	}
	users := append([]string{old.Settings}, old.Users...)
	if user := registeredIn(users, Command(old.Binary)); user != "" && !(dryRun && user == old.Settings) {
		fmt.Fprintf(out, "kept %s: %s still runs it\n", old.Binary, user)
		return nil
	}
	return removeBinary(old.Binary, dryRun, out)
}

// unregisterFrom removes the hooks whose command match accepts from the
// settings file at path; label names them in what it prints.
func unregisterFrom(path, label string, match func(string) bool, dryRun bool, out io.Writer) error {
	settings, err := readSettings(path)
	if err != nil {
		return err
	}
	if !settings.exists {
		fmt.Fprintf(out, "%s does not exist; nothing to unregister\n", settings.path)
		return nil
	}
	kept, removed, empty, err := unregisterMatching(settings.data, match)
	if err != nil {
		return fmt.Errorf("%s is not valid client settings (%v); it was left untouched. Remove the notify-chat entries by hand", settings.path, err)
	}
	switch {
	case removed == 0:
		fmt.Fprintf(out, "%s does not run %s; left unchanged\n", settings.path, label)
		return nil
	case dryRun && empty:
		fmt.Fprintf(out, "would remove %s: only notify-chat's %d hook(s) are in it\n", settings.path, removed)
		return nil
	case dryRun:
		fmt.Fprintf(out, "would write %s without notify-chat's %d hook(s):\n%s", settings.path, removed, kept)
		return nil
	case empty:
		if err := os.Remove(settings.path); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed %s: only notify-chat's %d hook(s) were in it\n", settings.path, removed)
		return nil
	}
	if err := writeAtomic(settings.path, bytes.NewReader(kept), settings.mode); err != nil {
		return err
	}
	fmt.Fprintf(out, "removed notify-chat's %d hook(s) from %s; everything else in it is as it was\n", removed, settings.path)
	return nil
}

// registeredIn is the first of files that runs command, or "".
func registeredIn(files []string, command string) string {
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if _, removed, _, err := Unregister(data, command); err == nil && removed > 0 {
			return file
		}
	}
	return ""
}

// removeBinary removes the installed binary, and the hooks folder when that
// leaves it empty.
func removeBinary(binary string, dryRun bool, out io.Writer) error {
	if _, err := os.Lstat(binary); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "%s is not there; nothing to remove\n", binary)
		return nil
	}
	if dryRun {
		fmt.Fprintf(out, "would remove %s\n", binary)
		return nil
	}
	if err := os.Remove(binary); err != nil {
		return fmt.Errorf("removing the binary: %w", err)
	}
	fmt.Fprintf(out, "removed %s\n", binary)
	_ = os.Remove(filepath.Dir(binary)) // only succeeds when the folder is empty
	return nil
}
