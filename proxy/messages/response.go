package messages

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Response is a non-streaming Messages response. StopReason is one of the
// Stop* constants; StopSequence is set only with StopStopSequence.
type Response struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"` // "message"
	Role         string          `json:"role"` // "assistant"
	Model        string          `json:"model"`
	Content      []ResponseBlock `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        Usage           `json:"usage"`
}

// ResponseBlock is a content block of a response. It always encodes the
// members its Type requires, even when they are empty:
//
//	text:              {"type","text"}
//	thinking:          {"type","thinking","signature"}
//	redacted_thinking: {"type","data"}
//	tool_use:          {"type","id","name","input"} (input {} when unset)
type ResponseBlock struct {
	Type      string
	Text      string         // text; the thinking of a thinking block; data of redacted_thinking
	Signature string         // thinking
	ID        string         // tool_use
	Name      string         // tool_use
	Input     jsontext.Value // tool_use: a JSON object
}

// MarshalJSONTo encodes the block in its type's shape.
func (b ResponseBlock) MarshalJSONTo(enc *jsontext.Encoder) error {
	w := func(toks ...jsontext.Token) error {
		for _, t := range toks {
			if err := enc.WriteToken(t); err != nil {
				return err
			}
		}
		return nil
	}
	if err := w(jsontext.BeginObject, jsontext.String("type"), jsontext.String(b.Type)); err != nil {
		return err
	}
	var err error
	switch b.Type {
	case "thinking":
		err = w(jsontext.String("thinking"), jsontext.String(b.Text), jsontext.String("signature"), jsontext.String(b.Signature))
	case "redacted_thinking":
		err = w(jsontext.String("data"), jsontext.String(b.Text))
	case "tool_use":
		err = w(jsontext.String("id"), jsontext.String(b.ID), jsontext.String("name"), jsontext.String(b.Name), jsontext.String("input"))
		if err == nil {
			in := b.Input
			if len(in) == 0 {
				in = jsontext.Value("{}")
			}
			err = enc.WriteValue(in)
		}
	default:
		err = w(jsontext.String("text"), jsontext.String(b.Text))
	}
	if err != nil {
		return err
	}
	return enc.WriteToken(jsontext.EndObject)
}

// UnmarshalJSONFrom decodes a block of any of the shapes MarshalJSONTo
// writes.
func (b *ResponseBlock) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var aux struct {
		Type      string         `json:"type"`
		Text      string         `json:"text"`
		Thinking  string         `json:"thinking"`
		Data      string         `json:"data"`
		Signature string         `json:"signature"`
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Input     jsontext.Value `json:"input"`
	}
	if err := json.UnmarshalDecode(dec, &aux); err != nil {
		return err
	}
	*b = ResponseBlock{Type: aux.Type, Text: aux.Text, Signature: aux.Signature, ID: aux.ID, Name: aux.Name, Input: aux.Input}
	switch aux.Type {
	case "thinking":
		b.Text = aux.Thinking
	case "redacted_thinking":
		b.Text = aux.Data
	}
	return nil
}
