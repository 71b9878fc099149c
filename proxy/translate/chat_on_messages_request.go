package translate

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// DefaultMessagesMaxTokens is the max_tokens of a Messages request made
// from a Chat request that set none (the Messages format requires one):
// Target.MaxOutputTokens when set, this otherwise.
const DefaultMessagesMaxTokens = 8192

// Thinking budgets for a Chat request's reasoning_effort.
var effortBudgets = map[string]int64{"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384}

// ChatOnMessagesRequest translates a Chat Completions request into a
// Messages request for a backend that speaks the Messages format (the
// reverse of MessagesOnChatRequest):
//   - system and developer messages → the top-level system prompt, as text
//     blocks in order;
//   - user content (a string, or text and image_url parts: a data URL
//     becomes a base64 image, any other URL a url image) → user content;
//   - assistant content and tool_calls → text and tool_use blocks (the
//     arguments parsed as ToolInput does); reasoning in history is dropped
//     (the Messages format wants it signed);
//   - tool messages → tool_result blocks of a user turn, before any user
//     text that follows them; turns of one role in a row are merged;
//   - tools → {name, description, input_schema}; tool_choice auto, required,
//     none, or a named function → auto, any, none, tool;
//     parallel_tool_calls false → disable_parallel_tool_use;
//   - max_completion_tokens or max_tokens → max_tokens (DefaultMessagesMaxTokens
//     when absent), clamped by Target.MaxOutputTokens; stop → stop_sequences;
//     temperature, top_p, top_k pass; user → metadata.user_id;
//     reasoning_effort → thinking with a budget (effortBudgets) below
//     max_tokens; stream passes (a Messages stream always reports usage).
//
// What the Messages format cannot carry (n > 1, audio or file parts) is a
// *RequestError; other members (logprobs, seed, penalties,
// response_format…) are dropped.
func ChatOnMessagesRequest(body []byte, resolve Resolver) (BackendRequest, error) {
	var req chat.Request
	if err := json.Unmarshal(body, &req, decodeOpts); err != nil {
		return BackendRequest{}, decodeError(err)
	}
	if req.Model == "" {
		return BackendRequest{}, errNoModel
	}
	if len(req.Messages) == 0 {
		return BackendRequest{}, invalidf("messages: must not be empty")
	}
	if err := checkRest(req.Rest); err != nil {
		return BackendRequest{}, err
	}
	target, err := resolveTarget(resolve, req.Model)
	if err != nil {
		return BackendRequest{}, err
	}
	out := reverseRequest{Model: target.BackendModel, Stream: req.Stream, Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK}
	var t turns
	for i := range req.Messages {
		if err := t.add(i, &req.Messages[i]); err != nil {
			return BackendRequest{}, err
		}
	}
	if len(t.msgs) == 0 {
		return BackendRequest{}, invalidf("messages: no user or assistant message with content")
	}
	out.System, out.Messages = t.system, t.msgs

	maxTokens := int64(DefaultMessagesMaxTokens)
	if target.MaxOutputTokens > 0 {
		maxTokens = int64(target.MaxOutputTokens)
	}
	for _, n := range []*int64{req.MaxTokens, req.MaxCompletionTokens} {
		if n == nil {
			continue
		}
		if *n < 1 {
			return BackendRequest{}, invalidf("max_tokens: must be greater than 0, got %d", *n)
		}
		maxTokens = *n
		if target.MaxOutputTokens > 0 && maxTokens > int64(target.MaxOutputTokens) {
			maxTokens = int64(target.MaxOutputTokens)
		}
	}
	out.MaxTokens = maxTokens
	if out.StopSequences, err = stopSequences(req.Stop); err != nil {
		return BackendRequest{}, err
	}
	for i, tl := range req.Tools {
		if tl.Function.Name == "" {
			return BackendRequest{}, invalidf("tools.%d.function.name: required", i)
		}
		schema := tl.Function.Parameters
		if len(schema) == 0 || jsontext.Value(schema).Kind() == 'n' {
			schema = jsontext.Value(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, reverseTool{Name: tl.Function.Name, Description: tl.Function.Description, InputSchema: schema})
	}
	if out.ToolChoice, err = toolChoice(req.ToolChoice, req.ParallelToolCalls); err != nil {
		return BackendRequest{}, err
	}
	if req.User.Kind() == '"' {
		out.Metadata = &messages.Metadata{UserID: req.User}
	}
	if budget, ok := effortBudgets[req.ReasoningEffort]; ok {
		budget = min(budget, maxTokens-1)
		if budget >= 1024 {
			out.Thinking = &messages.Thinking{Type: "enabled", BudgetTokens: budget}
		}
	}
	b, err := json.Marshal(&out, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		return BackendRequest{}, invalidf("encoding the Messages request: %v", err)
	}
	// The estimate count_tokens would give the Messages body it becomes.
	prompt := 0
	if tc, err := DecodeTokenCount(b); err == nil {
		prompt = tc.Estimate()
	}
	return BackendRequest{Body: b, Target: target, Stream: req.Stream, InputTokens: prompt,
		IncludeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, Tools: offeredTools(target, req.Tools, chatToolOf)}, nil
}

// reverseRequest is the Messages request ChatOnMessagesRequest writes.
type reverseRequest struct {
	Model         string               `json:"model"`
	System        []reverseBlock       `json:"system,omitzero"`
	Messages      []reverseMessage     `json:"messages"`
	MaxTokens     int64                `json:"max_tokens"`
	StopSequences []string             `json:"stop_sequences,omitzero"`
	Temperature   jsontext.Value       `json:"temperature,omitzero"`
	TopP          jsontext.Value       `json:"top_p,omitzero"`
	TopK          jsontext.Value       `json:"top_k,omitzero"`
	Tools         []reverseTool        `json:"tools,omitzero"`
	ToolChoice    *messages.ToolChoice `json:"tool_choice,omitzero"`
	Metadata      *messages.Metadata   `json:"metadata,omitzero"`
	Thinking      *messages.Thinking   `json:"thinking,omitzero"`
	Stream        bool                 `json:"stream,omitzero"`
}

type reverseMessage struct {
	Role    string         `json:"role"`
	Content []reverseBlock `json:"content"`
}

// reverseBlock is a content block of the written request.
type reverseBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitzero"`
	Source    *reverseSource  `json:"source,omitzero"`
	ID        string          `json:"id,omitzero"`
	Name      string          `json:"name,omitzero"`
	Input     jsontext.Value  `json:"input,omitzero"`
	ToolUseID string          `json:"tool_use_id,omitzero"`
	Content   *[]reverseBlock `json:"content,omitzero"`
	IsError   bool            `json:"is_error,omitzero"`
}

type reverseSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitzero"`
	Data      string `json:"data,omitzero"`
	URL       string `json:"url,omitzero"`
}

type reverseTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitzero"`
	InputSchema jsontext.Value `json:"input_schema"`
}

func textBlock(s string) reverseBlock { return reverseBlock{Type: "text", Text: &s} }

// checkRest refuses the Chat members the Messages format cannot honour.
func checkRest(rest jsontext.Value) error {
	if len(rest) == 0 {
		return nil
	}
	var extra struct {
		N *int64 `json:"n"`
	}
	if json.Unmarshal(rest, &extra, decodeOpts) == nil && extra.N != nil && *extra.N != 1 {
		return invalidf("n: this model's backend gives one choice per request; send n: 1 or leave it out")
	}
	return nil
}

// turns collects the system prompt and the alternating turns.
type turns struct {
	system []reverseBlock
	msgs   []reverseMessage
}

// push appends blocks as a turn of role, merged into the last turn when
// that has the same role. In a user turn, tool results go before text.
func (t *turns) push(role string, blocks []reverseBlock) {
	if len(blocks) == 0 {
		return
	}
	if n := len(t.msgs); n > 0 && t.msgs[n-1].Role == role {
		last := &t.msgs[n-1]
		if role == "user" && blocks[0].Type == "tool_result" {
			// Tool results lead the turn: after other tool results, before
			// the turn's text.
			at := 0
			for at < len(last.Content) && last.Content[at].Type == "tool_result" {
				at++
			}
			last.Content = append(last.Content[:at], append(blocks, last.Content[at:]...)...)
			return
		}
		last.Content = append(last.Content, blocks...)
		return
	}
	t.msgs = append(t.msgs, reverseMessage{Role: role, Content: blocks})
}

func (t *turns) add(i int, m *chat.RequestMsg) error {
	at := "messages." + strconv.Itoa(i)
	switch m.Role {
	case "system", "developer":
		blocks, err := contentBlocks(m.Content, at, false)
		if err != nil {
			return err
		}
		t.system = append(t.system, blocks...)
	case "user":
		blocks, err := contentBlocks(m.Content, at, true)
		if err != nil {
			return err
		}
		t.push("user", blocks)
	case "assistant":
		blocks, err := contentBlocks(m.Content, at, false)
		if err != nil {
			return err
		}
		for j, tc := range m.ToolCalls {
			if tc.Function.Name == "" {
				return invalidf("%s.tool_calls.%d.function.name: required", at, j)
			}
			id := tc.ID
			if id == "" {
				id = NewToolUseID()
			}
			blocks = append(blocks, reverseBlock{Type: "tool_use", ID: id, Name: tc.Function.Name, Input: ToolInput(tc.Function.Arguments)})
		}
		t.push("assistant", blocks)
	case "tool":
		if m.ToolCallID == "" {
			return invalidf("%s.tool_call_id: required in a tool message", at)
		}
		content, err := contentBlocks(m.Content, at, false)
		if err != nil {
			return err
		}
		if content == nil {
			content = []reverseBlock{} // "content":[], not null
		}
		t.push("user", []reverseBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &content}})
	default:
		return invalidf("%s.role: must be system, developer, user, assistant or tool, got %q", at, m.Role)
	}
	return nil
}

// parts decodes a message's content: a string (one text part), an array of
// parts, or null / absent (none).
func parts(c jsontext.Value, at string) ([]chat.ContentPart, error) {
	switch c.Kind() {
	case 0, 'n':
		return nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(c, &s, jsontext.AllowInvalidUTF8(true)); err != nil {
			return nil, invalidf("%s.content: %v", at, err)
		}
		return []chat.ContentPart{{Type: "text", Text: s}}, nil
	case '[':
		var ps []chat.ContentPart
		if err := json.Unmarshal(c, &ps, decodeOpts, jsontext.AllowInvalidUTF8(true)); err != nil {
			return nil, invalidf("%s.content: must be a string or an array of content parts", at)
		}
		return ps, nil
	}
	return nil, invalidf("%s.content: must be a string or an array of content parts", at)
}

// contentBlocks reads a message's content as blocks, empty texts left out:
// text parts (and, but in a user message, the output_text and refusal
// parts a client replays), and in a user message images.
func contentBlocks(c jsontext.Value, at string, user bool) ([]reverseBlock, error) {
	ps, err := parts(c, at)
	if err != nil {
		return nil, err
	}
	var out []reverseBlock
	for j, p := range ps {
		switch {
		case p.Type == "text" || p.Type == "input_text" || !user && (p.Type == "output_text" || p.Type == "refusal"):
			if p.Text != "" {
				out = append(out, textBlock(p.Text))
			}
		case user && p.Type == "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return nil, invalidf("%s.content.%d.image_url.url: required", at, j)
			}
			src, err := imageSource(p.ImageURL.URL)
			if err != nil {
				return nil, invalidf("%s.content.%d.image_url.url: %v", at, j, err)
			}
			out = append(out, reverseBlock{Type: "image", Source: src})
		case user:
			return nil, invalidf("%s.content.%d: %q parts can't be sent to this model's backend; send text or image_url", at, j, p.Type)
		default:
			return nil, invalidf("%s.content.%d: a %q part can't go in this message; send text", at, j, p.Type)
		}
	}
	return out, nil
}

// imageSource turns an image URL into an image source: a base64 data URL
// into its media type and data, any other URL as it is.
func imageSource(u string) (*reverseSource, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return &reverseSource{Type: "url", URL: u}, nil
	}
	meta, data, found := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !found || !isBase64 || mediaType == "" {
		return nil, errorString("a data URL must be data:<media type>;base64,<data>")
	}
	return &reverseSource{Type: "base64", MediaType: mediaType, Data: data}, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// stopSequences reads stop: a string or an array of strings.
func stopSequences(v jsontext.Value) ([]string, error) {
	switch v.Kind() {
	case 0, 'n':
		return nil, nil
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, invalidf("stop: %v", err)
		}
		return []string{s}, nil
	}
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, invalidf("stop: must be a string or an array of strings")
	}
	return list, nil
}

// toolChoice maps a Chat tool_choice and parallel_tool_calls.
func toolChoice(v jsontext.Value, parallel *bool) (*messages.ToolChoice, error) {
	var tc *messages.ToolChoice
	switch {
	case v.Kind() == 0 || v.Kind() == 'n':
	case bytes.Equal(v, []byte(`"auto"`)):
		tc = &messages.ToolChoice{Type: "auto"}
	case bytes.Equal(v, []byte(`"required"`)):
		tc = &messages.ToolChoice{Type: "any"}
	case bytes.Equal(v, []byte(`"none"`)):
		tc = &messages.ToolChoice{Type: "none"}
	case v.Kind() == '{':
		var named struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(v, &named, decodeOpts) != nil || named.Function.Name == "" {
			return nil, invalidf(`tool_choice: an object must be {"type":"function","function":{"name":…}}`)
		}
		tc = &messages.ToolChoice{Type: "tool", Name: named.Function.Name}
	default:
		return nil, invalidf(`tool_choice: must be "auto", "required", "none" or a named function`)
	}
	if parallel != nil && !*parallel {
		if tc == nil {
			tc = &messages.ToolChoice{Type: "auto"}
		}
		if tc.Type != "none" {
			tc.DisableParallelToolUse = true
		}
	}
	return tc, nil
}
