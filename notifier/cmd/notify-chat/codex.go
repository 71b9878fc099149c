package main

import (
	"fmt"
	"io"

	"github.com/dragoman-dev/dragoman/notifier/hook"
)

// notifyCodex is the hook run by Codex: arg is the JSON Codex appends to
// its notify program at the end of each turn.
func (a app) notifyCodex(arg string, stderr io.Writer) {
	webhookURL := a.getenv(envWebhookURL)
	if webhookURL == "" {
		return
	}
	turn, err := hook.ParseCodex([]byte(arg))
	if err != nil {
		fmt.Fprintf(stderr, "notify-chat: the argument is not Codex's notify JSON (%v); nothing sent\n", err)
		return
	}
	if turn.Type != hook.CodexTurnComplete {
		fmt.Fprintf(stderr, "notify-chat: Codex notification %q has no message; nothing sent\n", turn.Type)
		return
	}
	a.deliver(webhookURL, hook.Stop, turn.Input(), stderr)
}
