// Package hook owns what the coding clients hand a hook: it parses the JSON
// object Claude Code writes on stdin, and the JSON argument Codex gives its
// notify program (codex.go), and turns them into a Note, the parts of the
// chat message before any chat service's markup. It does no I/O.
package hook

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// Event names the client uses in hook_event_name.
const (
	Stop         = "Stop"
	Notification = "Notification"
	SubagentStop = "SubagentStop"
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
	AgentType            string `json:"agent_type"` // SubagentStop: the subagent's type
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

// Note is one chat message in parts, all plain text: a format renders it
// with its service's markup as
//
//	Marker Headline `Subject` After in `Project` (session `Session`): Detail
//	> Excerpt
//
// leaving out the parts that are empty. Detail and Excerpt are the only
// parts a format may shorten to fit its service's length limit.
type Note struct {
	Event    string // the hook event the note is for
	Marker   string // an emoji: ✅ 🔔 🤖 ℹ️
	Headline string // "Task complete"
	Subject  string // shown as code after the headline: an agent type, an event name
	After    string // words after the subject: "finished"
	Project  string
	Session  string
	Detail   string // what the client said (a Notification's message), on the same line
	Excerpt  string // the start of the last assistant message, quoted below
	// DetailCut and ExcerptCut say that Detail and Excerpt were shortened:
	// a format shows an ellipsis after them.
	DetailCut, ExcerptCut bool
}

// Compose is the note for event. An empty event counts as Stop.
// excerptRunes > 0 adds the first excerptRunes characters of the last
// assistant message to a Stop or SubagentStop note.
func Compose(event string, in Input, excerptRunes int) Note {
	note := Note{Event: event, Project: in.Project(), Session: in.Session()}
	switch event {
	case Stop, "":
		note.Event, note.Marker, note.Headline = Stop, "✅", "Task complete"
		note.Excerpt, note.ExcerptCut = excerpt(in.LastAssistantMessage, excerptRunes)
	case Notification:
		note.Marker, note.Headline, note.Detail = "🔔", "Attention needed", in.Message
	case SubagentStop:
		note.Marker, note.Headline, note.Subject, note.After = "🤖", "Subagent", in.AgentType, "finished"
		note.Excerpt, note.ExcerptCut = excerpt(in.LastAssistantMessage, excerptRunes)
	default:
		note.Marker, note.Subject = "ℹ️", event
	}
	return note
}

// excerpt is the first n runes of text, trimmed, and whether it was cut.
func excerpt(text string, n int) (string, bool) {
	text = strings.TrimSpace(text)
	if n <= 0 || text == "" {
		return "", false
	}
	return CutRunes(text, n)
}

// CutRunes is the first n runes of text, and whether any were left out.
func CutRunes(text string, n int) (string, bool) {
	count := 0
	for i := range text {
		if count == n {
			return text[:i], true
		}
		count++
	}
	return text, false
}
