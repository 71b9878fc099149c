package messages

import (
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
)

// ScanRequest decodes a Messages request body into r the quick way: Claude
// Code's 54 KB body takes 15 µs, against 33 through jsonv2. It reports
// true when r is what the translations' jsonv2 decode gives (duplicate
// names allowed, raw values aliasing body), false where it leaves the body
// to jsonv2 (jsonscan.ErrLeft's cases; r is then in no particular state).
// rc, when not nil, recalls the long values the client sent before.
func ScanRequest(body []byte, r *Request, rc jsonscan.Recall) bool {
	*r = Request{}
	return jsonscan.Decode(body, rc, func(sc *jsonscan.Scanner) error { return scan{sc}.request(r) })
}

// scan reads the members of a Request into its Go types.
type scan struct{ *jsonscan.Scanner }

func (s scan) request(r *Request) error {
	return s.Object(func(name []byte) (int, error) {
		switch string(name) {
		case `"model"`:
			return 0, s.String(&r.Model)
		case `"messages"`:
			return 1, jsonscan.List(s.Scanner, &r.Messages, s.message)
		case `"system"`:
			return 2, s.content(&r.System)
		case `"max_tokens"`:
			return 3, jsonscan.Pointer(s.Scanner, &r.MaxTokens, s.Int)
		case `"tools"`:
			return 4, jsonscan.List(s.Scanner, &r.Tools, s.tool)
		case `"tool_choice"`:
			return 5, jsonscan.Pointer(s.Scanner, &r.ToolChoice, s.toolChoice)
		case `"stop_sequences"`:
			return 6, jsonscan.List(s.Scanner, &r.StopSequences, s.String)
		case `"temperature"`:
			return 7, jsonscan.Raw(s.Scanner, &r.Temperature)
		case `"top_p"`:
			return 8, jsonscan.Raw(s.Scanner, &r.TopP)
		case `"top_k"`:
			return 9, jsonscan.Raw(s.Scanner, &r.TopK)
		case `"metadata"`:
			return 10, jsonscan.Pointer(s.Scanner, &r.Metadata, s.metadata)
		case `"stream"`:
			return 11, s.Bool(&r.Stream)
		case `"thinking"`:
			return 12, jsonscan.Pointer(s.Scanner, &r.Thinking, s.thinking)
		case `"output_config"`:
			return 13, jsonscan.Pointer(s.Scanner, &r.OutputConfig, s.outputConfig)
		}
		return jsonscan.Unknown, nil
	})
}

func (s scan) message(m *Message) error {
	return s.Object(func(name []byte) (int, error) {
		switch string(name) {
		case `"role"`:
			return 0, s.String(&m.Role)
		case `"content"`:
			return 1, s.content(&m.Content)
		}
		return jsonscan.Unknown, nil
	})
}

// content reads a Content as its UnmarshalJSONFrom does.
func (s scan) content(c *Content) error {
	switch s.Peek() {
	case '"':
		return jsonscan.Raw(s.Scanner, &c.Text)
	case '[':
		return jsonscan.List(s.Scanner, &c.Blocks, s.block)
	case 'n':
		return s.Skip()
	}
	return jsonscan.ErrLeft
}

// block reads a Block as its UnmarshalJSONFrom does: a member of a kind
// that does not fit is skipped (decodeIf).
func (s scan) block(b *Block) error {
	if s.Peek() != '{' {
		return jsonscan.ErrLeft
	}
	return s.Object(func(name []byte) (int, error) {
		k := s.Peek()
		switch string(name) {
		case `"type"`:
			return 0, s.stringIf(k, &b.Type)
		case `"text"`:
			return 1, jsonscan.Raw(s.Scanner, &b.Text)
		case `"input"`:
			return 2, jsonscan.Raw(s.Scanner, &b.Input)
		case `"source"`:
			if k != '{' {
				return 3, s.Skip()
			}
			return 3, jsonscan.Pointer(s.Scanner, &b.Source, s.source)
		case `"content"`:
			if k != '"' && k != '[' {
				return 4, s.Skip()
			}
			return 4, jsonscan.Pointer(s.Scanner, &b.Content, s.content)
		case `"id"`:
			return 5, s.stringIf(k, &b.ID)
		case `"name"`:
			return 6, s.stringIf(k, &b.Name)
		case `"tool_use_id"`:
			return 7, s.stringIf(k, &b.ToolUseID)
		case `"is_error"`:
			if k != 't' && k != 'f' {
				return 8, s.Skip()
			}
			return 8, s.Bool(&b.IsError)
		case `"tool_name"`:
			return 9, s.stringIf(k, &b.ToolName)
		case `"url"`:
			return 10, s.stringIf(k, &b.URL)
		case `"title"`:
			return 11, s.stringIf(k, &b.Title)
		case `"encrypted_content"`:
			return 12, s.stringIf(k, &b.EncryptedContent)
		case `"page_age"`:
			return 13, s.stringIf(k, &b.PageAge)
		}
		return jsonscan.Unknown, nil
	})
}

// stringIf reads a string into dst when k, the kind next, is a string,
// and skips the value otherwise.
func (s scan) stringIf(k byte, dst *string) error {
	if k != '"' {
		return s.Skip()
	}
	return s.String(dst)
}

func (s scan) source(src *Source) error {
	return s.Object(func(name []byte) (int, error) {
		switch string(name) {
		case `"type"`:
			return 0, s.String(&src.Type)
		case `"media_type"`:
			return 1, s.String(&src.MediaType)
		case `"data"`:
			return 2, jsonscan.Raw(s.Scanner, &src.Data)
		case `"url"`:
			return 3, jsonscan.Raw(s.Scanner, &src.URL)
		case `"file_id"`:
			return 4, s.String(&src.FileID)
		case `"content"`:
			return 5, jsonscan.Pointer(s.Scanner, &src.Content, s.content)
		}
		return jsonscan.Unknown, nil
	})
}

func (s scan) tool(t *Tool) error {
	return s.Object(func(name []byte) (int, error) {
		switch string(name) {
		case `"type"`:
			return 0, s.String(&t.Type)
		case `"name"`:
			return 1, s.String(&t.Name)
		case `"description"`:
			return 2, jsonscan.Raw(s.Scanner, &t.Description)
		case `"input_schema"`:
			return 3, jsonscan.Raw(s.Scanner, &t.InputSchema)
		}
		return jsonscan.Unknown, nil
	})
}

func (s scan) toolChoice(c *ToolChoice) error {
	return s.Object(func(name []byte) (int, error) {
		switch string(name) {
		case `"type"`:
			return 0, s.String(&c.Type)
		case `"name"`:
			return 1, s.String(&c.Name)
		case `"disable_parallel_tool_use"`:
			return 2, s.Bool(&c.DisableParallelToolUse)
		}
		return jsonscan.Unknown, nil
	})
}

func (s scan) metadata(m *Metadata) error {
	return s.Object(func(name []byte) (int, error) {
		if string(name) == `"user_id"` {
			return 0, jsonscan.Raw(s.Scanner, &m.UserID)
		}
		return jsonscan.Unknown, nil
	})
}

func (s scan) thinking(t *Thinking) error {
	return s.Object(func(name []byte) (int, error) {
		switch string(name) {
		case `"type"`:
			return 0, s.String(&t.Type)
		case `"budget_tokens"`:
			return 1, s.Int(&t.BudgetTokens)
		}
		return jsonscan.Unknown, nil
	})
}

func (s scan) outputConfig(c *OutputConfig) error {
	return s.Object(func(name []byte) (int, error) {
		if string(name) == `"effort"` {
			return 0, s.String(&c.Effort)
		}
		return jsonscan.Unknown, nil
	})
}
