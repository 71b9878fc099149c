package translate

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// ResponsesCall is what the translation of a Responses answer needs to
// know of its request: which Chat function names stand for custom tools or
// for tools of a namespace. It also lists what the request offered that no
// Chat backend can run (hosted tools, item types), for the caller to log.
type ResponsesCall struct {
	custom  map[string]bool      // Chat function name → a custom (free-form) tool
	inSpace map[string][2]string // Chat function name → namespace, tool name
	Dropped []string             // hosted tool types and input item types left out
}

// callName maps a Chat function name back to the Responses tool it stands
// for: its namespace (or ""), its name, and whether it is a custom tool.
func (c *ResponsesCall) callName(chatName string) (namespace, name string, custom bool) {
	if c == nil {
		return "", chatName, false
	}
	name = chatName
	if ns, ok := c.inSpace[chatName]; ok {
		namespace, name = ns[0], ns[1]
	}
	return namespace, name, c.custom[chatName]
}

// namespaceSep joins a namespace and a tool name into one Chat function
// name: multi_agent_v1 + close_agent → multi_agent_v1__close_agent.
const namespaceSep = "__"

func chatToolName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + namespaceSep + name
}

// customInputKey is the one string parameter of the Chat function that
// stands for a custom (free-form) tool such as Codex's apply_patch.
const customInputKey = "input"

// ResponsesToChat translates a Responses request body into a Chat request
// for the backend of its model alias. It is stateless: a request that
// names previous_response_id is refused, the client must send the whole
// conversation (Codex does). The mapping:
//
//   - instructions, and system or developer messages → system messages (a
//     backend without a system role gets them folded into user text, as
//     ChatToChat does); user and assistant messages → the same roles, their
//     input_text / output_text parts as text, input_image as image_url parts;
//     adjacent messages of one role are merged so roles alternate;
//   - function_call items → the assistant's tool_calls (consecutive calls
//     join one assistant message), function_call_output → tool messages
//     (images in an output go in a user message after them);
//   - custom tools (free-form input, Codex's apply_patch) → a function with
//     one string parameter "input", the grammar added to its description;
//     custom_tool_call / _output items → tool calls with {"input": …} and
//     tool messages; tools of a namespace → functions named
//     namespace__name; hosted tools (web_search, …) are left out and listed
//     in ResponsesCall.Dropped;
//   - reasoning items are dropped: local backends do not take prior
//     reasoning back;
//   - tool_choice, parallel_tool_calls, max_output_tokens (→ max_tokens,
//     clamped), temperature, top_p, reasoning.effort (→ reasoning_effort when
//     the backend supports it), text.format (→ response_format), stream (→
//     stream with usage) pass; store, include, metadata, prompt_cache_key
//     and other members are accepted and ignored.
func ResponsesToChat(body []byte, resolve Resolver) (BackendRequest, *ResponsesCall, error) {
	var req responses.Request
	if err := json.Unmarshal(body, &req, decodeOpts, aliasRaw); err != nil {
		return BackendRequest{}, nil, decodeError(err)
	}
	if req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
		return BackendRequest{}, nil, invalidf("previous_response_id: not supported: the proxy is stateless and keeps no responses. Send the whole conversation in input (and store: false) instead")
	}
	if req.Model == "" {
		return BackendRequest{}, nil, invalidf("model: required (a string naming a configured model)")
	}
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens <= 0 {
		return BackendRequest{}, nil, invalidf("max_output_tokens: must be greater than 0, got %d", *req.MaxOutputTokens)
	}
	target, err := resolveTarget(resolve, req.Model)
	if err != nil {
		return BackendRequest{}, nil, err
	}
	call := &ResponsesCall{}
	b := responsesBuilder{call: call}
	switch req.Instructions.Kind() {
	case '"':
		if len(req.Instructions) > len(`""`) {
			b.push(chatTurn{role: "system", parts: []turnPart{{text: req.Instructions}}})
		}
	case 'n', jsontext.KindInvalid:
	default:
		return BackendRequest{}, nil, invalidf("instructions: must be a string, got %s", kindName(req.Instructions.Kind()))
	}
	if err := b.input(req.Input); err != nil {
		return BackendRequest{}, nil, err
	}
	b.flushImages()
	if len(b.turns) == 0 {
		return BackendRequest{}, nil, invalidf("input: must not be empty")
	}
	out := chatRequestOut{Model: req.Model, Stream: req.Stream, MaxTokens: req.MaxOutputTokens}
	for i := range b.turns {
		out.Messages = append(out.Messages, b.turns[i].encode())
	}
	if out.Tools, err = b.tools(req.Tools, ""); err != nil {
		return BackendRequest{}, nil, err
	}
	if len(out.Tools) > 0 {
		if out.ToolChoice, err = responsesToolChoice(req.ToolChoice); err != nil {
			return BackendRequest{}, nil, err
		}
		out.ParallelToolCalls = req.ParallelToolCalls
	}
	for _, f := range [...]struct {
		name string
		v    jsontext.Value
		dst  *jsontext.Value
	}{{"temperature", req.Temperature, &out.Temperature}, {"top_p", req.TopP, &out.TopP}} {
		switch f.v.Kind() {
		case '0':
			*f.dst = f.v
		case 'n', jsontext.KindInvalid:
		default:
			return BackendRequest{}, nil, invalidf("%s: must be a number, got %s", f.name, kindName(f.v.Kind()))
		}
	}
	if req.User.Kind() == '"' {
		out.User = req.User
	}
	if target.SupportsReasoningEffort && req.Reasoning != nil && req.Reasoning.Effort != nil {
		out.ReasoningEffort = responsesEffort(*req.Reasoning.Effort)
	}
	if req.Text != nil {
		if out.ResponseFormat, err = responseFormat(req.Text.Format); err != nil {
			return BackendRequest{}, nil, err
		}
	}
	if req.Stream {
		out.StreamOptions = &chat.StreamOptions{IncludeUsage: true}
	}
	if target.SupportsSystemMessage {
		// Nothing to fold: the body is final once it names the backend
		// model with max_tokens clamped, as ChatToChat would write it.
		out.Model = target.BackendModel
		if limit := int64(target.MaxOutputTokens); limit > 0 && out.MaxTokens != nil && *out.MaxTokens > limit {
			out.MaxTokens = &limit
		}
	}
	// Encoded into a pooled buffer (the caller gives it back), about the
	// size of the request.
	enc := bytes.NewBuffer(bufpool.Get(len(body) + 1024))
	if err := json.MarshalWrite(enc, &out, jsontext.AllowInvalidUTF8(true)); err != nil {
		return BackendRequest{}, nil, invalidf("encoding the backend request: %v", err)
	}
	chatBody := enc.Bytes()
	// An estimate for a stream whose backend never reports usage: four
	// bytes a token, the JSON around the text included.
	estimate := (len(chatBody) + 3) / 4
	if target.SupportsSystemMessage {
		return BackendRequest{Body: chatBody, Target: target, Stream: req.Stream, InputTokens: estimate}, call, nil
	}
	// ChatToChat folds system turns into user text for backends without a
	// system role (and sets the model, clamps max_tokens): one copy of
	// those rules.
	breq, err := ChatToChat(chatBody, func(string) (Target, error) { return target, nil })
	bufpool.Put(chatBody)
	if err != nil {
		return BackendRequest{}, nil, err
	}
	breq.InputTokens = estimate
	return breq, call, nil
}

// chatRequestOut is the Chat request ResponsesToChat builds.
type chatRequestOut struct {
	Model             string              `json:"model"`
	Messages          []chatMessageOut    `json:"messages"`
	Tools             []chat.Tool         `json:"tools,omitzero"`
	ToolChoice        jsontext.Value      `json:"tool_choice,omitzero"`
	ParallelToolCalls *bool               `json:"parallel_tool_calls,omitzero"`
	MaxTokens         *int64              `json:"max_tokens,omitzero"`
	Temperature       jsontext.Value      `json:"temperature,omitzero"`
	TopP              jsontext.Value      `json:"top_p,omitzero"`
	User              jsontext.Value      `json:"user,omitzero"`
	ReasoningEffort   string              `json:"reasoning_effort,omitzero"`
	ResponseFormat    jsontext.Value      `json:"response_format,omitzero"`
	Stream            bool                `json:"stream,omitzero"`
	StreamOptions     *chat.StreamOptions `json:"stream_options,omitzero"`
}

type chatMessageOut struct {
	Role       string          `json:"role"`
	Content    any             `json:"content"` // a string, parts, or nil (null)
	ToolCalls  []chat.ToolCall `json:"tool_calls,omitzero"`
	ToolCallID string          `json:"tool_call_id,omitzero"`
}

// chatTurn is a Chat message under construction.
type chatTurn struct {
	role   string // system, user, assistant, tool
	parts  []turnPart
	calls  []chat.ToolCall
	callID string
}

// turnPart is text, or an image when image is set (a URL or data URL).
// The text is a JSON string as the client wrote it (the decoder has
// checked it, valid UTF-8 included): it goes on to the backend without
// being unquoted and quoted again.
type turnPart struct {
	text  jsontext.Value
	image string
}

func (t *chatTurn) encode() chatMessageOut {
	m := chatMessageOut{Role: t.role, ToolCalls: t.calls, ToolCallID: t.callID}
	images := false
	for _, p := range t.parts {
		images = images || p.image != ""
	}
	switch {
	case len(t.parts) == 0 && t.role == "assistant":
		m.Content = nil
	case !images:
		sep := `\n\n` // escaped, as in a JSON string
		if t.role == "assistant" || t.role == "tool" {
			sep = ""
		}
		if len(t.parts) == 1 {
			m.Content = t.parts[0].text
			break
		}
		// The parts' quoted contents joined: JSON escapes stand alone, so
		// the join of escaped texts is the escaped join.
		n := len(`""`) + len(sep)*(len(t.parts)-1)
		for _, p := range t.parts {
			n += len(p.text) - len(`""`)
		}
		joined := make([]byte, 0, n)
		joined = append(joined, '"')
		for i, p := range t.parts {
			if i > 0 {
				joined = append(joined, sep...)
			}
			joined = append(joined, p.text[1:len(p.text)-1]...)
		}
		m.Content = jsontext.Value(append(joined, '"'))
	default:
		parts := make([]chat.ContentPart, 0, len(t.parts))
		for _, p := range t.parts {
			if p.image != "" {
				parts = append(parts, chat.ContentPart{Type: "image_url", ImageURL: &chat.ImageURL{URL: p.image}})
			} else {
				var text string
				_ = json.Unmarshal(p.text, &text, jsontext.AllowInvalidUTF8(true))
				parts = append(parts, chat.ContentPart{Type: "text", Text: text})
			}
		}
		m.Content = parts
	}
	return m
}

type responsesBuilder struct {
	call   *ResponsesCall
	turns  []chatTurn
	images []turnPart // images of tool outputs, for a user turn after them
}

// push appends a turn, merging it into the previous one when both are
// system, user, or assistant turns without tool calls after the text.
func (b *responsesBuilder) push(t chatTurn) {
	if t.role != "tool" {
		b.flushImages()
	}
	if n := len(b.turns); n > 0 && t.role != "tool" && b.turns[n-1].role == t.role {
		last := &b.turns[n-1]
		if t.role != "assistant" || len(last.calls) == 0 {
			last.parts = append(last.parts, t.parts...)
			last.calls = append(last.calls, t.calls...)
			return
		}
		if len(t.parts) == 0 { // more calls of the same assistant turn
			last.calls = append(last.calls, t.calls...)
			return
		}
	}
	b.turns = append(b.turns, t)
}

var imagesNote = jsontext.Value(`"(images from the tool results above)"`)

func (b *responsesBuilder) flushImages() {
	if len(b.images) == 0 {
		return
	}
	imgs := b.images
	b.images = nil
	b.push(chatTurn{role: "user", parts: append([]turnPart{{text: imagesNote}}, imgs...)})
}

func (b *responsesBuilder) input(v jsontext.Value) error {
	switch v.Kind() {
	case '"':
		b.push(chatTurn{role: "user", parts: []turnPart{{text: v}}})
		return nil
	case '[':
	case jsontext.KindInvalid, 'n':
		return invalidf("input: required (a string, or an array of input items)")
	default:
		return invalidf("input: must be a string or an array of input items, got %s", kindName(v.Kind()))
	}
	var items []responses.Item
	if err := json.Unmarshal(v, &items, decodeOpts, aliasRaw); err != nil {
		return prefixed("input", decodeError(err))
	}
	for i := range items {
		if err := b.item(i, &items[i]); err != nil {
			return err
		}
	}
	return nil
}

// prefixed puts where in front of a decode error's path.
func prefixed(where string, err error) error {
	if re, ok := err.(*RequestError); ok {
		return &RequestError{Msg: where + "." + re.Msg}
	}
	return err
}

func (b *responsesBuilder) item(i int, it *responses.Item) error {
	typ := it.Type
	if typ == "" && it.Role != "" {
		typ = responses.ItemMessage
	}
	switch typ {
	case responses.ItemMessage:
		return b.message(i, it)
	case responses.ItemFunctionCall:
		if it.CallID == "" || it.Name == "" {
			return invalidf("input.%d: a function_call needs call_id and name", i)
		}
		args := it.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		b.push(chatTurn{role: "assistant", calls: []chat.ToolCall{{ID: it.CallID, Type: "function",
			Function: chat.FunctionCall{Name: chatToolName(it.Namespace, it.Name), Arguments: args}}}})
	case responses.ItemCustomToolCall:
		if it.CallID == "" || it.Name == "" {
			return invalidf("input.%d: a custom_tool_call needs call_id and name", i)
		}
		args := append([]byte(`{"`+customInputKey+`":`), jsonQuote(it.Input)...)
		args = append(args, '}')
		b.push(chatTurn{role: "assistant", calls: []chat.ToolCall{{ID: it.CallID, Type: "function",
			Function: chat.FunctionCall{Name: chatToolName(it.Namespace, it.Name), Arguments: string(args)}}}})
	case responses.ItemFunctionCallOutput, responses.ItemCustomToolCallOutput:
		if it.CallID == "" {
			return invalidf("input.%d: a %s needs call_id", i, typ)
		}
		parts, err := outputParts(it.Output, i)
		if err != nil {
			return err
		}
		var text []turnPart
		for _, p := range parts {
			if p.image != "" {
				b.images = append(b.images, p)
			} else {
				text = append(text, p)
			}
		}
		b.push(chatTurn{role: "tool", callID: it.CallID, parts: text})
	case responses.ItemReasoning:
		// Dropped: a local backend does not take prior reasoning back.
	default:
		b.call.Dropped = append(b.call.Dropped, "input item "+typ)
	}
	return nil
}

func (b *responsesBuilder) message(i int, it *responses.Item) error {
	role := it.Role
	switch role {
	case "system", "developer":
		role = "system"
	case "user", "assistant":
	default:
		return invalidf("input.%d.role: must be user, assistant, system or developer, got %q", i, it.Role)
	}
	var parts []turnPart
	switch it.Content.Kind() {
	case '"':
		parts = append(parts, turnPart{text: it.Content})
	case '[':
		var ps []responses.Part
		if err := json.Unmarshal(it.Content, &ps, decodeOpts, aliasRaw); err != nil {
			return prefixed("input."+strconv.Itoa(i)+".content", decodeError(err))
		}
		for j := range ps {
			p, ok, err := contentPart(&ps[j], i, j)
			if err != nil {
				return err
			}
			if ok {
				parts = append(parts, p)
			}
		}
	default:
		return invalidf("input.%d.content: must be a string or an array of content parts", i)
	}
	if len(parts) == 0 && role != "assistant" {
		return nil
	}
	if role != "user" {
		for _, p := range parts {
			if p.image != "" {
				return invalidf("input.%d.content: images are accepted in user messages only", i)
			}
		}
	}
	b.push(chatTurn{role: role, parts: parts})
	return nil
}

func contentPart(p *responses.Part, i, j int) (turnPart, bool, error) {
	switch p.Type {
	case "input_text", "output_text", "text", "summary_text", "reasoning_text":
		switch p.Text.Kind() {
		case '"':
			return turnPart{text: p.Text}, len(p.Text) > len(`""`), nil
		case 'n', jsontext.KindInvalid:
			return turnPart{}, false, nil
		}
		return turnPart{}, false, invalidf("input.%d.content.%d.text: must be a string, got %s", i, j, kindName(p.Text.Kind()))
	case "refusal":
		return turnPart{text: jsonQuote(p.Refusal)}, p.Refusal != "", nil
	case "input_image":
		if p.ImageURL == "" {
			return turnPart{}, false, invalidf("input.%d.content.%d: an input_image needs image_url (an https or data: URL); file_id is not supported by the backend", i, j)
		}
		return turnPart{image: p.ImageURL}, true, nil
	case "input_file":
		return turnPart{}, false, invalidf("input.%d.content.%d: input_file is not supported: the backend reads text and images only", i, j)
	}
	return turnPart{}, false, nil
}

// outputParts reads the output of a tool call item: a string, or a list of
// input_text / input_image parts.
func outputParts(v jsontext.Value, i int) ([]turnPart, error) {
	switch v.Kind() {
	case '"':
		return []turnPart{{text: v}}, nil
	case '[':
		var ps []responses.Part
		if err := json.Unmarshal(v, &ps, decodeOpts, aliasRaw); err != nil {
			return nil, prefixed("input."+strconv.Itoa(i)+".output", decodeError(err))
		}
		var out []turnPart
		for j := range ps {
			p, ok, err := contentPart(&ps[j], i, j)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, p)
			}
		}
		return out, nil
	case 'n', jsontext.KindInvalid:
		return nil, nil
	}
	return nil, invalidf("input.%d.output: must be a string or an array of content parts", i)
}

// tools maps the request's tools to Chat functions.
func (b *responsesBuilder) tools(tools []responses.Tool, namespace string) ([]chat.Tool, error) {
	var out []chat.Tool
	for i := range tools {
		t := &tools[i]
		switch t.Type {
		case "function", "custom":
			if t.Name == "" {
				return nil, invalidf("tools.%d.name: required", i)
			}
			name := chatToolName(namespace, t.Name)
			if namespace != "" {
				if b.call.inSpace == nil {
					b.call.inSpace = map[string][2]string{}
				}
				b.call.inSpace[name] = [2]string{namespace, t.Name}
			}
			def := chat.FunctionDef{Name: name, Description: t.Description, Parameters: t.Parameters}
			if t.Type == "custom" {
				if b.call.custom == nil {
					b.call.custom = map[string]bool{}
				}
				b.call.custom[name] = true
				def.Parameters = customParameters
				if f := t.Format; f != nil && f.Type == "grammar" && f.Definition != "" {
					def.Description += "\n\nThe input is free text (not JSON) in this " + f.Syntax + " grammar:\n" + f.Definition
				}
			} else if def.Parameters.Kind() != '{' {
				def.Parameters = emptyParameters
			}
			out = append(out, chat.Tool{Type: "function", Function: def})
		case "namespace":
			if t.Name == "" {
				return nil, invalidf("tools.%d.name: required", i)
			}
			inner, err := b.tools(t.Tools, t.Name)
			if err != nil {
				return nil, err
			}
			out = append(out, inner...)
		default:
			b.call.Dropped = append(b.call.Dropped, "tool "+t.Type)
		}
	}
	return out, nil
}

var (
	customParameters = jsontext.Value(`{"type":"object","properties":{"input":{"type":"string","description":"The tool's raw input, as free text."}},"required":["input"]}`)
	emptyParameters  = jsontext.Value(`{"type":"object","properties":{}}`)
)

// responsesToolChoice maps tool_choice: "auto", "none", "required" pass;
// {"type":"function"|"custom","name"} names a function; allowed_tools
// keeps its mode; a hosted tool's choice becomes "auto".
func responsesToolChoice(v jsontext.Value) (jsontext.Value, error) {
	switch v.Kind() {
	case jsontext.KindInvalid, 'n':
		return nil, nil
	case '"':
		switch string(v) {
		case `"auto"`, `"none"`, `"required"`:
			return v, nil
		}
		return nil, invalidf("tool_choice: must be \"auto\", \"none\", \"required\" or an object, got %s", v)
	case '{':
		var tc struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
			Mode      string `json:"mode"`
		}
		if err := json.Unmarshal(v, &tc); err != nil {
			return nil, prefixed("tool_choice", decodeError(err))
		}
		switch tc.Type {
		case "function", "custom":
			if tc.Name == "" {
				return nil, invalidf("tool_choice.name: required when tool_choice.type is %q", tc.Type)
			}
			out := append([]byte(`{"type":"function","function":{"name":`), jsonQuote(chatToolName(tc.Namespace, tc.Name))...)
			return append(out, "}}"...), nil
		case "allowed_tools":
			if tc.Mode == "required" {
				return jsontext.Value(`"required"`), nil
			}
		}
		return jsontext.Value(`"auto"`), nil
	}
	return nil, invalidf("tool_choice: must be a string or an object, got %s", kindName(v.Kind()))
}

// responsesEffort maps reasoning.effort to Chat's reasoning_effort (low,
// medium, high): minimal → low, xhigh → high, none → left out.
func responsesEffort(e string) string {
	switch e {
	case "low", "medium", "high":
		return e
	case "minimal":
		return "low"
	case "xhigh", "max":
		return "high"
	}
	return ""
}

// responseFormat maps text.format to Chat's response_format.
func responseFormat(v jsontext.Value) (jsontext.Value, error) {
	if v.Kind() != '{' {
		return nil, nil
	}
	var f struct {
		Type        string         `json:"type"`
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Schema      jsontext.Value `json:"schema"`
		Strict      *bool          `json:"strict"`
	}
	if err := json.Unmarshal(v, &f, aliasRaw); err != nil {
		return nil, prefixed("text.format", decodeError(err))
	}
	switch f.Type {
	case "json_object":
		return jsontext.Value(`{"type":"json_object"}`), nil
	case "json_schema":
		if f.Schema.Kind() != '{' {
			return nil, invalidf("text.format.schema: required (a JSON Schema object) when text.format.type is json_schema")
		}
		if f.Name == "" {
			f.Name = "response"
		}
		type schemaOut struct {
			Name        string         `json:"name"`
			Description string         `json:"description,omitzero"`
			Schema      jsontext.Value `json:"schema"`
			Strict      *bool          `json:"strict,omitzero"`
		}
		out, err := json.Marshal(struct {
			Type       string    `json:"type"`
			JSONSchema schemaOut `json:"json_schema"`
		}{"json_schema", schemaOut{f.Name, f.Description, f.Schema, f.Strict}})
		if err != nil {
			return nil, invalidf("text.format: %v", err)
		}
		return out, nil
	}
	return nil, nil
}

// jsonQuote quotes s as a JSON string (invalid UTF-8 becomes U+FFFD).
func jsonQuote(s string) []byte { return appendQuoted(nil, s) }
