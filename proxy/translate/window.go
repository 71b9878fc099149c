package translate

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
)

// ContextOverflowError is a request whose estimated prompt does not fit the
// backend model's context window (Target.ContextWindow): the proxy answers
// it without calling the backend.
type ContextOverflowError struct {
	Tokens int // the prompt, estimated
	Window int
}

func (e *ContextOverflowError) Error() string {
	return "prompt is too long: " + strconv.Itoa(e.Tokens) + " tokens > " + strconv.Itoa(e.Window) + " maximum"
}

// ImagePlaceholder replaces an image for a backend model that cannot read
// images (Target.NoVision).
const ImagePlaceholder = "[image omitted: this model cannot read images]"

// fitOutput returns the max_tokens to send for a request that asks for
// asked (0: it names none) beside a prompt estimated at prompt tokens. A
// configured MaxOutputTokens is the clamp when set; otherwise a known
// window clamps asked to what is left of it after the prompt and a margin
// for the estimate's error (an eighth of the prompt and 64 tokens). A
// prompt at or over the window is a *ContextOverflowError.
func fitOutput(asked int64, prompt int, t Target) (int64, error) {
	prompt = t.ScalePrompt(prompt)
	if w := t.ContextWindow; w > 0 && prompt >= w {
		return 0, &ContextOverflowError{Tokens: prompt, Window: w}
	}
	if t.MaxOutputTokens > 0 {
		return t.clampOutput(asked), nil
	}
	if t.ContextWindow <= 0 || asked == 0 {
		return asked, nil
	}
	left := int64(t.ContextWindow - prompt)
	margin := prompt / 8 // the estimate's error
	if t.PromptScale > 0 {
		margin = prompt / 32 // corrected by the backend's own counts
	}
	room := left - int64(margin) - 64
	if room < 1 {
		room = left
	}
	return min(asked, room), nil
}

// clampOutput bounds a requested output limit by MaxOutputTokens.
func (t Target) clampOutput(n int64) int64 {
	if m := int64(t.MaxOutputTokens); m > 0 && n > m {
		return m
	}
	return n
}

// ScalePrompt is an estimate of the prompt corrected by PromptScale.
func (t Target) ScalePrompt(estimate int) int {
	if t.PromptScale <= 0 {
		return estimate
	}
	return int(int64(estimate) * int64(t.PromptScale) / 1000)
}

// estimateChat estimates the prompt tokens of a Chat request with the one
// promptEstimate: each message's text parts as text, its other members
// (tool_calls) as JSON, each image part at imageTokens, and its tools.
func estimateChat(msgs []chatMessage, tools []byte, m *memo.Memo) int {
	e := promptEstimate{memo: m}
	if len(tools) > 0 {
		e.n += toolOverhead * bytes.Count(tools, []byte(`"function"`))
		e.json(tools)
	}
	for i := range msgs {
		m := &msgs[i]
		e.message()
		switch m.content.Kind() {
		case '"':
			e.text(m.content)
		case '[':
			var parts []struct {
				Type string         `json:"type"`
				Text jsontext.Value `json:"text"`
			}
			if json.Unmarshal(m.content, &parts) != nil {
				e.json(m.content)
				break
			}
			for _, p := range parts {
				if p.Type == "image_url" || p.Type == "input_image" {
					e.image()
				} else {
					e.text(p.Text)
				}
			}
		}
		for _, r := range m.rest {
			e.json(r[1])
		}
	}
	return e.total()
}

// countedMargin is what RoomFor leaves free beside a prompt the backend
// counted itself: its count is the prompt's ("at least", vLLM says), so a
// few tokens suffice.
const countedMargin = 32

// RoomFor is the max_tokens that fits in a window of window tokens beside
// a prompt of prompt tokens as the backend counted it; 0 when none does.
func RoomFor(window, prompt int) int {
	return max(window-prompt-countedMargin, 0)
}

// WithMaxTokens returns a copy of body, a request as the proxy sends it
// (Chat or Messages), in a buffer from bufpool, with the output limit it
// names (max_tokens, max_completion_tokens) set to n; ok is false, and
// body is not copied, when it names none or is not a JSON object.
func WithMaxTokens(body []byte, n int) ([]byte, bool) {
	top, err := scanObject(body, false, func(name []byte) bool {
		return string(name) == "max_tokens" || string(name) == "max_completion_tokens"
	})
	if err != nil {
		return nil, false
	}
	var edits []edit
	for _, m := range top.list {
		if m.value.Kind() == '0' {
			edits = append(edits, edit{m.start, m.end, strconv.AppendInt(nil, int64(n), 10)})
		}
	}
	if len(edits) == 0 {
		return nil, false
	}
	return splice(body, edits), true
}
