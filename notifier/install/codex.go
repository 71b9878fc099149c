package install

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// CodexConfig is Codex's config file under its home folder
// ($CODEX_HOME, else ~/.codex).
func CodexConfig(codexHome string) string {
	return filepath.Join(codexHome, "config.toml")
}

// CodexOptions say what to install for Codex where.
type CodexOptions struct {
	Source string // the binary to install, normally the running one
	Home   string // Codex's home folder: the binary goes to Home/hooks/notify-chat
	Force  bool   // replace a notify that runs another program
	DryRun bool   // print what would be written, write nothing
}

// codexFiles are the binary's path under home and the config.toml there.
func codexFiles(home string) (string, settingsFile, error) {
	binary, err := filepath.Abs(BinaryPath(home))
	if err != nil {
		return "", settingsFile{}, err
	}
	config, err := readSettings(CodexConfig(home))
	return binary, config, err
}

// RunCodex copies the binary to Home/hooks/notify-chat and sets
// notify = ["Home/hooks/notify-chat"] in Home/config.toml, every other
// byte of the file kept; a notify that runs another program is refused
// without Force.
func RunCodex(opts CodexOptions, out io.Writer) error {
	binary, config, err := codexFiles(opts.Home)
	if err != nil {
		return err
	}
	merged, changed, err := SetNotify(config.data, []string{binary}, opts.Force)
	if errors.Is(err, ErrOtherNotify) {
		current := strings.TrimPrefix(err.Error(), ErrOtherNotify.Error()+": ")
		return fmt.Errorf("%s runs another notify program (%s); it was left untouched. Run install --client codex --force to replace it with notify-chat, or call notify-chat from your own program with the same JSON argument", config.path, current)
	}
	if err != nil {
		return fmt.Errorf("%s: %v; it was left untouched", config.path, err)
	}
	if opts.DryRun {
		fmt.Fprintf(out, "would copy %s to %s (mode %#o)\n", opts.Source, binary, binaryMode)
		if !changed {
			fmt.Fprintf(out, "%s already runs it as notify; nothing to write\n", config.path)
			return nil
		}
		fmt.Fprintf(out, "would write %s%s:\n%s", config.path, config.backupNote(), merged)
		return nil
	}
	if err := installBinary(out, opts.Source, binary); err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(out, "%s already runs it as notify; left unchanged\n", config.path)
		return nil
	}
	if err := config.replace(merged); err != nil {
		return err
	}
	fmt.Fprintf(out, "set notify = [%q] in %s%s; the rest of the file is as it was\n", binary, config.path, config.backupNote())
	return nil
}

// UninstallCodex takes notify-chat's notify out of Home/config.toml,
// every other byte kept, and removes Home/hooks/notify-chat. A notify
// that runs another program stays.
func UninstallCodex(opts CodexOptions, out io.Writer) error {
	binary, config, err := codexFiles(opts.Home)
	if err != nil {
		return err
	}
	if config.exists {
		kept, found, other, err := RemoveNotify(config.data, binary)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %v; it was left untouched. Remove the notify line by hand", config.path, err)
		case other != "":
			fmt.Fprintf(out, "%s runs another notify program (%s); left unchanged\n", config.path, other)
		case !found:
			fmt.Fprintf(out, "%s does not run %s; left unchanged\n", config.path, binary)
		case opts.DryRun:
			fmt.Fprintf(out, "would write %s without notify:\n%s", config.path, kept)
		default:
			if err := writeAtomic(config.path, bytes.NewReader(kept), config.mode); err != nil {
				return err
			}
			fmt.Fprintf(out, "removed notify from %s; everything else in it is as it was\n", config.path)
		}
	} else {
		fmt.Fprintf(out, "%s does not exist; nothing to unregister\n", config.path)
	}
	return removeBinary(binary, opts.DryRun, out)
}
