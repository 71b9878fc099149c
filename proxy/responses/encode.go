package responses

import (
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
)

// AppendJSON appends the response object as json.Marshal writes it (with
// jsontext.AllowInvalidUTF8: invalid UTF-8 becomes U+FFFD), member for
// member, without reflection: a response is written on every answer, and
// the reflective encoder cost more than the translation around it. The
// members the proxy never sets (temperature, top_p, tools) are left to
// json.Marshal when they are set.
func (r *Response) AppendJSON(dst []byte) []byte {
	if r.Temperature != nil || r.TopP != nil || len(r.Tools) > 0 {
		b, err := json.Marshal(r, jsontext.AllowInvalidUTF8(true))
		if err != nil {
			panic("responses: marshal of a response failed: " + err.Error())
		}
		return append(dst, b...)
	}
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, r.ID)
	dst = append(dst, `,"object":`...)
	dst = appendString(dst, r.Object)
	dst = append(dst, `,"created_at":`...)
	dst = strconv.AppendInt(dst, r.CreatedAt, 10)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, r.Status)
	dst = append(dst, `,"error":`...)
	if e := r.Error; e != nil {
		dst = append(dst, `{"code":`...)
		dst = appendString(dst, e.Code)
		dst = append(dst, `,"message":`...)
		dst = appendString(dst, e.Message)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if d := r.IncompleteDetails; d != nil {
		dst = append(dst, `{"reason":`...)
		dst = appendString(dst, d.Reason)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"instructions":`...)
	dst = appendStringPtr(dst, r.Instructions)
	dst = append(dst, `,"max_output_tokens":`...)
	if r.MaxOutputTokens != nil {
		dst = strconv.AppendInt(dst, *r.MaxOutputTokens, 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"model":`...)
	dst = appendString(dst, r.Model)
	dst = append(dst, `,"output":[`...)
	for i := range r.Output {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.Output[i].AppendJSON(dst)
	}
	dst = append(dst, `],"parallel_tool_calls":`...)
	dst = strconv.AppendBool(dst, r.ParallelToolCalls)
	dst = append(dst, `,"previous_response_id":`...)
	dst = appendStringPtr(dst, r.PreviousResponseID)
	dst = append(dst, `,"store":`...)
	dst = strconv.AppendBool(dst, r.Store)
	dst = append(dst, `,"temperature":null,"tool_choice":`...)
	dst = appendString(dst, r.ToolChoice)
	dst = append(dst, `,"tools":[],"top_p":null,"truncation":`...)
	dst = appendString(dst, r.Truncation)
	dst = append(dst, `,"usage":`...)
	if u := r.Usage; u != nil {
		dst = append(dst, `{"input_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.InputTokens), 10)
		dst = append(dst, `,"input_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.InputTokensDetails.CachedTokens), 10)
		dst = append(dst, `},"output_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.OutputTokens), 10)
		dst = append(dst, `,"output_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.OutputTokensDetails.ReasoningTokens), 10)
		dst = append(dst, `},"total_tokens":`...)
		dst = strconv.AppendInt(dst, int64(u.TotalTokens), 10)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	return append(dst, `,"metadata":{}}`...)
}

// AppendJSON appends the item as json.Marshal writes it.
func (it *OutputItem) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, it.Type)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, it.ID)
	for _, m := range [...]struct {
		name, v string
	}{{`,"status":`, it.Status}, {`,"role":`, it.Role}} {
		if m.v != "" {
			dst = appendString(append(dst, m.name...), m.v)
		}
	}
	if it.Content != nil {
		dst = appendParts(append(dst, `,"content":`...), *it.Content)
	}
	for _, m := range [...]struct {
		name, v string
	}{{`,"call_id":`, it.CallID}, {`,"name":`, it.Name}, {`,"namespace":`, it.Namespace}} {
		if m.v != "" {
			dst = appendString(append(dst, m.name...), m.v)
		}
	}
	if it.Arguments != nil {
		dst = appendString(append(dst, `,"arguments":`...), *it.Arguments)
	}
	if it.Input != nil {
		dst = appendString(append(dst, `,"input":`...), *it.Input)
	}
	if it.Summary != nil {
		dst = appendParts(append(dst, `,"summary":`...), *it.Summary)
	}
	if it.Encrypted != nil {
		dst = appendString(append(dst, `,"encrypted_content":`...), *it.Encrypted)
	}
	return append(dst, '}')
}

func appendParts(dst []byte, parts []OutputPart) []byte {
	dst = append(dst, '[')
	for i := range parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = parts[i].AppendJSON(dst)
	}
	return append(dst, ']')
}

// AppendJSON appends the part as its MarshalJSONTo writes it.
func (p *OutputPart) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, p.Type)
	if p.Type == PartRefusal {
		dst = appendString(append(dst, `,"refusal":`...), p.Refusal)
		return append(dst, '}')
	}
	dst = appendString(append(dst, `,"text":`...), p.Text)
	if p.Refusal != "" {
		dst = appendString(append(dst, `,"refusal":`...), p.Refusal)
	}
	if p.Annotations != nil {
		dst = appendEmptyObjects(append(dst, `,"annotations":`...), len(*p.Annotations))
	}
	if p.Logprobs != nil {
		dst = appendEmptyObjects(append(dst, `,"logprobs":`...), len(*p.Logprobs))
	}
	return append(dst, '}')
}

// appendEmptyObjects appends an array of n empty objects (a []struct{}).
func appendEmptyObjects(dst []byte, n int) []byte {
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, "{}"...)
	}
	return append(dst, ']')
}

// appendString quotes s as json.Marshal does with AllowInvalidUTF8 (an
// invalid byte becomes U+FFFD).
func appendString(dst []byte, s string) []byte {
	return jsonquote.Append(dst, s)
}

func appendStringPtr(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendString(dst, *s)
}
