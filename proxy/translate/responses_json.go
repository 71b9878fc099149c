package translate

import (
	"strconv"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// The Responses values the translations write (the answer of a
// non-stream request, the items, parts and snapshots of a stream), as
// json.Marshal writes them: members in their struct's order, omitzero
// honoured, nil slices as [], strings quoted as jsonquote quotes them
// (invalid UTF-8 becomes U+FFFD), without its reflection, which was most
// of what writing an answer cost. TestResponsesJSONMatchesMarshal and
// FuzzResponsesJSONMatchesMarshal hold them to json.Marshal.

// appendResponse appends the response object r.
func appendResponse(dst []byte, r *responses.Response) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonquote.Append(dst, r.ID)
	dst = append(dst, `,"object":`...)
	dst = jsonquote.Append(dst, r.Object)
	dst = append(dst, `,"created_at":`...)
	dst = strconv.AppendInt(dst, r.CreatedAt, 10)
	dst = append(dst, `,"status":`...)
	dst = jsonquote.Append(dst, r.Status)
	dst = append(dst, `,"error":`...)
	if e := r.Error; e != nil {
		dst = append(dst, `{"code":`...)
		dst = jsonquote.Append(dst, e.Code)
		dst = append(dst, `,"message":`...)
		dst = jsonquote.Append(dst, e.Message)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"incomplete_details":`...)
	if d := r.IncompleteDetails; d != nil {
		dst = append(dst, `{"reason":`...)
		dst = jsonquote.Append(dst, d.Reason)
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"instructions":`...)
	dst = appendStringOrNull(dst, r.Instructions)
	dst = append(dst, `,"max_output_tokens":`...)
	if n := r.MaxOutputTokens; n != nil {
		dst = strconv.AppendInt(dst, *n, 10)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"model":`...)
	dst = jsonquote.Append(dst, r.Model)
	dst = append(dst, `,"output":[`...)
	for i := range r.Output {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendItem(dst, &r.Output[i])
	}
	dst = append(dst, `],"parallel_tool_calls":`...)
	dst = strconv.AppendBool(dst, r.ParallelToolCalls)
	dst = append(dst, `,"previous_response_id":`...)
	dst = appendStringOrNull(dst, r.PreviousResponseID)
	dst = append(dst, `,"store":`...)
	dst = strconv.AppendBool(dst, r.Store)
	dst = append(dst, `,"temperature":`...)
	dst = appendFloatOrNull(dst, r.Temperature)
	dst = append(dst, `,"tool_choice":`...)
	dst = jsonquote.Append(dst, r.ToolChoice)
	dst = append(dst, `,"tools":`...)
	dst = appendEmptyObjects(dst, len(r.Tools))
	dst = append(dst, `,"top_p":`...)
	dst = appendFloatOrNull(dst, r.TopP)
	dst = append(dst, `,"truncation":`...)
	dst = jsonquote.Append(dst, r.Truncation)
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

// appendItem appends the output item it.
func appendItem(dst []byte, it *responses.OutputItem) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonquote.Append(dst, it.Type)
	dst = append(dst, `,"id":`...)
	dst = jsonquote.Append(dst, it.ID)
	dst = appendMember(dst, `,"status":`, it.Status)
	dst = appendMember(dst, `,"role":`, it.Role)
	dst = appendParts(dst, `,"content":`, it.Content)
	dst = appendMember(dst, `,"call_id":`, it.CallID)
	dst = appendMember(dst, `,"name":`, it.Name)
	dst = appendMember(dst, `,"namespace":`, it.Namespace)
	if it.Arguments != nil {
		dst = jsonquote.Append(append(dst, `,"arguments":`...), *it.Arguments)
	}
	if it.Input != nil {
		dst = jsonquote.Append(append(dst, `,"input":`...), *it.Input)
	}
	dst = appendParts(dst, `,"summary":`, it.Summary)
	if it.Encrypted != nil {
		dst = jsonquote.Append(append(dst, `,"encrypted_content":`...), *it.Encrypted)
	}
	return append(dst, '}')
}

// appendPart appends the part p in its type's shape
// (responses.OutputPart.MarshalJSONTo).
func appendPart(dst []byte, p responses.OutputPart) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonquote.Append(dst, p.Type)
	if p.Type == responses.PartRefusal {
		dst = append(dst, `,"refusal":`...)
		return append(jsonquote.Append(dst, p.Refusal), '}')
	}
	dst = append(dst, `,"text":`...)
	dst = jsonquote.Append(dst, p.Text)
	dst = appendMember(dst, `,"refusal":`, p.Refusal)
	if p.Annotations != nil {
		dst = appendEmptyObjects(append(dst, `,"annotations":`...), len(*p.Annotations))
	}
	if p.Logprobs != nil {
		dst = appendEmptyObjects(append(dst, `,"logprobs":`...), len(*p.Logprobs))
	}
	return append(dst, '}')
}

// appendParts appends the member name (with its comma and colon) and the
// parts, when there are (omitzero: a nil pointer is left out).
func appendParts(dst []byte, name string, parts *[]responses.OutputPart) []byte {
	if parts == nil {
		return dst
	}
	dst = append(append(dst, name...), '[')
	for i := range *parts {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendPart(dst, (*parts)[i])
	}
	return append(dst, ']')
}

// appendMember appends the member name (with its comma and colon) and
// the string v, unless v is empty (omitzero).
func appendMember(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	return jsonquote.Append(append(dst, name...), v)
}

func appendStringOrNull(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return jsonquote.Append(dst, *s)
}

// appendFloatOrNull writes a float as json.Marshal does (no answer sets
// one: they are here for the type's sake).
func appendFloatOrNull(dst []byte, f *float64) []byte {
	if f == nil {
		return append(dst, "null"...)
	}
	b, err := json.Marshal(*f)
	if err != nil {
		panic("translate: a Responses float does not marshal: " + err.Error()) // NaN or an infinity: none is ever set
	}
	return append(dst, b...)
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
