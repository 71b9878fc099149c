package install

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IsNotifyChat says whether a hook command runs a notify-chat binary,
// wherever it was installed: its path, unquoted, ends in /notify-chat.
func IsNotifyChat(command string) bool {
	return filepath.Base(unquote(command)) == "notify-chat"
}

// unquote undoes Command's shell quoting.
func unquote(command string) string {
	if len(command) >= 2 && command[0] == '\'' && command[len(command)-1] == '\'' {
		return strings.ReplaceAll(command[1:len(command)-1], `'\''`, "'")
	}
	return command
}

// RegisteredEvents lists, in the file's order, the events of settings (the
// content of a client settings file) that have a command hook match
// accepts, and the commands found.
func RegisteredEvents(settings []byte, match func(string) bool) (events, commands []string, err error) {
	top, err := parseObject(settings)
	if err != nil {
		return nil, nil, err
	}
	hooks, err := parseObject(top.get("hooks"))
	if err != nil {
		return nil, nil, err
	}
	for _, event := range hooks.keys {
		var entries []matcherEntry
		if json.Unmarshal(hooks.get(event), &entries) != nil {
			continue // not the shape install writes; nothing of ours is in there
		}
		found := false
		for _, entry := range entries {
			for _, h := range entry.Hooks {
				if h.Type != "" && h.Type != "command" || !match(h.Command) {
					continue
				}
				found = true
				if !slices.Contains(commands, h.Command) {
					commands = append(commands, h.Command)
				}
			}
		}
		if found {
			events = append(events, event)
		}
	}
	return events, commands, nil
}

// Registration is what one settings file holds of notify-chat.
type Registration struct {
	Path     string   // the settings file, absolute
	Exists   bool     // the file is there
	Events   []string // the events that run notify-chat; none: not registered here
	Commands []string // the notify-chat commands they run
	Err      error    // the file could not be read as settings
}

// Find reads the settings file at path for notify-chat's hooks, under
// whatever path it was installed.
func Find(path string) Registration {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Registration{Path: path, Err: err}
	}
	reg := Registration{Path: abs}
	data, err := os.ReadFile(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return reg
	}
	reg.Exists = true
	if err == nil {
		reg.Events, reg.Commands, err = RegisteredEvents(data, IsNotifyChat)
	}
	reg.Err = err
	return reg
}

// union is a followed by the members of b it lacks.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
