package translate

// What a Responses client (Codex) receives of the searches the proxy ran:
// a web_search_call output item per call ({"type":"web_search_call","id":
// "ws_…","status":"completed","action":{"type":"search","query":…}}; status
// "failed" when the search failed) before the model's answer; and as a
// stream, each item's output_item.added, response.web_search_call.
// in_progress, .searching, .completed and output_item.done as its search
// ends, then the answer's items and response.completed.

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

type webSearchCallItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status"`
	Action struct {
		Type  string `json:"type"`
		Query string `json:"query"`
	} `json:"action"`
}

func searchCallItem(c *SearchCall, status string) jsontext.Value {
	it := webSearchCallItem{Type: "web_search_call", ID: c.ID, Status: status}
	it.Action.Type, it.Action.Query = "search", c.Query
	b, _ := json.Marshal(it)
	return b
}

func searchCallStatus(c *SearchCall) string {
	if c.Code != "" {
		return "failed"
	}
	return responses.StatusCompleted
}

// objectMembers splits a JSON object into its members, in order.
func objectMembers(b []byte) ([]jsonMember, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, fmt.Errorf("translate: not a JSON object")
	}
	var out []jsonMember
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // before the next read voids tok
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		out = append(out, jsonMember{name, v.Clone()})
	}
	return out, nil
}

func appendMembers(dst []byte, ms []jsonMember) []byte {
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonquote.Append(dst, m.name)
		dst = append(append(dst, ':'), m.value...)
	}
	return append(dst, '}')
}

// ResponsesWithSearches puts a web_search_call item per call before the
// output of a Responses answer (the model's last turn, translated).
func ResponsesWithSearches(answer []byte, calls []SearchCall) ([]byte, error) {
	ms, err := objectMembers(answer)
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if ms[i].name != "output" {
			continue
		}
		var items []jsontext.Value
		if err := json.Unmarshal(ms[i].value, &items); err != nil {
			return nil, err
		}
		out := make([]jsontext.Value, 0, len(calls)+len(items))
		for k := range calls {
			out = append(out, searchCallItem(&calls[k], searchCallStatus(&calls[k])))
		}
		for _, it := range items {
			var fc struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if json.Unmarshal(it, &fc) == nil && fc.Type == "function_call" && fc.Name == SearchFunction {
				continue // asked for after the searches were over: not the client's to run
			}
			out = append(out, it)
		}
		ms[i].value, _ = json.Marshal(out)
	}
	return appendMembers(nil, ms), nil
}

// ResponsesSearchStream writes a Responses answer with web_search_call
// items as its stream: response.created and response.in_progress, each
// search's item as it ends (Searched), then the answer's other items whole
// and response.completed (Finish). Ping writes an SSE comment. Its methods
// append to dst and do no I/O.
type ResponsesSearchStream struct {
	id, alias string
	createdAt int64
	call      *ResponsesCall
	seq       int
	items     int // output items written
	started   bool
	ended     bool
}

// NewResponsesSearchStream returns the stream writer of one answer.
// call is what the request's translation returned.
func NewResponsesSearchStream(alias, responseID string, createdAt int64, call *ResponsesCall) *ResponsesSearchStream {
	return &ResponsesSearchStream{id: responseID, alias: alias, createdAt: createdAt, call: call}
}

// event appends one event: name, then data with type and sequence_number
// first and the members of fields (a JSON object's inside) after.
func (s *ResponsesSearchStream) event(dst []byte, name string, fields ...any) []byte {
	dst = append(dst, eventHead(name)...)
	dst = strconv.AppendInt(dst, int64(s.seq), 10)
	s.seq++
	for i := 0; i+1 < len(fields); i += 2 {
		dst = append(dst, ',')
		dst = jsonquote.Append(dst, fields[i].(string))
		dst = append(dst, ':')
		switch v := fields[i+1].(type) {
		case jsontext.Value:
			dst = append(dst, v...)
		default:
			b, _ := json.Marshal(v)
			dst = append(dst, b...)
		}
	}
	return append(dst, "}\n\n"...)
}

// Start writes response.created and response.in_progress, once.
func (s *ResponsesSearchStream) Start(dst []byte) []byte {
	if s.started {
		return dst
	}
	s.started = true
	r := newResponse(s.id, s.alias, s.createdAt, responses.StatusInProgress, s.call)
	v := jsontext.Value(appendResponse(nil, &r))
	dst = s.event(dst, "response.created", "response", v)
	return s.event(dst, "response.in_progress", "response", v)
}

// Ping writes an SSE comment, which clients skip.
func (s *ResponsesSearchStream) Ping(dst []byte) []byte {
	if s.ended {
		return dst
	}
	return append(s.Start(dst), ": ping\n\n"...)
}

// Searched writes the items of a turn's calls, each through its states.
func (s *ResponsesSearchStream) Searched(dst []byte, calls []SearchCall) []byte {
	dst = s.Start(dst)
	for i := range calls {
		c := &calls[i]
		k := s.items
		s.items++
		dst = s.event(dst, "response.output_item.added", "output_index", k, "item", searchCallItem(c, responses.StatusInProgress))
		dst = s.event(dst, "response.web_search_call.in_progress", "output_index", k, "item_id", c.ID)
		dst = s.event(dst, "response.web_search_call.searching", "output_index", k, "item_id", c.ID)
		dst = s.event(dst, "response.web_search_call.completed", "output_index", k, "item_id", c.ID)
		dst = s.event(dst, "response.output_item.done", "output_index", k, "item", searchCallItem(c, searchCallStatus(c)))
	}
	return dst
}

type streamItem struct {
	Type      string           `json:"type"`
	ID        string           `json:"id"`
	Content   []jsontext.Value `json:"content"`
	Arguments string           `json:"arguments"`
	Input     string           `json:"input"`
}

type streamPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// Finish writes the items of answer (ResponsesWithSearches's output) not
// yet written, and the response's last event: response.completed (or
// response.incomplete when the answer is).
func (s *ResponsesSearchStream) Finish(dst []byte, answer []byte) ([]byte, error) {
	ms, err := objectMembers(answer)
	if err != nil {
		return dst, err
	}
	var items []jsontext.Value
	status := responses.StatusCompleted
	for _, m := range ms {
		switch m.name {
		case "output":
			if err := json.Unmarshal(m.value, &items); err != nil {
				return dst, err
			}
		case "status":
			json.Unmarshal(m.value, &status)
		}
	}
	dst = s.Start(dst)
	for _, raw := range items[min(s.items, len(items)):] {
		dst = s.item(dst, raw)
	}
	name := "response.completed"
	if status == "incomplete" {
		name = "response.incomplete"
	}
	s.ended = true
	return s.event(dst, name, "response", jsontext.Value(answer)), nil
}

// item writes one whole output item: added (empty), its parts' or
// arguments' events, done.
func (s *ResponsesSearchStream) item(dst []byte, raw jsontext.Value) []byte {
	var it streamItem
	json.Unmarshal(raw, &it)
	k := s.items
	s.items++
	ms, _ := objectMembers(raw)
	opened := make([]jsonMember, 0, len(ms))
	for _, m := range ms {
		switch m.name {
		case "content":
			m.value = jsontext.Value("[]")
		case "arguments", "input":
			m.value = jsontext.Value(`""`)
		case "status":
			m.value = jsontext.Value(`"in_progress"`)
		}
		opened = append(opened, m)
	}
	dst = s.event(dst, "response.output_item.added", "output_index", k, "item", jsontext.Value(appendMembers(nil, opened)))
	switch it.Type {
	case "message":
		for n, rawPart := range it.Content {
			var p streamPart
			json.Unmarshal(rawPart, &p)
			ref := []any{"item_id", it.ID, "output_index", k, "content_index", n}
			emptyPart := jsontext.Value(`{"type":"output_text","text":"","annotations":[]}`)
			if p.Type == responses.PartRefusal {
				emptyPart = jsontext.Value(`{"type":"refusal","refusal":""}`)
			}
			dst = s.event(dst, "response.content_part.added", append(ref, "part", emptyPart)...)
			if p.Type == responses.PartRefusal {
				dst = s.event(dst, "response.refusal.delta", append(ref, "delta", p.Refusal)...)
				dst = s.event(dst, "response.refusal.done", append(ref, "refusal", p.Refusal)...)
			} else {
				dst = s.event(dst, "response.output_text.delta", append(ref, "delta", p.Text, "logprobs", jsontext.Value("[]"))...)
				dst = s.event(dst, "response.output_text.done", append(ref, "text", p.Text, "logprobs", jsontext.Value("[]"))...)
			}
			dst = s.event(dst, "response.content_part.done", append(ref, "part", rawPart)...)
		}
	case "function_call":
		dst = s.event(dst, "response.function_call_arguments.delta", "item_id", it.ID, "output_index", k, "delta", it.Arguments)
		dst = s.event(dst, "response.function_call_arguments.done", "item_id", it.ID, "output_index", k, "arguments", it.Arguments)
	case "custom_tool_call":
		dst = s.event(dst, "response.custom_tool_call_input.delta", "item_id", it.ID, "output_index", k, "delta", it.Input)
		dst = s.event(dst, "response.custom_tool_call_input.done", "item_id", it.ID, "output_index", k, "input", it.Input)
	}
	return s.event(dst, "response.output_item.done", "output_index", k, "item", raw)
}

// Fail ends the stream with response.failed.
func (s *ResponsesSearchStream) Fail(dst []byte, code, message string) []byte {
	return failOnce(dst, s.Start, endOnce(&s.ended), func(dst []byte) []byte {
		r := newResponse(s.id, s.alias, s.createdAt, responses.StatusFailed, s.call)
		r.Error = &responses.ResponseError{Code: code, Message: message}
		return s.event(dst, "response.failed", "response", jsontext.Value(appendResponse(nil, &r)))
	})
}
