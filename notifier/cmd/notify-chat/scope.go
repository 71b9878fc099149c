package main

// install and uninstall: which client, which settings file, which folder.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dragoman-dev/dragoman/notifier/install"
)

// The clients install registers notify-chat with.
const (
	clientClaude = "claude"
	clientCodex  = "codex"
)

// legacyDir is the folder earlier versions installed into by default: the
// spec's {client_config_dir} taken literally, which Claude Code never reads.
const legacyDir = ".client"

// scopeFlags are the flags install and uninstall share: which client,
// which settings file, which config folder, and whether to only print.
type scopeFlags struct {
	set       *flag.FlagSet
	usage     string
	global    *bool
	project   *bool
	client    *string
	configDir *string
	dryRun    *bool
}

func newScopeFlags(command, usage, verb string) scopeFlags {
	set := flag.NewFlagSet("notify-chat "+command, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	return scopeFlags{
		set:       set,
		usage:     usage,
		global:    set.Bool("global", false, verb+" DIR/settings.json (the default)"),
		project:   set.Bool("project", false, verb+" .claude/settings.local.json in the current folder"),
		client:    set.String("client", clientClaude, "the coding client: claude (Claude Code's settings.json) or codex (Codex's config.toml)"),
		configDir: set.String("config-dir", "", "the client's config `DIR`; the binary is DIR/hooks/notify-chat (default: $"+envConfigDir+", else $"+envClaudeDir+", else ~/.claude; for codex $"+envCodexHome+", else ~/.codex)"),
		dryRun:    set.Bool("dry-run", false, "print what would change, change nothing"),
	}
}

// parse reads args; done is true when the command should exit with status.
func (f scopeFlags) parse(args []string, stdout, stderr io.Writer) (status int, done bool) {
	err := f.set.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		f.printUsage(stdout)
		return 0, true
	case err == nil && f.set.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", f.set.Arg(0))
	case err == nil && *f.global && *f.project:
		err = errors.New("--global and --project exclude each other")
	case err == nil && *f.client != clientClaude && *f.client != clientCodex:
		err = fmt.Errorf("--client %q: write claude or codex", *f.client)
	case err == nil && *f.client == clientCodex && (*f.global || *f.project):
		err = errors.New("--client codex has one config.toml: --global and --project are Claude Code's")
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", f.set.Name(), err)
		f.printUsage(stderr)
		return 2, true
	}
	return 0, false
}

func (f scopeFlags) printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: "+f.usage)
	f.set.SetOutput(w)
	f.set.PrintDefaults()
}

// settingsFile is the settings file the flags name under configDir.
func (f scopeFlags) settingsFile(configDir string) string {
	if *f.project {
		return install.ProjectSettings
	}
	return install.GlobalSettings(configDir)
}

func (a app) install(args []string, stdout, stderr io.Writer) int {
	flags := newScopeFlags("install", "notify-chat install [--global | --project | --client codex] [--config-dir DIR] [--events LIST] [--force] [--dry-run]", "register in")
	eventList := flags.set.String("events", strings.Join(install.DefaultEvents, ","), "the hook events to register for, from "+strings.Join(install.KnownEvents, ",")+" (Claude Code)")
	force := flags.set.Bool("force", false, "codex: replace a notify that runs another program")
	if status, done := flags.parse(args, stdout, stderr); done {
		return status
	}
	set := map[string]bool{}
	flags.set.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *flags.client == clientCodex && set["events"] || *flags.client != clientCodex && set["force"] {
		fmt.Fprintln(stderr, "notify-chat install: --events is Claude Code's (Codex notifies at the end of each turn) and --force Codex's")
		flags.printUsage(stderr)
		return 2
	}
	var err error
	if *flags.client == clientCodex {
		err = a.installCodex(flags, *force, stdout)
	} else {
		var events []string
		if events, err = install.ParseEvents(*eventList); err != nil {
			fmt.Fprintf(stderr, "notify-chat install: --events: %v\n", err)
			return 2
		}
		var opts install.Options
		if opts, err = a.installOptions(flags, events); err == nil {
			err = install.Run(opts, stdout)
		}
		if err == nil && !*flags.project {
			a.noteUnread(opts.ConfigDir, stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat install: %v\n", err)
		return 1
	}
	if a.getenv(envWebhookURL) == "" && !*flags.dryRun {
		fmt.Fprintf(stdout, "note: %s is not set here; set it in the shell that launches the client\n", envWebhookURL)
	}
	return 0
}

func (a app) installOptions(flags scopeFlags, events []string) (install.Options, error) {
	configDir, err := a.resolveConfigDir(*flags.configDir)
	if err != nil {
		return install.Options{}, err
	}
	source, err := a.executable()
	if err != nil {
		return install.Options{}, fmt.Errorf("finding the running binary: %w", err)
	}
	return install.Options{Source: source, ConfigDir: configDir, Settings: flags.settingsFile(configDir), DryRun: *flags.dryRun, Events: events,
		Legacy: a.legacy(configDir, *flags.project)}, nil
}

func (a app) installCodex(flags scopeFlags, force bool, stdout io.Writer) error {
	home, err := a.resolveCodexHome(*flags.configDir)
	if err != nil {
		return err
	}
	source, err := a.executable()
	if err != nil {
		return fmt.Errorf("finding the running binary: %w", err)
	}
	return install.RunCodex(install.CodexOptions{Source: source, Home: home, Force: force, DryRun: *flags.dryRun}, stdout)
}

func (a app) uninstall(args []string, stdout, stderr io.Writer) int {
	flags := newScopeFlags("uninstall", "notify-chat uninstall [--global | --project | --client codex] [--config-dir DIR] [--dry-run]", "unregister from")
	if status, done := flags.parse(args, stdout, stderr); done {
		return status
	}
	var err error
	if *flags.client == clientCodex {
		var home string
		if home, err = a.resolveCodexHome(*flags.configDir); err == nil {
			err = install.UninstallCodex(install.CodexOptions{Home: home, DryRun: *flags.dryRun}, stdout)
		}
	} else {
		var configDir string
		if configDir, err = a.resolveConfigDir(*flags.configDir); err == nil {
			settings := flags.settingsFile(configDir)
			// The binary is shared by the global and this project's settings:
			// it stays while the other one still runs it.
			others := []string{install.ProjectSettings}
			if *flags.project {
				others = []string{install.GlobalSettings(configDir)}
			}
			err = install.Uninstall(install.UninstallOptions{ConfigDir: configDir, Settings: settings, Others: others,
				Legacy: a.legacy(configDir, *flags.project), DryRun: *flags.dryRun}, stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat uninstall: %v\n", err)
		return 1
	}
	return 0
}

// resolveConfigDir is Claude Code's folder: flagValue, else
// $CLIENT_CONFIG_DIR (the spec's name), else $CLAUDE_CONFIG_DIR, else
// ~/.claude, the folders Claude Code reads.
func (a app) resolveConfigDir(flagValue string) (string, error) {
	for _, dir := range []string{flagValue, a.getenv(envConfigDir), a.getenv(envClaudeDir)} {
		if dir != "" {
			return dir, nil
		}
	}
	home, err := a.homeDir()
	if err != nil {
		return "", fmt.Errorf("no --config-dir, no %s or %s, and no home folder: %w", envConfigDir, envClaudeDir, err)
	}
	return filepath.Join(home, ".claude"), nil
}

// resolveCodexHome is Codex's folder: flagValue, else $CODEX_HOME, else ~/.codex.
func (a app) resolveCodexHome(flagValue string) (string, error) {
	for _, dir := range []string{flagValue, a.getenv(envCodexHome)} {
		if dir != "" {
			return dir, nil
		}
	}
	home, err := a.homeDir()
	if err != nil {
		return "", fmt.Errorf("no --config-dir, no %s, and no home folder: %w", envCodexHome, err)
	}
	return filepath.Join(home, ".codex"), nil
}

// legacy are the registrations earlier versions made where Claude Code
// does not read them, for the scope asked: ~/.client/settings.json for
// the global settings, .client/settings.local.json for the project's;
// their binary was ~/.client/hooks/notify-chat. A folder the user chose
// as configDir is never legacy.
func (a app) legacy(configDir string, project bool) []install.Legacy {
	home, err := a.homeDir()
	if err != nil {
		return nil // no home: no ~/.client either
	}
	oldDir := filepath.Join(home, legacyDir)
	oldGlobal := install.GlobalSettings(oldDir)
	binary := install.BinaryPath(oldDir)
	if sameDir(oldDir, configDir) {
		if project {
			return []install.Legacy{{Settings: install.LegacyProjectSettings}}
		}
		return nil
	}
	if project {
		return []install.Legacy{{Settings: install.LegacyProjectSettings, Binary: binary, Users: []string{oldGlobal}}}
	}
	return []install.Legacy{{Settings: oldGlobal, Binary: binary, Users: []string{install.LegacyProjectSettings}}}
}

func sameDir(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && filepath.Clean(absA) == filepath.Clean(absB)
}

// noteUnread says so when configDir, chosen with --config-dir or
// CLIENT_CONFIG_DIR, is not the folder Claude Code reads.
func (a app) noteUnread(configDir string, stdout io.Writer) {
	reads := a.getenv(envClaudeDir)
	if reads == "" {
		home, err := a.homeDir()
		if err != nil {
			return
		}
		reads = filepath.Join(home, ".claude")
	}
	if !sameDir(configDir, reads) {
		fmt.Fprintf(stdout, "note: Claude Code reads %s, not %s: start it with %s=%s, or install without --config-dir and %s\n",
			install.GlobalSettings(reads), install.GlobalSettings(configDir), envClaudeDir, configDir, envConfigDir)
	}
}
