package main

// Where notify-chat is registered, for "notify-chat test".

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dragoman-dev/dragoman/notifier/install"
)

// candidate is a file that may register notify-chat, and whether its
// client reads it.
type candidate struct {
	path   string
	client string // "Claude Code" or "Codex"
	read   bool
	codex  bool // a Codex config.toml, not a settings.json
}

// candidates are the files notify-chat may be registered in here.
func (a app) candidates() []candidate {
	var list []candidate
	claudeDir := a.getenv(envClaudeDir)
	if home, err := a.homeDir(); err == nil {
		if claudeDir == "" {
			claudeDir = filepath.Join(home, ".claude")
		}
		list = append(list, candidate{path: install.GlobalSettings(filepath.Join(home, legacyDir)), client: "Claude Code"})
	}
	if claudeDir != "" {
		list = append([]candidate{{path: install.GlobalSettings(claudeDir), client: "Claude Code", read: true}}, list...)
	}
	if dir := a.getenv(envConfigDir); dir != "" && !sameDir(dir, claudeDir) {
		list = append(list, candidate{path: install.GlobalSettings(dir), client: "Claude Code"})
	}
	list = append(list,
		candidate{path: install.ProjectSettings, client: "Claude Code", read: true},
		candidate{path: install.LegacyProjectSettings, client: "Claude Code"})
	if codexHome, err := a.resolveCodexHome(""); err == nil {
		list = append(list, candidate{path: install.CodexConfig(codexHome), client: "Codex", read: true, codex: true})
	}
	return list
}

// reportRegistrations says on out where notify-chat is registered and
// whether the client reads that file; it returns how many registrations
// a client reads.
func (a app) reportRegistrations(out io.Writer) int {
	read := 0
	for _, c := range a.candidates() {
		abs, _ := filepath.Abs(c.path)
		what, commands, err := registrationIn(c)
		switch {
		case err != nil:
			fmt.Fprintf(out, "%s: cannot tell (%v)\n", abs, err)
			continue
		case what == "":
			continue
		case c.read:
			read++
			fmt.Fprintf(out, "registered in %s %s: %s reads this file\n", abs, what, c.client)
		default:
			fmt.Fprintf(out, "registered in %s %s, but %s does not read this file: run notify-chat install to move it\n", abs, what, c.client)
		}
		for _, command := range commands {
			if _, err := os.Stat(strings.Trim(command, "'")); err != nil {
				fmt.Fprintf(out, "  its command %s is not there (%v): run notify-chat install again\n", command, err)
			}
		}
	}
	if read == 0 {
		fmt.Fprintln(out, "not registered in any file Claude Code or Codex reads: run notify-chat install (Claude Code) or notify-chat install --client codex")
	}
	return read
}

// registrationIn is what c holds of notify-chat ("" for nothing) and the
// commands it runs.
func registrationIn(c candidate) (string, []string, error) {
	if c.codex {
		data, err := os.ReadFile(c.path)
		if os.IsNotExist(err) {
			return "", nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		program, _, err := install.CodexNotify(data)
		if err != nil || !install.IsNotifyChat(program) {
			return "", nil, err
		}
		return "as notify", []string{program}, nil
	}
	reg := install.Find(c.path)
	if reg.Err != nil || len(reg.Events) == 0 {
		return "", nil, reg.Err
	}
	return "for " + strings.Join(reg.Events, ", "), reg.Commands, nil
}
