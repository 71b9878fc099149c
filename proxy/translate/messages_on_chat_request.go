package translate

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// MessagesOnChatRequest translates a Messages request body into a Chat request for
// the backend. It decodes the body, calls resolve(model) and builds the Chat
// body for that Target. A nil resolve routes every alias to a
// backend model of the same name that supports system messages.
//
// Text, tool schemas, descriptions and tool inputs are copied as raw JSON:
// a JSON string of the Messages body is a valid JSON string in the Chat
// body, and strings that must be joined (system blocks, tool result parts,
// folded system turns) are joined in their escaped form.
func MessagesOnChatRequest(body []byte, resolve Resolver) (BackendRequest, error) {
	var req messages.Request
	target, err := readRequest(body, &req, &req.Model, resolve)
	if err != nil {
		return BackendRequest{}, err
	}
	if err := validate(&req); err != nil {
		return BackendRequest{}, err
	}
	b := builder{target: target, msgs: make([]chatMsg, 0, len(req.Messages)+2), tools: req.Tools, est: promptEstimate{memo: target.Memo}}
	if !req.System.IsZero() {
		b.est.message()
	}
	if err := b.system(req.System); err != nil {
		return BackendRequest{}, err
	}
	for i := range req.Messages {
		if err := b.message(i, &req.Messages[i]); err != nil {
			return BackendRequest{}, err
		}
	}
	b.estimateTools(req.Tools)
	prompt := b.est.total()
	if b.maxTokens, err = fitOutput(*req.MaxTokens, prompt, target); err != nil {
		return BackendRequest{}, err
	}
	return BackendRequest{
		Body:        b.encode(&req, bufpool.Get(len(body)+1024)),
		Target:      target,
		Stream:      req.Stream,
		InputTokens: prompt,
		MaxTokens:   int(b.maxTokens),
		Tools:       offeredTools(target, req.Tools, messagesToolOf),
	}, nil
}

// validate checks the members of a Messages request that the builder does
// not read (the messages are checked as they are built), so that encode
// only writes.
func validate(req *messages.Request) error {
	if req.MaxTokens == nil {
		return invalidf("max_tokens: required")
	}
	if *req.MaxTokens <= 0 {
		return invalidf("max_tokens: must be at least 1, got %d", *req.MaxTokens)
	}
	if len(req.Messages) == 0 {
		return invalidf("messages: must not be empty")
	}
	functionTools := 0
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.InputSchema.Kind() != '{' {
			continue // server tools, and tools without a schema: not sent
		}
		functionTools++
		if t.Name == "" {
			return invalidf("tools.%d.name: required", i)
		}
		if k := t.Description.Kind(); k != '"' && k != 'n' && k != jsontext.KindInvalid {
			return invalidf("tools.%d.description: must be a string", i)
		}
	}
	if tc := req.ToolChoice; tc != nil && functionTools > 0 {
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if tc.Name == "" {
				return invalidf("tool_choice.name: required when tool_choice.type is \"tool\"")
			}
		default:
			return invalidf("tool_choice.type: must be \"auto\", \"any\", \"tool\" or \"none\", got %q", tc.Type)
		}
	}
	for _, f := range [...]struct {
		name string
		v    jsontext.Value
	}{{"temperature", req.Temperature}, {"top_p", req.TopP}, {"top_k", req.TopK}} {
		if k := f.v.Kind(); k != '0' && k != 'n' && k != jsontext.KindInvalid {
			return invalidf("%s: must be a number, got %s", f.name, kindName(k))
		}
	}
	if md := req.Metadata; md != nil {
		if k := md.UserID.Kind(); k != '"' && k != 'n' && k != jsontext.KindInvalid {
			return invalidf("metadata.user_id: must be a string")
		}
	}
	return nil
}

type builder struct {
	target    Target
	tools     []messages.Tool // the request's, for tool_reference
	msgs      []chatMsg
	toolIDs   map[string]struct{}
	est       promptEstimate // of what the backend gets, counted as it is built
	maxTokens int64          // what encode writes
}

// push appends m, merging it into the previous message when both have the
// same role (except tool messages), so roles alternate. For a backend
// without a system role each system message stays alone: the writer wraps
// each in <system>…</system> and folds it into the user text beside it.
func (b *builder) push(m chatMsg) {
	fold := m.role == "system" && !b.target.SupportsSystemMessage
	if n := len(b.msgs); n > 0 && m.role != "tool" && !fold && b.msgs[n-1].role == m.role {
		last := &b.msgs[n-1]
		if last.str && m.str {
			p := &last.parts[0]
			p.segs = append(append(p.segs, sepPara), m.parts[0].segs...)
		} else {
			last.str = false
			last.parts = append(last.parts, m.parts...)
		}
		last.calls = append(last.calls, m.calls...)
		return
	}
	b.msgs = append(b.msgs, m)
}

// pushSystem adds system text at this point of the conversation (the
// writer folds it into user text for a backend without a system role).
func (b *builder) pushSystem(segs [][]byte) {
	b.push(chatMsg{role: "system", str: true, parts: []part{{segs: segs}}})
}

// system handles the top-level system prompt: text blocks joined with a
// blank line, the billing-header block (first block only) dropped.
func (b *builder) system(c messages.Content) error {
	if c.Text != nil {
		if c.Text.Kind() != '"' {
			return invalidf("system: must be a string or an array of content blocks")
		}
		if in := inner(c.Text); len(in) > 0 {
			b.est.escaped(in)
			b.pushSystem([][]byte{in})
		}
		return nil
	}
	return b.systemBlocks(c.Blocks, "system", true)
}

// systemBlocks pushes the text blocks of a system prompt joined with a
// blank line; where names the field in errors. With dropBilling, a first
// block holding the client's billing header is dropped: it changes on every
// request and would defeat the backend's prefix cache.
func (b *builder) systemBlocks(blocks []messages.Block, where string, dropBilling bool) error {
	var segs [][]byte
	for i := range blocks {
		blk := &blocks[i]
		if blk.Type != "text" {
			continue
		}
		in, ok := textOf(blk.Text)
		if !ok {
			return invalidf("%s.%d.text: must be a string", where, i)
		}
		if len(in) == 0 || (dropBilling && isBillingBlock(i, blk)) {
			continue
		}
		if len(segs) > 0 {
			segs = append(segs, sepPara)
		}
		segs = append(segs, in)
		b.est.escaped(in)
	}
	if len(segs) > 0 {
		b.pushSystem(segs)
	}
	return nil
}

// message translates messages[i].
func (b *builder) message(i int, m *messages.Message) error {
	b.est.message()
	switch m.Role {
	case "user", "assistant", "system":
	default:
		return invalidf("messages.%d.role: must be \"user\", \"assistant\" or \"system\", got %q", i, m.Role)
	}
	if m.Content.IsZero() {
		return invalidf("messages.%d.content: required", i)
	}
	if m.Content.Text != nil {
		in := inner(m.Content.Text)
		if len(in) == 0 {
			return nil
		}
		b.est.escaped(in)
		if m.Role == "system" {
			b.pushSystem([][]byte{in})
			return nil
		}
		b.push(chatMsg{role: m.Role, str: true, parts: []part{{segs: [][]byte{in}}}})
		return nil
	}
	switch m.Role {
	case "assistant":
		return b.assistant(i, m.Content.Blocks)
	case "system":
		return b.systemBlocks(m.Content.Blocks, "messages."+strconv.Itoa(i)+".content", false)
	}
	return b.user(i, m.Content.Blocks)
}

func (b *builder) assistant(i int, blocks []messages.Block) error {
	m := chatMsg{role: "assistant"}
	for j := range blocks {
		blk := &blocks[j]
		switch blk.Type {
		case "text":
			var err error
			if m.parts, err = b.textBlock(m.parts, blk, i, j); err != nil {
				return err
			}
		case "tool_use":
			if blk.ID == "" {
				return invalidf("messages.%d.content.%d.id: tool_use requires an id", i, j)
			}
			if blk.Name == "" {
				return invalidf("messages.%d.content.%d.name: tool_use requires a name", i, j)
			}
			input := []byte(blk.Input)
			switch blk.Input.Kind() {
			case '{':
			case 'n', jsontext.KindInvalid:
				input = emptyObject
			default:
				return invalidf("messages.%d.content.%d.input: must be an object, got %s", i, j, kindName(blk.Input.Kind()))
			}
			if b.toolIDs == nil {
				b.toolIDs = make(map[string]struct{})
			}
			b.toolIDs[blk.ID] = struct{}{}
			b.est.toolCall(blk.Name, input)
			m.calls = append(m.calls, toolCall{id: blk.ID, name: blk.Name, input: input})
		case "tool_result":
			return invalidf("messages.%d.content.%d: tool_result blocks belong in user messages", i, j)
		case "server_tool_use":
			// A search the proxy ran: the model sees its call and, from
			// the web_search_tool_result after it, its result.
			if blk.ID == "" || blk.Input.Kind() != '{' {
				continue
			}
			if b.toolIDs == nil {
				b.toolIDs = make(map[string]struct{})
			}
			b.toolIDs[blk.ID] = struct{}{}
			b.est.toolCall(blk.Name, blk.Input)
			m.calls = append(m.calls, toolCall{id: blk.ID, name: SearchFunction, input: blk.Input})
		case "web_search_tool_result":
			if !hasCall(m.calls, blk.ToolUseID) {
				continue // its call is not in this turn: nothing to answer
			}
			b.push(m)
			b.webSearchResult(blk, searchQueryOf(m.calls, blk.ToolUseID))
			m = chatMsg{role: "assistant"}
		}
		// thinking, redacted_thinking, images and unknown blocks: dropped.
	}
	if len(m.parts) == 0 && len(m.calls) == 0 {
		return nil
	}
	b.push(m)
	return nil
}

func hasCall(calls []toolCall, id string) bool {
	for _, c := range calls {
		if c.id == id {
			return true
		}
	}
	return false
}

// searchQueryOf is the query of the web_search call id among calls.
func searchQueryOf(calls []toolCall, id string) string {
	for _, c := range calls {
		if c.id == id {
			q, _ := SearchQuery(string(c.input))
			return q
		}
	}
	return ""
}

// user translates a user turn: its tool results become tool messages first
// (in order), then one user message carries the images of those results
// and the turn's own text and images.
func (b *builder) user(i int, blocks []messages.Block) error {
	var parts, resultImages []part
	for j := range blocks {
		blk := &blocks[j]
		switch blk.Type {
		case "text":
			var err error
			if parts, err = b.textBlock(parts, blk, i, j); err != nil {
				return err
			}
		case "image":
			p, err := b.image(blk.Source, fmt.Sprintf("messages.%d.content.%d", i, j))
			if err != nil {
				return err
			}
			parts = append(parts, p)
		case "document":
			ps, err := b.document(blk.Source, fmt.Sprintf("messages.%d.content.%d", i, j))
			if err != nil {
				return err
			}
			parts = append(parts, ps...)
		case "tool_result":
			imgs, err := b.toolResult(blk, i, j)
			if err != nil {
				return err
			}
			resultImages = append(resultImages, imgs...)
		case "tool_use":
			return invalidf("messages.%d.content.%d: tool_use blocks belong in assistant messages", i, j)
		}
	}
	if len(resultImages) > 0 {
		parts = append(resultImages, parts...)
	}
	if len(parts) > 0 {
		b.push(chatMsg{role: "user", parts: parts})
	}
	return nil
}
