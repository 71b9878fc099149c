// Command notify-chat is a hook for the coding client: it posts a chat message
// to CHAT_WEBHOOK_URL when the client finishes a turn or needs attention, and
// "notify-chat install" registers it in the client's settings.
package main

import "os"

func main() {
	os.Exit(newApp(os.Getenv).run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
