package hook

import (
	"encoding/json"
	"errors"
)

// CodexTurnComplete is the type of the notification Codex sends at the
// end of each turn, the only one Codex 0.169 sends.
const CodexTurnComplete = "agent-turn-complete"

// CodexNotification is the JSON Codex passes its notify program as one
// argument.
type CodexNotification struct {
	Type                 string          `json:"type"`
	ThreadID             string          `json:"thread-id"`
	TurnID               string          `json:"turn-id"`
	Cwd                  string          `json:"cwd"`
	Client               string          `json:"client"`
	InputMessages        json.RawMessage `json:"input-messages"` // not used: kept raw, whatever its shape
	LastAssistantMessage string          `json:"last-assistant-message"`
}

// ParseCodex decodes Codex's notify argument.
func ParseCodex(data []byte) (CodexNotification, error) {
	var n CodexNotification
	if err := json.Unmarshal(data, &n); err != nil {
		return CodexNotification{}, err
	}
	if n.Type == "" {
		return CodexNotification{}, errors.New(`no "type"`)
	}
	return n, nil
}

// Input is the notification as the hook input of a Stop: the thread is
// the session, cwd names the project, the last assistant message gives
// the excerpt.
func (n CodexNotification) Input() Input {
	return Input{SessionID: n.ThreadID, Cwd: n.Cwd, HookEventName: Stop, LastAssistantMessage: n.LastAssistantMessage}
}
