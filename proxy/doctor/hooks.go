package doctor

// Whether notify-chat, the turn-end chat hook, is registered where the
// coding clients read it: Claude Code's settings.json files and Codex's
// config.toml. Reading only; notify-chat install makes the registrations.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Check names of the hook checks.
const (
	CheckHookClaude = "notify_hook_claude"
	CheckHookCodex  = "notify_hook_codex"
)

// HookPlaces are the folders the hook checks read.
type HookPlaces struct {
	ClaudeDir string // $CLAUDE_CONFIG_DIR, else ~/.claude: Claude Code reads settings.json there
	Project   string // the folder whose .claude/settings.local.json Claude Code reads (the working folder)
	LegacyDir string // ~/.client: where earlier notify-chat versions registered it, read by no client
	CodexHome string // $CODEX_HOME, else ~/.codex: Codex reads config.toml there
}

// Places is HookPlaces for a home folder, a working folder and the
// environment (getenv may be nil).
func Places(home, workDir string, getenv func(string) string) HookPlaces {
	env := func(name, def string) string {
		if getenv != nil {
			if v := getenv(name); v != "" {
				return v
			}
		}
		return def
	}
	return HookPlaces{
		ClaudeDir: env("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude")),
		Project:   workDir,
		LegacyDir: filepath.Join(home, ".client"),
		CodexHome: env("CODEX_HOME", filepath.Join(home, ".codex")),
	}
}

const hookInstall = "bin/notify-chat install registers it in Claude Code's settings (install --client codex: Codex's notify); see docs/notifier.md"

// hookChecks says, for each client, whether notify-chat is registered
// where the client reads it.
func hookChecks(p HookPlaces) []Result {
	return []Result{claudeHookCheck(p), codexHookCheck(p)}
}

func claudeHookCheck(p HookPlaces) Result {
	read := []string{filepath.Join(p.ClaudeDir, "settings.json"), filepath.Join(p.Project, ".claude", "settings.local.json")}
	unread := []string{filepath.Join(p.LegacyDir, "settings.json"), filepath.Join(p.Project, ".client", "settings.local.json")}
	var found, stale, unreadable []string
	for _, path := range append(read, unread...) {
		events, err := hookEvents(path)
		switch {
		case err != nil:
			unreadable = append(unreadable, fmt.Sprintf("%s (%v)", path, err))
		case len(events) > 0 && slices.Contains(read, path):
			found = append(found, fmt.Sprintf("%s for %s", path, strings.Join(events, ", ")))
		case len(events) > 0:
			stale = append(stale, path)
		}
	}
	r := Result{Check: CheckHookClaude}
	switch {
	case len(found) > 0:
		r.Status, r.Detail = OK, "notify-chat is registered where Claude Code reads it: "+strings.Join(found, "; ")
	case len(stale) > 0:
		r.Status = Warn
		r.Detail = "notify-chat is registered in " + strings.Join(stale, " and ") + ", which Claude Code does not read: the hook never runs"
		r.Fix = "run bin/notify-chat install (with --project for a project's file): it moves the registration to " + read[0] + " (or .claude/settings.local.json) and says so"
	case len(unreadable) > 0:
		r.Status, r.Detail, r.Fix = Warn, "cannot read "+strings.Join(unreadable, "; "), "fix the file's JSON; Claude Code cannot read it either"
	default:
		r.Status, r.Detail, r.Fix = Info, "notify-chat is not registered in "+read[0]+" or "+read[1]+" (optional: a chat message when a turn ends)", hookInstall
	}
	return r
}

// hookEvents lists the events of a Claude Code settings file whose hooks
// run a notify-chat binary; a missing file has none.
func hookEvents(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		return nil, err
	}
	var events []string
	for event, entries := range settings.Hooks {
		for _, e := range entries {
			for _, h := range e.Hooks {
				if h.Type == "command" && runsNotifyChat(h.Command) && !slices.Contains(events, event) {
					events = append(events, event)
				}
			}
		}
	}
	slices.Sort(events)
	return events, nil
}

func runsNotifyChat(command string) bool {
	return filepath.Base(strings.Trim(strings.TrimSpace(command), `'"`)) == "notify-chat"
}

func codexHookCheck(p HookPlaces) Result {
	path := filepath.Join(p.CodexHome, "config.toml")
	r := Result{Check: CheckHookCodex}
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Status, r.Detail = Warn, fmt.Sprintf("cannot read %s: %v", path, err)
		return r
	}
	notify := topLevelNotify(string(data))
	switch {
	case notify != "" && runsNotifyChat(firstTOMLString(notify)):
		r.Status, r.Detail = OK, "notify-chat is Codex's notify program in "+path+": "+notify
	case notify != "":
		r.Status, r.Detail, r.Fix = Info, path+" runs another notify program: "+notify, "bin/notify-chat install --client codex --force replaces it"
	default:
		r.Status, r.Detail, r.Fix = Info, "notify-chat is not Codex's notify program in "+path+" (optional)", hookInstall
	}
	return r
}

// topLevelNotify is the "notify = …" line of a config.toml before its
// first table, as written ("" when there is none). It reads lines only:
// enough to say what Codex runs, not a TOML parser.
func topLevelNotify(doc string) string {
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			return ""
		}
		key, _, ok := strings.Cut(trimmed, "=")
		if ok && strings.Trim(strings.TrimSpace(key), `"'`) == "notify" {
			return trimmed
		}
	}
	return ""
}

// firstTOMLString is the first quoted string of a notify line: the program.
func firstTOMLString(line string) string {
	_, rest, _ := strings.Cut(line, "=")
	i := strings.IndexAny(rest, `"'`)
	if i < 0 {
		return ""
	}
	end := strings.IndexByte(rest[i+1:], rest[i])
	if end < 0 {
		return ""
	}
	return rest[i+1 : i+1+end]
}
