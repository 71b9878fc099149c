package translate

// What a Messages client receives of the searches the proxy ran: for each
// call a server_tool_use block (srvtoolu_ id, name web_search, input
// {"query"}) and a web_search_tool_result block (the results with url,
// title, page_age and encrypted_content, or a web_search_tool_result_error
// with its error_code), before the model's answer; the answer's text
// blocks carry web_search_result_location citations of the results they
// name by URL; usage.server_tool_use.web_search_requests counts the
// searches run. SearchStream writes the same as stream events.

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

type searchMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []jsontext.Value `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        messages.Usage   `json:"usage"`
}

type serverToolUseBlock struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	Input struct {
		Query string `json:"query"`
	} `json:"input"`
}

type webSearchResult struct {
	Type             string  `json:"type"`
	URL              string  `json:"url"`
	Title            string  `json:"title"`
	EncryptedContent string  `json:"encrypted_content"`
	PageAge          *string `json:"page_age"`
}

type webSearchError struct {
	Type      string `json:"type"`
	ErrorCode string `json:"error_code"`
}

type webSearchResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   any    `json:"content"`
}

type citation struct {
	Type           string `json:"type"`
	URL            string `json:"url"`
	Title          string `json:"title"`
	EncryptedIndex string `json:"encrypted_index"`
	CitedText      string `json:"cited_text"`
}

type citedText struct {
	Type      string     `json:"type"`
	Text      string     `json:"text"`
	Citations []citation `json:"citations,omitzero"`
}

// searchBlocks are the blocks of one call: its text, the call, its result.
func searchBlocks(c *SearchCall) []jsontext.Value {
	var out []jsontext.Value
	if strings.TrimSpace(c.Text) != "" {
		b, _ := json.Marshal(citedText{Type: messages.BlockText, Text: c.Text})
		out = append(out, b)
	}
	use := serverToolUseBlock{Type: messages.BlockServerToolUse, ID: c.ID, Name: SearchFunction}
	use.Input.Query = c.Query
	b, _ := json.Marshal(use)
	out = append(out, b)
	res := webSearchResultBlock{Type: messages.BlockWebSearchToolResult, ToolUseID: c.ID}
	if c.Code != "" {
		res.Content = webSearchError{Type: "web_search_tool_result_error", ErrorCode: string(c.Code)}
	} else {
		list := make([]webSearchResult, 0, len(c.Results))
		for i := range c.Results {
			r := &c.Results[i]
			item := webSearchResult{Type: "web_search_result", URL: r.URL, Title: r.Title, EncryptedContent: EncryptedContent(r)}
			if r.PageAge != "" {
				item.PageAge = &r.PageAge
			}
			list = append(list, item)
		}
		res.Content = list
	}
	b, _ = json.Marshal(res)
	return append(out, b)
}

// MessagesWithSearches puts the blocks of the calls before the content of
// a Messages answer (the model's last turn, translated), cites the
// results on its text, and sets its usage: usage (the backend's over every
// turn) with server_tool_use counting the searches run.
func MessagesWithSearches(answer []byte, calls []SearchCall, usage messages.Usage) ([]byte, error) {
	var m searchMessage
	if err := json.Unmarshal(answer, &m, decodeOpts); err != nil {
		return nil, fmt.Errorf("translate: not a Messages answer: %w", err)
	}
	content := make([]jsontext.Value, 0, len(m.Content)+2*len(calls))
	for i := range calls {
		content = append(content, searchBlocks(&calls[i])...)
	}
	dropped, toolUses := false, 0
	for _, blk := range m.Content {
		switch toolUseName(blk) {
		case SearchFunction:
			// A search the model asked for after its searches were over
			// (it ignored tool_choice none): not the client's to run.
			dropped = true
			continue
		case "":
		default:
			toolUses++
		}
		content = append(content, cite(blk, calls))
	}
	if dropped && toolUses == 0 && m.StopReason != nil && *m.StopReason == messages.StopToolUse {
		end := messages.StopEndTurn
		m.StopReason = &end
	}
	m.Content = content
	usage.ServerToolUse = &messages.ServerToolUse{WebSearchRequests: searchesRun(calls)}
	m.Usage = usage
	return json.Marshal(m)
}

// toolUseName is the name of a tool_use block, "" for another block.
func toolUseName(blk jsontext.Value) string {
	var b struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(blk, &b, decodeOpts) != nil || b.Type != messages.BlockToolUse {
		return ""
	}
	return b.Name
}

// searchesRun counts the calls that reached the provider: those with
// results, and those the provider failed (unavailable, too_many_requests).
func searchesRun(calls []SearchCall) int {
	n := 0
	for _, c := range calls {
		if c.Code == "" || c.Code == websearch.Unavailable || c.Code == websearch.TooManyRequests {
			n++
		}
	}
	return n
}

// cite adds to a text block a citation of each result whose URL its text
// holds; other blocks are returned as they are.
func cite(blk jsontext.Value, calls []SearchCall) jsontext.Value {
	var t struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(blk, &t, decodeOpts) != nil || t.Type != messages.BlockText {
		return blk
	}
	cites := citations(t.Text, calls)
	if len(cites) == 0 {
		return blk
	}
	b, _ := json.Marshal(citedText{Type: t.Type, Text: t.Text, Citations: cites})
	return b
}

func citations(text string, calls []SearchCall) []citation {
	var out []citation
	seen := map[string]bool{}
	for ci := range calls {
		for ri, r := range calls[ci].Results {
			if r.URL == "" || seen[r.URL] || !strings.Contains(text, r.URL) {
				continue
			}
			seen[r.URL] = true
			cited := r.Snippet
			if cited == "" {
				cited = r.Title
			}
			out = append(out, citation{
				Type:           "web_search_result_location",
				URL:            r.URL,
				Title:          r.Title,
				EncryptedIndex: base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(ci) + ":" + strconv.Itoa(ri))),
				CitedText:      clipRunes(cited, 150),
			})
		}
	}
	return out
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// SearchStream writes a Messages answer with server tool blocks as its
// stream: message_start, the blocks of each search as it ends (Searched),
// then the rest of the answer (Finish): its blocks whole, each as its
// start, its deltas and its stop, then message_delta and message_stop.
// Ping writes a ping. Its methods append to dst and do no I/O.
type SearchStream struct {
	id, alias   string
	inputTokens int
	started     bool
	ended       bool
	blocks      int // blocks written
}

// NewSearchStream returns the stream writer of one answer.
func NewSearchStream(alias, messageID string, inputTokens int) *SearchStream {
	return &SearchStream{id: messageID, alias: alias, inputTokens: inputTokens}
}

// Start writes message_start, once.
func (s *SearchStream) Start(dst []byte) []byte {
	if s.started {
		return dst
	}
	s.started = true
	b, _ := json.Marshal(messages.MessageStartEvent{Type: messages.EventMessageStart, Message: messages.StreamMessage{
		ID: s.id, Type: "message", Role: "assistant", Model: s.alias, Content: []jsontext.Value{},
		Usage: messages.Usage{InputTokens: s.inputTokens, OutputTokens: 1},
	}})
	return appendEvent(dst, messages.EventMessageStart, b)
}

// Ping writes a ping (after message_start).
func (s *SearchStream) Ping(dst []byte) []byte {
	if s.ended {
		return dst
	}
	return AppendPing(s.Start(dst))
}

// Searched writes the blocks of a turn's calls.
func (s *SearchStream) Searched(dst []byte, calls []SearchCall) []byte {
	dst = s.Start(dst)
	for i := range calls {
		for _, blk := range searchBlocks(&calls[i]) {
			dst = s.block(dst, blk)
		}
	}
	return dst
}

// Finish writes the blocks of answer (MessagesWithSearches's output) not
// yet written, message_delta and message_stop.
func (s *SearchStream) Finish(dst []byte, answer []byte) ([]byte, error) {
	var m searchMessage
	if err := json.Unmarshal(answer, &m, decodeOpts); err != nil {
		return dst, err
	}
	dst = s.Start(dst)
	for _, blk := range m.Content[min(s.blocks, len(m.Content)):] {
		dst = s.block(dst, blk)
	}
	stop := messages.StopEndTurn
	if m.StopReason != nil {
		stop = *m.StopReason
	}
	b, _ := json.Marshal(messages.MessageDeltaEvent{Type: messages.EventMessageDelta,
		Delta: messages.MessageDelta{StopReason: &stop, StopSequence: m.StopSequence},
		Usage: messages.DeltaUsage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens,
			CacheReadInputTokens: m.Usage.CacheReadInputTokens, ServerToolUse: m.Usage.ServerToolUse}})
	dst = appendEvent(dst, messages.EventMessageDelta, b)
	dst = appendEvent(dst, messages.EventMessageStop, []byte(`{"type":"message_stop"}`))
	s.ended = true
	return dst, nil
}

// Fail ends the stream with an error event.
func (s *SearchStream) Fail(dst []byte, errType, message string) []byte {
	return failOnce(dst, s.Start, endOnce(&s.ended), func(dst []byte) []byte { return appendErrorEvent(dst, errType, message) })
}

// block writes one whole block as its events.
func (s *SearchStream) block(dst []byte, blk jsontext.Value) []byte {
	var b struct {
		Type      string           `json:"type"`
		Text      string           `json:"text"`
		Thinking  string           `json:"thinking"`
		Signature string           `json:"signature"`
		ID        string           `json:"id"`
		Name      string           `json:"name"`
		Input     jsontext.Value   `json:"input"`
		Citations []jsontext.Value `json:"citations"`
	}
	json.Unmarshal(blk, &b, decodeOpts)
	i := s.blocks
	s.blocks++
	start := func(block any) []byte {
		v, _ := json.Marshal(struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock any    `json:"content_block"`
		}{messages.EventContentBlockStart, i, block})
		return appendEvent(dst, messages.EventContentBlockStart, v)
	}
	delta := func(dst []byte, d any) []byte {
		v, _ := json.Marshal(struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
			Delta any    `json:"delta"`
		}{messages.EventContentBlockDelta, i, d})
		return appendEvent(dst, messages.EventContentBlockDelta, v)
	}
	empty := ""
	switch b.Type {
	case messages.BlockText:
		dst = start(messages.StreamBlock{Type: b.Type, Text: &empty})
		for _, c := range b.Citations {
			dst = delta(dst, messages.BlockDelta{Type: messages.DeltaCitations, Citation: c})
		}
		dst = delta(dst, messages.BlockDelta{Type: messages.DeltaText, Text: &b.Text})
	case messages.BlockThinking:
		dst = start(messages.StreamBlock{Type: b.Type, Thinking: &empty, Signature: &empty})
		dst = delta(dst, messages.BlockDelta{Type: messages.DeltaThinking, Thinking: &b.Thinking})
		if b.Signature != "" {
			dst = delta(dst, messages.BlockDelta{Type: messages.DeltaSignature, Signature: &b.Signature})
		}
	case messages.BlockToolUse, messages.BlockServerToolUse:
		dst = start(messages.StreamBlock{Type: b.Type, ID: b.ID, Name: b.Name, Input: jsontext.Value("{}")})
		in := string(b.Input)
		if in == "" {
			in = "{}"
		}
		dst = delta(dst, messages.BlockDelta{Type: messages.DeltaInputJSON, PartialJSON: &in})
	default: // web_search_tool_result, and any block that comes whole
		dst = start(blk)
	}
	v, _ := json.Marshal(messages.ContentBlockStopEvent{Type: messages.EventContentBlockStop, Index: i})
	return appendEvent(dst, messages.EventContentBlockStop, v)
}

func appendEvent(dst []byte, name string, data []byte) []byte {
	dst = appendEventHead(dst, name)
	dst = append(dst, data...)
	return appendEventEnd(dst)
}
