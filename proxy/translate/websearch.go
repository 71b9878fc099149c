package translate

// Web search as a server tool the proxy runs (server/websearch.go holds the
// loop): the client's web search tool found in its request, the web_search
// function offered to the backend model in its place, the Chat
// conversation that grows by each call and its results, and the text the
// model reads of a search. The blocks and items the client receives are in
// websearch_messages.go and websearch_responses.go.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/websearch"
)

// SearchFunction is the name of the function the backend model is offered
// for a client's web search tool.
const SearchFunction = "web_search"

// searchFunctionTool is that function as a Chat tool.
const searchFunctionTool = `{"type":"function","function":{"name":"web_search","description":"Search the web for current information. Returns the top results (title, URL, date, a snippet of text). Call it when the answer needs information from the web; cite the pages you use by their URL.","parameters":{"type":"object","properties":{"query":{"type":"string","description":"The search query"}},"required":["query"]}}}`

// WebSearchTool is what a client's web search tool asks: Messages
// web_search_* (max_uses, allowed_domains, blocked_domains,
// user_location), Responses web_search (filters.allowed_domains,
// user_location).
type WebSearchTool struct {
	MaxUses        int // 0: the client set no limit
	AllowedDomains []string
	BlockedDomains []string
	Country        string
}

// The marks a body without a web search tool lacks. Without a leading
// quote: bytes.Index anchors on a mark's first byte, and a quote, in every
// JSON string, would make a 54 KB body cost 50 µs instead of 1.
var (
	messagesSearchMark  = []byte(`web_search_`)
	responsesSearchMark = []byte(`web_search`)
)

type userLocation struct {
	Country string `json:"country"`
}

// MessagesWebSearchTool finds a web_search_* server tool among the tools
// of a Messages request body. A body without the mark costs one scan.
func MessagesWebSearchTool(body []byte) (WebSearchTool, bool) {
	if !bytes.Contains(body, messagesSearchMark) {
		return WebSearchTool{}, false
	}
	var req struct {
		Tools []struct {
			Type           string        `json:"type"`
			MaxUses        int           `json:"max_uses"`
			AllowedDomains []string      `json:"allowed_domains"`
			BlockedDomains []string      `json:"blocked_domains"`
			UserLocation   *userLocation `json:"user_location"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req, decodeOpts) != nil {
		return WebSearchTool{}, false
	}
	for _, t := range req.Tools {
		if strings.HasPrefix(t.Type, "web_search_") {
			tool := WebSearchTool{MaxUses: t.MaxUses, AllowedDomains: t.AllowedDomains, BlockedDomains: t.BlockedDomains}
			if t.UserLocation != nil {
				tool.Country = t.UserLocation.Country
			}
			return tool, true
		}
	}
	return WebSearchTool{}, false
}

// ResponsesWebSearchTool finds the hosted web_search tool (or its preview
// name) among the tools of a Responses request body.
func ResponsesWebSearchTool(body []byte) (WebSearchTool, bool) {
	if !bytes.Contains(body, responsesSearchMark) {
		return WebSearchTool{}, false
	}
	var req struct {
		Tools []struct {
			Type    string `json:"type"`
			Filters *struct {
				AllowedDomains []string `json:"allowed_domains"`
			} `json:"filters"`
			UserLocation *userLocation `json:"user_location"`
		} `json:"tools"`
	}
	if json.Unmarshal(body, &req, decodeOpts) != nil {
		return WebSearchTool{}, false
	}
	for _, t := range req.Tools {
		if t.Type == "web_search" || strings.HasPrefix(t.Type, "web_search_preview") {
			var tool WebSearchTool
			if t.Filters != nil {
				tool.AllowedDomains = t.Filters.AllowedDomains
			}
			if t.UserLocation != nil {
				tool.Country = t.UserLocation.Country
			}
			return tool, true
		}
	}
	return WebSearchTool{}, false
}

// SearchCall is one call of the web_search function and what came of it.
type SearchCall struct {
	ID      string // the client's: srvtoolu_… (Messages), ws_… (Responses)
	CallID  string // the backend model's tool call id
	Query   string
	Results []websearch.Result
	Code    websearch.Code // set when the search failed
	// Text is what the model wrote in the turn of the call, before it.
	Text string
}

// NewServerToolUseID returns a Messages server tool call id.
func NewServerToolUseID() string { return "srvtoolu_" + randomHex(12) }

// NewWebSearchCallID returns a Responses web_search_call item id.
func NewWebSearchCallID() string { return "ws_" + randomHex(12) }

// SearchChat is the Chat request of a search loop: the client's request
// translated, with the web_search function among its tools, grown by each
// turn of the model and the results of its searches.
type SearchChat struct {
	members  []jsonMember // top-level members but messages, in order
	messages []jsontext.Value
}

type jsonMember struct {
	name  string
	value jsontext.Value
}

// NewSearchChat starts the loop's request from a translated Chat request
// body (read, not kept): its model becomes alias (each turn is translated
// for the backend that serves it), it is not streamed, and it offers the
// web_search function.
func NewSearchChat(chatBody []byte, alias string) (*SearchChat, error) {
	ms, err := objectMembers(chatBody)
	if err != nil {
		return nil, fmt.Errorf("translate: not a Chat request: %w", err)
	}
	c := &SearchChat{}
	tools := false
	for _, m := range ms {
		switch m.name {
		case "stream", "stream_options", "model":
			continue
		case "messages":
			if err := json.Unmarshal(m.value, &c.messages); err != nil {
				return nil, err
			}
			continue
		case "tools":
			var list []jsontext.Value
			if err := json.Unmarshal(m.value, &list); err != nil {
				return nil, err
			}
			m.value, _ = json.Marshal(append(list, jsontext.Value(searchFunctionTool)))
			tools = true
		}
		c.members = append(c.members, m)
	}
	if !tools {
		c.members = append(c.members, jsonMember{"tools", jsontext.Value("[" + searchFunctionTool + "]")})
	}
	c.members = append(c.members, jsonMember{"model", mustQuote(alias)})
	return c, nil
}

func mustQuote(s string) jsontext.Value {
	v, _ := jsontext.AppendQuote(nil, s)
	return v
}

// Body is the next turn's request, in a bufpool buffer. With last, the
// model may call no tool (tool_choice none): the searches are over and it
// answers with what it has.
func (c *SearchChat) Body(last bool) []byte {
	b := append(bufpool.Get(4096), '{')
	choice := false
	for _, m := range c.members {
		if m.name == "tool_choice" && last {
			continue
		}
		if m.name == "tool_choice" {
			choice = true
		}
		b = jsonquote.Append(b, m.name)
		b = append(append(b, ':'), m.value...)
		b = append(b, ',')
	}
	if last {
		b = append(b, `"tool_choice":"none",`...)
	} else if !choice {
		b = append(b, `"tool_choice":"auto",`...)
	}
	b = append(b, `"stream":false,"messages":[`...)
	for i, m := range c.messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, "]}"...)
}

// Add appends the model's turn (its message as the backend sent it, with
// its tool calls) and the result of each search call in it. A call the
// turn has that calls holds no result for gets an empty result, so every
// call of the history is answered.
func (c *SearchChat) Add(turn *ChatTurn, calls []SearchCall) {
	c.messages = append(c.messages, turn.Message)
	for _, tc := range turn.Calls {
		text := "No result: the call was not run."
		for i := range calls {
			if calls[i].CallID == tc.ID {
				text = SearchResultText(&calls[i])
			}
		}
		msg, _ := json.Marshal(struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", tc.ID, text})
		c.messages = append(c.messages, msg)
	}
}

// ChatTurn is one non-stream Chat answer of the loop's backend.
type ChatTurn struct {
	Message jsontext.Value // the assistant message, for the next turn's history
	Text    string
	Calls   []chat.ToolCall
	Usage   *chat.Usage
}

// ReadChatTurn reads a backend's non-stream Chat answer. Tool calls
// without an id get one, so their results can name them.
func ReadChatTurn(body []byte) (*ChatTurn, error) {
	var resp chat.Response
	if err := json.Unmarshal(body, &resp, decodeOpts); err != nil {
		return nil, fmt.Errorf("translate: backend response is not a chat completion: %w", err)
	}
	t := &ChatTurn{Usage: resp.Usage}
	msg := chat.Message{Role: "assistant"}
	if len(resp.Choices) > 0 {
		m := resp.Choices[0].Message
		if m.Content != nil {
			t.Text = *m.Content
		}
		for i, tc := range m.ToolCalls {
			if tc.ID == "" {
				tc.ID = "call_" + strconv.Itoa(i) + "_" + randomHex(6)
			}
			tc.Type = "function"
			t.Calls = append(t.Calls, tc)
		}
		msg.Content, msg.ToolCalls = m.Content, t.Calls
	}
	if msg.Content == nil {
		empty := ""
		msg.Content = &empty
	}
	var err error
	t.Message, err = json.Marshal(msg)
	return t, err
}

// SearchCalls are the turn's calls of the web_search function; others are
// the client's own tools.
func (t *ChatTurn) SearchCalls() (search, others []chat.ToolCall) {
	for _, c := range t.Calls {
		if c.Function.Name == SearchFunction {
			search = append(search, c)
		} else {
			others = append(others, c)
		}
	}
	return search, others
}

// SearchQuery reads the query of a web_search call's arguments; a call
// without one is invalid_input.
func SearchQuery(arguments string) (string, bool) {
	var in struct {
		Query string `json:"query"`
	}
	if json.Unmarshal([]byte(arguments), &in) != nil {
		return "", false
	}
	q := strings.TrimSpace(in.Query)
	return q, q != ""
}

// SearchResultText is what the model reads of a search: each result
// numbered, with its title, URL, date and snippet; or what went wrong.
func SearchResultText(c *SearchCall) string {
	if c.Code != "" {
		return searchErrorText(c.Code)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Web search results for %q:\n", c.Query)
	if len(c.Results) == 0 {
		b.WriteString("No results.\n")
	}
	for i, r := range c.Results {
		fmt.Fprintf(&b, "\n[%d] %s\nURL: %s\n", i+1, r.Title, r.URL)
		if r.PageAge != "" {
			fmt.Fprintf(&b, "Date: %s\n", r.PageAge)
		}
		if r.Snippet != "" {
			b.WriteString(r.Snippet + "\n")
		}
	}
	b.WriteString("\nAnswer from these results and cite the pages you use by their URL.")
	return b.String()
}

func searchErrorText(code websearch.Code) string {
	switch code {
	case websearch.MaxUsesExceeded:
		return "The web search failed: max_uses_exceeded (no more searches for this request). Answer with the results you have."
	case websearch.QueryTooLong:
		return "The web search failed: query_too_long. Use a shorter query."
	case websearch.TooManyRequests:
		return "The web search failed: too_many_requests (the search provider is rate limiting). Answer with the results you have."
	case websearch.InvalidInput:
		return "The web search failed: invalid_input (the call needs a non-empty \"query\", and a query not searched before)."
	}
	return "The web search failed: unavailable (the search provider did not answer). Answer with what you know, and say that the search failed."
}

// encryptedPrefix marks the proxy's encrypted_content: the result itself,
// readable back when the client sends the history again (it is the
// client's own data; no secret is in it).
const encryptedPrefix = "dgws1."

// EncryptedContent is a result's encrypted_content.
func EncryptedContent(r *websearch.Result) string {
	b, _ := json.Marshal(struct {
		U string `json:"u"`
		T string `json:"t"`
		A string `json:"a,omitzero"`
		S string `json:"s,omitzero"`
	}{r.URL, r.Title, r.PageAge, r.Snippet})
	return encryptedPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ReadEncryptedContent reads back what EncryptedContent wrote; ok is false
// for anything else (another proxy's or the vendor's own).
func ReadEncryptedContent(s string) (r websearch.Result, ok bool) {
	rest, found := strings.CutPrefix(s, encryptedPrefix)
	if !found {
		return r, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return r, false
	}
	var v struct {
		U string `json:"u"`
		T string `json:"t"`
		A string `json:"a"`
		S string `json:"s"`
	}
	if json.Unmarshal(b, &v) != nil {
		return r, false
	}
	return websearch.Result{URL: v.U, Title: v.T, PageAge: v.A, Snippet: v.S}, true
}
