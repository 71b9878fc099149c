package messages

import (
	"errors"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Request is the body of POST /v1/messages, and without max_tokens the body
// of POST /v1/messages/count_tokens.
//
// Only what a translator must look at is decoded into Go values; text,
// tool schemas, descriptions and tool inputs stay raw JSON
// (jsontext.Value) so they can be copied to the backend request without
// an unescape/escape round trip. A raw text is a JSON string, quotes
// included. Members not listed here (context_management, cache_control,
// betas…) are skipped on decode.
type Request struct {
	Model         string         `json:"model"`
	Messages      []Message      `json:"messages"`
	System        Content        `json:"system,omitzero"`
	MaxTokens     *int64         `json:"max_tokens,omitzero"`
	Tools         []Tool         `json:"tools,omitzero"`
	ToolChoice    *ToolChoice    `json:"tool_choice,omitzero"`
	StopSequences []string       `json:"stop_sequences,omitzero"`
	Temperature   jsontext.Value `json:"temperature,omitzero"` // a number, kept as written
	TopP          jsontext.Value `json:"top_p,omitzero"`
	TopK          jsontext.Value `json:"top_k,omitzero"`
	Metadata      *Metadata      `json:"metadata,omitzero"`
	Stream        bool           `json:"stream,omitzero"`
	Thinking      *Thinking      `json:"thinking,omitzero"`
	OutputConfig  *OutputConfig  `json:"output_config,omitzero"`
}

// Message is one turn of Request.Messages. Role is "user", "assistant",
// or "system" (the coding client sends system turns mid-conversation).
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
}

// Content is a string or a list of content blocks: the shape of a
// message's content, of system, and of a tool_result's content. Exactly one
// of Text (a raw JSON string) and Blocks is set; both are zero for null or
// an absent member.
type Content struct {
	Text   jsontext.Value
	Blocks []Block
}

// IsZero reports whether the content is absent or null.
func (c Content) IsZero() bool { return c.Text == nil && c.Blocks == nil }

var errContentKind = errors.New("must be a string or an array of content blocks")

// UnmarshalJSONFrom decodes a string or an array of blocks.
func (c *Content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case '"':
		*c = Content{}
		return json.UnmarshalDecode(dec, &c.Text)
	case '[':
		*c = Content{}
		if err := json.UnmarshalDecode(dec, &c.Blocks); err != nil {
			return err
		}
		if c.Blocks == nil {
			c.Blocks = []Block{}
		}
		return nil
	case 'n':
		*c = Content{}
		_, err := dec.ReadValue()
		return err
	default:
		if _, err := dec.ReadValue(); err != nil {
			return err
		}
		return errContentKind
	}
}

// MarshalJSONTo encodes the string or the array of blocks.
func (c Content) MarshalJSONTo(enc *jsontext.Encoder) error {
	switch {
	case c.Text != nil:
		return enc.WriteValue(c.Text)
	case c.Blocks != nil:
		return json.MarshalEncode(enc, c.Blocks)
	default:
		return enc.WriteToken(jsontext.Null)
	}
}

// Block is a content block of a request. Which members are set depends on
// Type: "text" (Text), "image" and "document" (Source), "tool_use" and
// "server_tool_use" (ID, Name, Input), "tool_result" (ToolUseID, Content,
// IsError), "tool_reference" (ToolName), "web_search_tool_result"
// (ToolUseID, Content: web_search_result blocks with URL, Title,
// EncryptedContent, PageAge; an error object is skipped), "thinking" and
// "redacted_thinking" (their fields are not decoded).
//
// Decoding is lenient about members whose JSON kind does not fit, since
// block types this package does not know reuse the same names with other
// shapes (search_result has a string "source", web_search_tool_result an
// object "content"): such a member is skipped and its field left zero, so
// an unknown block never fails a request. A known block missing what it
// needs is reported by whoever reads it.
type Block struct {
	Type      string         `json:"type"`
	Text      jsontext.Value `json:"text,omitzero"` // raw JSON string
	Source    *Source        `json:"source,omitzero"`
	ID        string         `json:"id,omitzero"`
	Name      string         `json:"name,omitzero"`
	Input     jsontext.Value `json:"input,omitzero"` // raw JSON object
	ToolUseID string         `json:"tool_use_id,omitzero"`
	Content   *Content       `json:"content,omitzero"`
	IsError   bool           `json:"is_error,omitzero"`
	// ToolName is a tool_reference's tool (the client's ToolSearch
	// answers with these in a tool_result).
	ToolName string `json:"tool_name,omitzero"`
	// A web_search_result (in a web_search_tool_result's content).
	URL              string `json:"url,omitzero"`
	Title            string `json:"title,omitzero"`
	EncryptedContent string `json:"encrypted_content,omitzero"`
	PageAge          string `json:"page_age,omitzero"`
}

// Source is where an image or document block's data comes from. Type is
// "base64" (MediaType, Data), "url" (URL), "text" (MediaType, Data as the
// text), "content" (Content) or "file" (FileID).
type Source struct {
	Type      string         `json:"type"`
	MediaType string         `json:"media_type,omitzero"`
	Data      jsontext.Value `json:"data,omitzero"` // raw JSON string
	URL       jsontext.Value `json:"url,omitzero"`  // raw JSON string
	FileID    string         `json:"file_id,omitzero"`
	Content   *Content       `json:"content,omitzero"`
}

// Tool is a tool the model may call. Server tools have a Type and no
// InputSchema.
type Tool struct {
	Type        string         `json:"type,omitzero"`
	Name        string         `json:"name"`
	Description jsontext.Value `json:"description,omitzero"`  // raw JSON string
	InputSchema jsontext.Value `json:"input_schema,omitzero"` // raw JSON object
}

// ToolChoice says whether and which tool the model must call. Type is
// "auto", "any", "tool" (with Name) or "none".
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitzero"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitzero"`
}

// Metadata about the request.
type Metadata struct {
	UserID jsontext.Value `json:"user_id,omitzero"` // raw JSON string or null
}

// Thinking configures extended thinking. Type is "enabled" (with
// BudgetTokens), "adaptive" or "disabled".
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens,omitzero"`
}

// OutputConfig carries output options; Effort is "low", "medium", "high"
// (or "max").
type OutputConfig struct {
	Effort string `json:"effort,omitzero"`
}

// UnmarshalJSONFrom decodes a block in one pass over its members, skipping
// members of an unexpected kind (see Block).
func (b *Block) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '{' {
		// Let the default decoding report the mismatch.
		type plain Block
		return json.UnmarshalDecode(dec, (*plain)(b))
	}
	*b = Block{}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return err
		}
		k := dec.PeekKind()
		switch string(name) {
		case `"type"`:
			err = decodeIf(dec, k == '"', &b.Type)
		case `"text"`:
			err = json.UnmarshalDecode(dec, &b.Text)
		case `"input"`:
			err = json.UnmarshalDecode(dec, &b.Input)
		case `"source"`:
			err = decodeIf(dec, k == '{', &b.Source)
		case `"content"`:
			err = decodeIf(dec, k == '"' || k == '[', &b.Content)
		case `"id"`:
			err = decodeIf(dec, k == '"', &b.ID)
		case `"name"`:
			err = decodeIf(dec, k == '"', &b.Name)
		case `"tool_use_id"`:
			err = decodeIf(dec, k == '"', &b.ToolUseID)
		case `"is_error"`:
			err = decodeIf(dec, k == 't' || k == 'f', &b.IsError)
		case `"tool_name"`:
			err = decodeIf(dec, k == '"', &b.ToolName)
		case `"url"`:
			err = decodeIf(dec, k == '"', &b.URL)
		case `"title"`:
			err = decodeIf(dec, k == '"', &b.Title)
		case `"encrypted_content"`:
			err = decodeIf(dec, k == '"', &b.EncryptedContent)
		case `"page_age"`:
			err = decodeIf(dec, k == '"', &b.PageAge)
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}

// decodeIf decodes the next value into dst if it is of the expected kind
// (fits), and otherwise skips it, leaving dst zero.
func decodeIf[T any](dec *jsontext.Decoder, fits bool, dst *T) error {
	if fits {
		return json.UnmarshalDecode(dec, dst)
	}
	var zero T
	*dst = zero
	return dec.SkipValue()
}
