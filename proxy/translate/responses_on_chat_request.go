package translate

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
	// maxOutputTokens is the request's max_output_tokens, which the
	// response echoes (nil: the request set none).
	maxOutputTokens *int64
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

// ResponsesOnChatRequest translates a Responses request body into a Chat request
// for the backend of its model alias. It is stateless: a request that
// names previous_response_id is refused, the client must send the whole
// conversation (Codex does). The mapping:
//
//   - instructions, and system or developer messages → system messages (a
//     backend without a system role gets them folded into user text, as
//     ChatOnChatRequest does); user and assistant messages → the same roles, their
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
//     reasoning back (one with encrypted_content, another server's, is
//     refused); web_search_call items (the proxy's own searches) are left
//     out and listed in ResponsesCall.Dropped; a compaction item (the
//     server opens the proxy's own into their summary) and a
//     compaction_trigger (the server answers one that is last) are a
//     RequestError marked Compaction, before the model is resolved; any
//     other item type is a RequestError naming input.N: nothing is
//     dropped without a word;
//   - tool_choice, parallel_tool_calls, max_output_tokens (→ max_tokens,
//     clamped), temperature, top_p, reasoning.effort (→ reasoning_effort when
//     the backend supports it), text.format (→ response_format), stream (→
//     stream with usage) pass; store, include, metadata, prompt_cache_key
//     and other members are accepted and ignored.
//
// The body is decoded by responses.ScanRequest, or jsonv2 where it leaves
// it (raw values as slices of the body; readRequest), and the Chat body
// written directly, texts, descriptions and schemas copied as
// the client escaped them.
func ResponsesOnChatRequest(body []byte, resolve Resolver) (BackendRequest, *ResponsesCall, error) {
	var req responses.Request
	target, err := readRequest(body, &req, &req.Model, resolve)
	if err != nil {
		return BackendRequest{}, nil, err
	}
	return responsesBuild(body, &req, target)
}

// responsesBuild is ResponsesOnChatRequest on a decoded request and its
// Target.
func responsesBuild(body []byte, req *responses.Request, target Target) (BackendRequest, *ResponsesCall, error) {
	if req.PreviousResponseID != nil && *req.PreviousResponseID != "" {
		return BackendRequest{}, nil, invalidf("previous_response_id: not supported: the proxy is stateless and keeps no responses. Send the whole conversation in input (and store: false) instead")
	}
	if req.MaxOutputTokens != nil && *req.MaxOutputTokens <= 0 {
		return BackendRequest{}, nil, invalidf("max_output_tokens: must be greater than 0, got %d", *req.MaxOutputTokens)
	}
	var err error
	call := &ResponsesCall{maxOutputTokens: req.MaxOutputTokens}
	b := responsesBuilder{call: call, turns: make([]chatTurn, 0, 8)}
	switch req.Instructions.Kind() {
	case '"':
		if len(req.Instructions) > len(`""`) {
			b.push(chatTurn{role: "system", parts: []turnPart{{v: req.Instructions}}})
		}
	case 'n', jsontext.KindInvalid:
	default:
		return BackendRequest{}, nil, invalidf("instructions: must be a string, got %s", kindName(req.Instructions.Kind()))
	}
	if err := b.input(&req.Input); err != nil {
		return BackendRequest{}, nil, err
	}
	b.flushImages()
	if len(b.turns) == 0 {
		return BackendRequest{}, nil, invalidf("input: must not be empty")
	}
	out := chatBody{turns: b.turns, stream: req.Stream}
	if out.tools, err = b.tools(make([]chatTool, 0, toolCount(req.Tools)), req.Tools, "", "tools"); err != nil {
		return BackendRequest{}, nil, err
	}
	if len(out.tools) > 0 {
		if out.toolChoice, out.toolChoiceName, err = responsesToolChoice(req.ToolChoice); err != nil {
			return BackendRequest{}, nil, err
		}
		out.parallelToolCalls = req.ParallelToolCalls
	}
	for _, f := range [...]struct {
		name string
		v    jsontext.Value
		dst  *jsontext.Value
	}{{"temperature", req.Temperature, &out.temperature}, {"top_p", req.TopP, &out.topP}} {
		switch f.v.Kind() {
		case '0':
			*f.dst = f.v
		case 'n', jsontext.KindInvalid:
		default:
			return BackendRequest{}, nil, invalidf("%s: must be a number, got %s", f.name, kindName(f.v.Kind()))
		}
	}
	if req.User.Kind() == '"' {
		out.user = req.User
	}
	if req.Reasoning != nil && req.Reasoning.Effort != nil { // written if the backend takes it
		out.reasoningEffort = responsesEffort(*req.Reasoning.Effort)
	}
	if req.Text != nil {
		if out.responseFormat, err = responseFormat(req.Text.Format); err != nil {
			return BackendRequest{}, nil, err
		}
	}
	// The rest is the writer's: the prompt's estimate, the output limit,
	// the bytes, in a pooled buffer about the size of the request (the
	// caller gives it back), and the tools offered for text calls.
	breq, err := out.request(target, req.MaxOutputTokens, len(body)+1024)
	if err != nil {
		return BackendRequest{}, nil, err
	}
	return breq, call, nil
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

// imagesNote is the text before the images of tool outputs: a JSON
// string, as the client's texts are kept.
var imagesNote = []byte(`"(images from the tool results above)"`)

func (b *responsesBuilder) flushImages() {
	if len(b.images) == 0 {
		return
	}
	imgs := b.images
	b.images = nil
	b.push(chatTurn{role: "user", parts: append([]turnPart{{v: imagesNote}}, imgs...)})
}

func (b *responsesBuilder) input(in *responses.Input) error {
	if in.Items == nil {
		switch in.Text.Kind() {
		case '"':
			b.push(chatTurn{role: "user", parts: []turnPart{{v: in.Text}}})
			return nil
		case jsontext.KindInvalid, 'n':
			return invalidf("input: required (a string, or an array of input items)")
		default:
			return invalidf("input: must be a string or an array of input items, got %s", kindName(in.Text.Kind()))
		}
	}
	for i := range in.Items {
		if err := b.item(i, &in.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

// callMember checks that call item i (a kind) names its call_id and name,
// and reads its member field (raw), which must be a string.
func callMember(i int, it *responses.Item, kind, field string, raw jsontext.Value) (jsontext.Value, error) {
	if it.CallID == "" || it.Name == "" {
		return nil, invalidf("input.%d: a %s needs call_id and name", i, kind)
	}
	return rawString(raw, "input", i, field)
}

// pushCall adds the assistant's call of item it: its arguments are input
// (JSON), or args (a JSON string holding them, as a function_call sends
// them; the writer reads its text).
func (b *responsesBuilder) pushCall(it *responses.Item, input []byte, args jsontext.Value) {
	b.push(chatTurn{role: "assistant", calls: []toolCall{{id: it.CallID, name: chatToolName(it.Namespace, it.Name), input: input, args: args}}})
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
		raw, err := callMember(i, it, "function_call", "arguments", it.Arguments)
		if err != nil {
			return err
		}
		if raw == nil {
			b.pushCall(it, emptyObject, nil)
		} else {
			b.pushCall(it, nil, raw)
		}
	case responses.ItemCustomToolCall:
		raw, err := callMember(i, it, "custom_tool_call", "input", it.Input)
		if err != nil {
			return err
		}
		if raw == nil {
			raw = emptyString
		}
		args := make([]byte, 0, len(raw)+len(customInputKey)+6)
		args = append(append(append(args, `{"`+customInputKey+`":`...), raw...), '}')
		b.pushCall(it, args, nil)
	case responses.ItemFunctionCallOutput, responses.ItemCustomToolCallOutput:
		if it.CallID == "" {
			return invalidf("input.%d: a %s needs call_id", i, typ)
		}
		parts, err := b.outputParts(&it.Output, i)
		if err != nil {
			return err
		}
		var text []turnPart
		for _, p := range parts {
			if p.image {
				b.images = append(b.images, p)
			} else {
				text = append(text, p)
			}
		}
		b.push(chatTurn{role: "tool", callID: it.CallID, parts: text})
	case responses.ItemReasoning:
		// Dropped: a local backend does not take prior reasoning back. The
		// proxy writes no encrypted_content: one is another server's.
		if len(it.Encrypted) > 0 && it.Encrypted.Kind() != 'n' && string(it.Encrypted) != `""` {
			return invalidf("input.%d: a reasoning item with encrypted_content the proxy did not write (it writes none): it comes from another server and no backend here can read it; leave it out (or start a new conversation)", i)
		}
	case responses.ItemWebSearchCall:
		// The record of a search the proxy ran (search_settings): its
		// results reached the model then, and the answer follows.
		b.call.Dropped = append(b.call.Dropped, "input item "+typ)
	default:
		return invalidf("input.%d.type: unknown input item type %q: the proxy translates message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning, web_search_call and compaction items, and drops nothing without a word", i, typ)
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
	switch {
	case it.Content.Parts != nil:
		for j := range it.Content.Parts {
			p, ok, err := b.contentPart(&it.Content.Parts[j], i, j)
			if err != nil {
				return err
			}
			if ok {
				parts = append(parts, p)
			}
		}
	case it.Content.Text.Kind() == '"':
		parts = append(parts, turnPart{v: it.Content.Text})
	default:
		return invalidf("input.%d.content: must be a string or an array of content parts", i)
	}
	if len(parts) == 0 && role != "assistant" {
		return nil
	}
	if role != "user" {
		for _, p := range parts {
			if p.image {
				return invalidf("input.%d.content: images are accepted in user messages only", i)
			}
		}
	}
	b.push(chatTurn{role: role, parts: parts})
	return nil
}

func (b *responsesBuilder) contentPart(p *responses.Part, i, j int) (turnPart, bool, error) {
	switch p.Type {
	case "input_text", "output_text", "text", "summary_text", "reasoning_text":
		switch p.Text.Kind() {
		case '"':
			return turnPart{v: p.Text}, len(p.Text) > len(`""`), nil
		case 'n', jsontext.KindInvalid:
			return turnPart{}, false, nil
		}
		return turnPart{}, false, invalidf("input.%d.content.%d.text: must be a string, got %s", i, j, kindName(p.Text.Kind()))
	case "refusal":
		return turnPart{s: p.Refusal}, p.Refusal != "", nil
	case "input_image":
		if p.ImageURL == "" {
			return turnPart{}, false, invalidf("input.%d.content.%d: an input_image needs image_url (an https or data: URL); file_id is not supported by the backend", i, j)
		}
		return turnPart{s: p.ImageURL, image: true}, true, nil
	case "input_file":
		return turnPart{}, false, invalidf("input.%d.content.%d: input_file is not supported: the backend reads text and images only", i, j)
	}
	return turnPart{}, false, nil
}

// outputParts reads the output of a tool call item: a string, or a list of
// input_text / input_image parts.
func (b *responsesBuilder) outputParts(c *responses.Content, i int) ([]turnPart, error) {
	switch {
	case c.Parts != nil:
		var out []turnPart
		for j := range c.Parts {
			p, ok, err := b.contentPart(&c.Parts[j], i, j)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, p)
			}
		}
		return out, nil
	case c.Text.Kind() == '"':
		return []turnPart{{v: c.Text}}, nil
	case c.Text == nil:
		return nil, nil
	}
	return nil, invalidf("input.%d.output: must be a string or an array of content parts", i)
}

// toolCount is the number of tools in tools and in its namespaces.
func toolCount(tools []responses.Tool) int {
	n := len(tools)
	for i := range tools {
		n += toolCount(tools[i].Tools)
	}
	return n
}

// tools appends the request's tools to out as Chat functions; where names
// the list in errors.
func (b *responsesBuilder) tools(out []chatTool, tools []responses.Tool, namespace, where string) ([]chatTool, error) {
	for i := range tools {
		t := &tools[i]
		switch t.Type {
		case "function", "custom":
			if t.Name == "" {
				return nil, invalidf("%s.%d.name: required", where, i)
			}
			name := chatToolName(namespace, t.Name)
			if namespace != "" {
				if b.call.inSpace == nil {
					b.call.inSpace = map[string][2]string{}
				}
				b.call.inSpace[name] = [2]string{namespace, t.Name}
			}
			desc, err := rawString(t.Description, where, i, "description")
			if err != nil {
				return nil, err
			}
			def := chatTool{name: name, parameters: t.Parameters}
			if len(desc) > len(`""`) {
				def.desc = desc
			}
			if t.Type == "custom" {
				if b.call.custom == nil {
					b.call.custom = map[string]bool{}
				}
				b.call.custom[name] = true
				def.parameters = customParameters
				if f := t.Format; f != nil && f.Type == "grammar" {
					grammar, err := rawString(f.Definition, where, i, "format.definition")
					if err != nil {
						return nil, err
					}
					if len(grammar) > len(`""`) {
						def.grammarNote = "\n\nThe input is free text (not JSON) in this " + f.Syntax + " grammar:\n"
						def.grammar = grammar
					}
				}
			} else if def.parameters.Kind() != '{' {
				def.parameters = emptyParameters
			}
			out = append(out, def)
		case "namespace":
			if t.Name == "" {
				return nil, invalidf("%s.%d.name: required", where, i)
			}
			var err error
			if out, err = b.tools(out, t.Tools, t.Name, "tools"); err != nil {
				// The path of the list in the error, written only then.
				return nil, prefixed(where+"."+strconv.Itoa(i), err)
			}
		default:
			b.call.Dropped = append(b.call.Dropped, "tool "+t.Type)
		}
	}
	return out, nil
}

var (
	emptyString      = jsontext.Value(`""`)
	customParameters = jsontext.Value(`{"type":"object","properties":{"input":{"type":"string","description":"The tool's raw input, as free text."}},"required":["input"]}`)
	emptyParameters  = jsontext.Value(`{"type":"object","properties":{}}`)
)

// responsesToolChoice maps tool_choice: "auto", "none", "required" pass;
// {"type":"function"|"custom","name"} names a function (name, for the
// writer to write); allowed_tools keeps its mode; a hosted tool's choice
// becomes "auto".
func responsesToolChoice(v jsontext.Value) (choice jsontext.Value, name string, err error) {
	switch v.Kind() {
	case jsontext.KindInvalid, 'n':
		return nil, "", nil
	case '"':
		switch string(v) {
		case `"auto"`, `"none"`, `"required"`:
			return v, "", nil
		}
		return nil, "", invalidf("tool_choice: must be \"auto\", \"none\", \"required\" or an object, got %s", v)
	case '{':
		var tc struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
			Mode      string `json:"mode"`
		}
		if err := json.Unmarshal(v, &tc); err != nil {
			return nil, "", prefixed("tool_choice", decodeError(err))
		}
		switch tc.Type {
		case "function", "custom":
			if tc.Name == "" {
				return nil, "", invalidf("tool_choice.name: required when tool_choice.type is %q", tc.Type)
			}
			return nil, chatToolName(tc.Namespace, tc.Name), nil
		case "allowed_tools":
			if tc.Mode == "required" {
				return jsontext.Value(`"required"`), "", nil
			}
		}
		return jsontext.Value(`"auto"`), "", nil
	}
	return nil, "", invalidf("tool_choice: must be a string or an object, got %s", kindName(v.Kind()))
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

// rawString is a raw value that must be a JSON string, member field of
// element i of list: it reports the string (quoted) when it is one, nil
// for null or absent, and an error naming list.i.field for another kind
// (the path is written only then: most requests have no error to word).
func rawString(v jsontext.Value, list string, i int, field string) (jsontext.Value, error) {
	switch v.Kind() {
	case '"':
		return v, nil
	case 'n', jsontext.KindInvalid:
		return nil, nil
	}
	return nil, invalidf("%s.%d.%s: must be a string, got %s", list, i, field, kindName(v.Kind()))
}

// prefixed puts where in front of a decode error's path.
func prefixed(where string, err error) error {
	if re, ok := err.(*RequestError); ok {
		return &RequestError{Msg: where + "." + re.Msg}
	}
	return err
}
