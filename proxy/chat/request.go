package chat

import "github.com/go-json-experiment/json/jsontext"

// Request is a Chat Completions request body. Members the proxy does not
// name are collected in Rest (an embedded fallback: `json:",embed"`), so a
// decode and re-encode keeps them.
// Content, tool_choice and similar union-typed members stay raw JSON.
type Request struct {
	Model               string         `json:"model"`
	Messages            []RequestMsg   `json:"messages"`
	Tools               []Tool         `json:"tools,omitzero"`
	ToolChoice          jsontext.Value `json:"tool_choice,omitzero"` // "auto" | "required" | "none" | {"type":"function",...}
	ParallelToolCalls   *bool          `json:"parallel_tool_calls,omitzero"`
	MaxTokens           *int64         `json:"max_tokens,omitzero"`
	MaxCompletionTokens *int64         `json:"max_completion_tokens,omitzero"`
	Temperature         jsontext.Value `json:"temperature,omitzero"`
	TopP                jsontext.Value `json:"top_p,omitzero"`
	TopK                jsontext.Value `json:"top_k,omitzero"` // not in the format; vLLM, llama.cpp and others read it
	Stop                jsontext.Value `json:"stop,omitzero"`  // a string or an array of strings
	User                jsontext.Value `json:"user,omitzero"`
	ReasoningEffort     string         `json:"reasoning_effort,omitzero"`
	Stream              bool           `json:"stream,omitzero"`
	StreamOptions       *StreamOptions `json:"stream_options,omitzero"`
	Rest                jsontext.Value `json:",embed"`
}

// RequestMsg is one message of a Request. Role is "system", "developer",
// "user", "assistant" or "tool". Content is a JSON string, an array of
// content parts, or null (an assistant message with tool calls).
type RequestMsg struct {
	Role       string         `json:"role"`
	Content    jsontext.Value `json:"content,omitzero"`
	ToolCalls  []ToolCall     `json:"tool_calls,omitzero"`
	ToolCallID string         `json:"tool_call_id,omitzero"`
	Rest       jsontext.Value `json:",embed"`
}

// ContentPart is one element of an array-shaped message content: a "text"
// part or an "image_url" part (a part of another type keeps its other
// members in Rest).
type ContentPart struct {
	Type     string         `json:"type"`
	Text     string         `json:"text,omitzero"`
	ImageURL *ImageURL      `json:"image_url,omitzero"`
	Rest     jsontext.Value `json:",embed"`
}

// ImageURL is the image of an image_url part: an http(s) URL or a data URL.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitzero"`
}

// Tool is a tool the model may call; Type is "function".
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef describes a function tool. Parameters is a JSON Schema, kept
// raw.
type FunctionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitzero"`
	Parameters  jsontext.Value `json:"parameters,omitzero"`
}

// StreamOptions asks a streaming backend for extras; IncludeUsage adds a
// last chunk that carries usage.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}
