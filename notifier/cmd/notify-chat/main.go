// Command notify-chat is a hook for the coding clients: it posts a chat
// message to CHAT_WEBHOOK_URL when Claude Code or Codex finishes a turn or
// Claude Code needs attention, and "notify-chat install" registers it where
// the client reads it (Claude Code's settings.json, Codex's config.toml).
package main

import "os"

func main() {
	os.Exit(newApp(os.Getenv).run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
