package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/dragoman-dev/dragoman/notifier/format"
	"github.com/dragoman-dev/dragoman/notifier/hook"
	"github.com/dragoman-dev/dragoman/notifier/webhook"
)

// Environment variables notify-chat reads.
const (
	envWebhookURL = "CHAT_WEBHOOK_URL"
	envFormat     = "CHAT_WEBHOOK_FORMAT"
	envExcerpt    = "CHAT_WEBHOOK_EXCERPT"
	envConfigDir  = "CLIENT_CONFIG_DIR"
	envClaudeDir  = "CLAUDE_CONFIG_DIR"
	envCodexHome  = "CODEX_HOME"
)

const usage = `Usage:
  notify-chat [EVENT] < hook-input.json
      Run by Claude Code as a hook: read the hook JSON on stdin and post the
      message to CHAT_WEBHOOK_URL in CHAT_WEBHOOK_FORMAT. EVENT (Stop,
      Notification, SubagentStop) defaults to hook_event_name from stdin.
      Always exits 0, within about 5 seconds.

  notify-chat '{"type":"agent-turn-complete",...}'
      Run by Codex as its notify program: post the same "Task complete"
      message for the turn the JSON argument describes.

  notify-chat test
      Say where notify-chat is registered and whether the client reads that
      file, then send one message saying the hook works and print the
      webhook's HTTP status. Exits non-zero when the message was not delivered.

  notify-chat install [--global | --project | --client codex] [--config-dir DIR] [--events LIST] [--force] [--dry-run]
      Copy this binary to DIR/hooks/notify-chat and register it for LIST
      (default Stop,Notification; SubagentStop too if you name it) in
      DIR/settings.json (--global, the default) or in
      .claude/settings.local.json in the current folder (--project). DIR is
      Claude Code's: $CLAUDE_CONFIG_DIR, else ~/.claude. A registration an
      earlier version left in ~/.client/settings.json or
      .client/settings.local.json (files Claude Code does not read) is moved.

  With --client codex: copy this binary to DIR/hooks/notify-chat and set
      notify = ["DIR/hooks/notify-chat"] in DIR/config.toml, the rest of the
      file kept byte for byte. DIR is $CODEX_HOME, else ~/.codex. A notify
      that runs another program is refused unless --force.

  notify-chat uninstall [--global | --project | --client codex] [--config-dir DIR] [--dry-run]
      Remove what install added, from that file and from the old ~/.client
      or .client/ one, keeping everything else byte for byte, and the
      copied binary.

Environment:
  CHAT_WEBHOOK_URL      the chat's incoming webhook URL, a secret; empty or unset: send nothing
  CHAT_WEBHOOK_FORMAT   auto (default: from the URL), text, discord, teams, google-chat, mattermost, ntfy
  CHAT_WEBHOOK_EXCERPT  N: add the first N characters of the last assistant message to Stop
                        and SubagentStop messages (and Codex's turns)
  CLAUDE_CONFIG_DIR     Claude Code's config folder, the default DIR (otherwise ~/.claude)
  CLIENT_CONFIG_DIR     overrides the DIR for Claude Code (the spec's name; --config-dir wins)
  CODEX_HOME            Codex's folder, the default DIR of --client codex (otherwise ~/.codex)
`

// app is notify-chat with what it takes from the process made explicit.
type app struct {
	getenv     func(string) string
	executable func() (string, error)
	homeDir    func() (string, error)
	workingDir func() (string, error)
	sender     webhook.Sender
}

func newApp(getenv func(string) string) app {
	return app{
		getenv:     getenv,
		executable: os.Executable,
		homeDir:    os.UserHomeDir,
		workingDir: os.Getwd,
		sender:     webhook.Sender{Budget: webhook.DefaultBudget},
	}
}

func (a app) run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "install":
			return a.install(args[1:], stdout, stderr)
		case "uninstall":
			return a.uninstall(args[1:], stdout, stderr)
		case "test":
			return a.test(args[1:], stdout, stderr)
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, usage)
			return 0
		}
		if arg := args[len(args)-1]; strings.HasPrefix(strings.TrimSpace(arg), "{") {
			// Codex runs notify with one JSON argument and no stdin to read.
			return neverFail(stderr, func() { a.notifyCodex(arg, stderr) })
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
	a.deliver(webhookURL, event, in, stderr)
}

// deliver posts the note for event and in to webhookURL, saying on stderr
// what went wrong.
func (a app) deliver(webhookURL, event string, in hook.Input, stderr io.Writer) {
	chosen, err := format.Parse(a.getenv(envFormat))
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat: %s: %v; sending as auto\n", envFormat, err)
		chosen = format.Auto
	}
	note := hook.Compose(event, in, a.excerptRunes(stderr))
	if _, err := a.send(format.Resolve(chosen, webhookURL), webhookURL, note); err != nil {
		fmt.Fprintf(stderr, "notify-chat: message not delivered: %v\n", err)
	}
}

// send delivers note to webhookURL in format f and returns the webhook's status line.
func (a app) send(f format.Format, webhookURL string, note hook.Note) (string, error) {
	req, err := format.Request(f, webhookURL, note)
	if err != nil {
		return "", err
	}
	return a.sender.Send(context.Background(), req)
}

// test sends one message and says what came of it; unlike the hook it
// exits non-zero when the message was not delivered.
func (a app) test(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, "Usage: notify-chat test   (says where notify-chat is registered, sends one message to CHAT_WEBHOOK_URL and prints the HTTP status)")
			return 0
		}
		fmt.Fprintf(stderr, "notify-chat test: unexpected argument %q (it takes none)\n", args[0])
		return 2
	}
	a.reportRegistrations(stdout)
	webhookURL := a.getenv(envWebhookURL)
	if webhookURL == "" {
		fmt.Fprintf(stderr, "notify-chat test: %s is not set here; export it in this shell (the one that launches the client) and run the test again\n", envWebhookURL)
		return 2
	}
	chosen, err := format.Parse(a.getenv(envFormat))
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat test: %s: %v\n", envFormat, err)
		return 2
	}
	f := format.Resolve(chosen, webhookURL)
	how := "set by " + envFormat
	if chosen == format.Auto {
		how = "chosen from the URL"
	}
	cwd, _ := a.workingDir()
	note := hook.Note{
		Event: "test", Marker: "🧪", Headline: "notify-chat test",
		Project: hook.Input{Cwd: cwd}.Project(), Session: "test",
		Detail: "the hook can post to this channel",
	}
	status, err := a.send(f, webhookURL, note)
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat test: message not delivered (format %s, %s): %v\n", f, how, err)
		return 1
	}
	fmt.Fprintf(stdout, "sent a test message (format %s, %s): HTTP %s\n", f, how, status)
	return 0
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
