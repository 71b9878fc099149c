// Package messages holds the Messages API wire format that the coding
// client speaks: requests, responses, stream events and the error shape.
package messages

// Usage counts tokens of a Messages response. It is always present.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}
