// Package messages holds the Messages API wire format that the coding
// client speaks: requests, responses, stream events and the error shape.
package messages

// Usage counts tokens of a Messages response. It is always present.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	// ServerToolUse counts the server tools the proxy ran (web search);
	// absent when it ran none.
	ServerToolUse *ServerToolUse `json:"server_tool_use,omitzero"`
}

// ServerToolUse counts a message's server tool requests.
type ServerToolUse struct {
	WebSearchRequests int `json:"web_search_requests"`
}
