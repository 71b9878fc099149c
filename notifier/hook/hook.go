// Package hook owns what the coding client hands a hook: it parses the JSON
// object the client writes on stdin and turns it into the chat message text.
// It does no I/O.
package hook

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Event names the client uses in hook_event_name.
const (
	Stop         = "Stop"
	Notification = "Notification"
)

// Unknown stands in for a session id or project the input does not give.
const Unknown = "unknown"

// Input is the hook JSON the client writes on stdin. Fields it leaves out stay empty.
type Input struct {
	SessionID            string `json:"session_id"`
	Cwd                  string `json:"cwd"`
	HookEventName        string `json:"hook_event_name"`
	TranscriptPath       string `json:"transcript_path"`
	LastAssistantMessage string `json:"last_assistant_message"`
	Message              string `json:"message"`
	Title                string `json:"title"`
	NotificationType     string `json:"notification_type"`
}

// Parse decodes the hook JSON. On a field of the wrong type it returns the
// fields it could decode together with the error; on input that is not JSON
// at all it returns an empty Input and the error.
func Parse(data []byte) (Input, error) {
	var in Input
	err := json.Unmarshal(data, &in)
	return in, err
}

// Session is the session id, or Unknown.
func (in Input) Session() string {
	if in.SessionID == "" {
		return Unknown
	}
	return in.SessionID
}

// Project is the last path segment of the working directory, or Unknown.
func (in Input) Project() string {
	if in.Cwd == "" {
		return Unknown
	}
	return filepath.Base(in.Cwd)
}

// Message is the chat text for event. An empty event counts as Stop.
// excerptRunes > 0 adds the first excerptRunes characters of the last
// assistant message to a Stop message.
func Message(event string, in Input, excerptRunes int) string {
	where := fmt.Sprintf("in %s (session %s)", code(in.Project()), code(in.Session()))
	switch event {
	case Stop, "":
		return "✅ Task complete " + where + excerpt(in.LastAssistantMessage, excerptRunes)
	case Notification:
		return "🔔 Attention needed " + where + detail(in.Message)
	default:
		return "ℹ️ " + code(event) + " " + where
	}
}

func detail(message string) string {
	if message == "" {
		return ""
	}
	return ": " + escape(message)
}

// excerpt is a chat block quote of the first n runes of text, escaped after
// cutting so that no entity is cut in half.
func excerpt(text string, n int) string {
	text = strings.TrimSpace(text)
	if n <= 0 || text == "" {
		return ""
	}
	runes := []rune(text)
	cut := ""
	if len(runes) > n {
		runes, cut = runes[:n], "…"
	}
	return "\n" + quote(escape(string(runes))+cut)
}

func quote(text string) string {
	return "> " + strings.ReplaceAll(text, "\n", "\n> ")
}

// code is text as inline code; a backtick inside would end the code span early.
func code(text string) string {
	return "`" + strings.ReplaceAll(escape(text), "`", "'") + "`"
}

var chatEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape makes text literal in Slack-style chat markup.
func escape(text string) string {
	return chatEscaper.Replace(text)
}
