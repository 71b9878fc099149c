package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dragoman-dev/dragoman/notifier/hook"
	"github.com/dragoman-dev/dragoman/notifier/install"
	"github.com/dragoman-dev/dragoman/notifier/webhook"
)

// Environment variables notify-chat reads.
const (
	envWebhookURL = "CHAT_WEBHOOK_URL"
	envExcerpt    = "CHAT_WEBHOOK_EXCERPT"
	envConfigDir  = "CLIENT_CONFIG_DIR"
)

const usage = `Usage:
  notify-chat [EVENT] < hook-input.json
      Run by the coding client as a hook: read the hook JSON on stdin and post
      {"text": …} to CHAT_WEBHOOK_URL. EVENT (Stop, Notification) defaults to
      hook_event_name from stdin. Always exits 0, within about 5 seconds.

  notify-chat install [--global | --project] [--config-dir DIR] [--dry-run]
      Copy this binary to DIR/hooks/notify-chat and register it for Stop and
      Notification in DIR/settings.json (--global, the default) or in
      .client/settings.local.json in the current folder (--project).

Environment:
  CHAT_WEBHOOK_URL      the chat's incoming webhook URL, a secret; empty or unset: send nothing
  CHAT_WEBHOOK_EXCERPT  N: add the first N characters of the last assistant message to Stop messages
  CLIENT_CONFIG_DIR     the default DIR for install (otherwise ~/.client)
`

// app is notify-chat with what it takes from the process made explicit.
type app struct {
	getenv     func(string) string
	executable func() (string, error)
	homeDir    func() (string, error)
	sender     webhook.Sender
}

func newApp(getenv func(string) string) app {
	return app{
		getenv:     getenv,
		executable: os.Executable,
		homeDir:    os.UserHomeDir,
		sender:     webhook.Sender{Budget: webhook.DefaultBudget},
	}
}

func (a app) run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "install":
			return a.install(args[1:], stdout, stderr)
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	return neverFail(stderr, func() { a.notify(args, stdin, stderr) })
}

// neverFail runs the hook so that nothing, a panic included, gives the client
// an exit status other than 0: a non-zero one changes what the client does.
func neverFail(stderr io.Writer, hookFunc func()) int {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "notify-chat: internal error, nothing sent: %v\n", r)
		}
	}()
	hookFunc()
	return 0
}

func (a app) notify(args []string, stdin io.Reader, stderr io.Writer) {
	input, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat: reading stdin: %v\n", err)
	}
	webhookURL := a.getenv(envWebhookURL)
	if webhookURL == "" {
		return
	}
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "notify-chat: unknown option %s, nothing sent (see notify-chat --help)\n", args[0])
		return
	}
	in, err := hook.Parse(input)
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat: stdin is not the hook JSON (%v); sending with defaults\n", err)
	}
	event := in.HookEventName
	if len(args) > 0 {
		event = args[0]
	}
	text := hook.Message(event, in, a.excerptRunes(stderr))
	if err := a.sender.Send(context.Background(), webhookURL, text); err != nil {
		fmt.Fprintf(stderr, "notify-chat: message not delivered: %v\n", err)
	}
}

func (a app) excerptRunes(stderr io.Writer) int {
	value := a.getenv(envExcerpt)
	if value == "" {
		return 0
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		fmt.Fprintf(stderr, "notify-chat: %s=%q is not a number of characters; no excerpt\n", envExcerpt, value)
		return 0
	}
	return n
}

func (a app) install(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("notify-chat install", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	global := flags.Bool("global", false, "register in DIR/settings.json (the default)")
	project := flags.Bool("project", false, "register in .client/settings.local.json in the current folder")
	configDir := flags.String("config-dir", "", "the client's config `DIR`; the binary goes to DIR/hooks (default $"+envConfigDir+", else ~/.client)")
	dryRun := flags.Bool("dry-run", false, "print what would be written, write nothing")
	err := flags.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printInstallUsage(stdout, flags)
		return 0
	case err == nil && flags.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", flags.Arg(0))
	case err == nil && *global && *project:
		err = errors.New("--global and --project exclude each other")
	}
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat install: %v\n", err)
		printInstallUsage(stderr, flags)
		return 2
	}
	opts, err := a.installOptions(*configDir, *project, *dryRun)
	if err == nil {
		err = install.Run(opts, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat install: %v\n", err)
		return 1
	}
	if a.getenv(envWebhookURL) == "" && !*dryRun {
		fmt.Fprintf(stdout, "note: %s is not set here; set it in the shell that launches the client\n", envWebhookURL)
	}
	return 0
}

func printInstallUsage(w io.Writer, flags *flag.FlagSet) {
	fmt.Fprintln(w, "Usage: notify-chat install [--global | --project] [--config-dir DIR] [--dry-run]")
	flags.SetOutput(w)
	flags.PrintDefaults()
}

func (a app) installOptions(configDir string, project, dryRun bool) (install.Options, error) {
	configDir, err := a.resolveConfigDir(configDir)
	if err != nil {
		return install.Options{}, err
	}
	source, err := a.executable()
	if err != nil {
		return install.Options{}, fmt.Errorf("finding the running binary: %w", err)
	}
	settings := install.GlobalSettings(configDir)
	if project {
		settings = install.ProjectSettings
	}
	return install.Options{Source: source, ConfigDir: configDir, Settings: settings, DryRun: dryRun}, nil
}

// resolveConfigDir is flagValue, else $CLIENT_CONFIG_DIR, else ~/.client.
func (a app) resolveConfigDir(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if dir := a.getenv(envConfigDir); dir != "" {
		return dir, nil
	}
	home, err := a.homeDir()
	if err != nil {
		return "", fmt.Errorf("no --config-dir, no %s, and no home folder: %w", envConfigDir, err)
	}
	return filepath.Join(home, ".client"), nil
}
