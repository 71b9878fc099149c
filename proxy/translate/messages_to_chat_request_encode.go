package translate

// Writing the Chat request body from the built messages.

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// reasoningEffort maps output_config.effort, or else thinking, to a Chat
// reasoning_effort: effort low/medium/high pass (max, xhigh → high;
// minimal → low); thinking adaptive → medium; enabled by budget_tokens:
// < 8192 low, < 24576 medium, else high (the client's think / think hard /
// ultrathink budgets land on low / medium / high).
func reasoningEffort(req *messages.Request) string {
	if oc := req.OutputConfig; oc != nil {
		switch oc.Effort {
		case "low", "medium", "high":
			return oc.Effort
		case "max", "xhigh":
			return "high"
		case "minimal":
			return "low"
		}
	}
	if th := req.Thinking; th != nil {
		switch th.Type {
		case "adaptive":
			return "medium"
		case "enabled":
			switch {
			case th.BudgetTokens < 8192:
				return "low"
			case th.BudgetTokens < 24576:
				return "medium"
			default:
				return "high"
			}
		}
	}
	return ""
}

// estimateTools counts the tools the backend gets (those with a schema)
// into the prompt's estimate.
func (b *builder) estimateTools(tools []messages.Tool) {
	for i := range tools {
		t := &tools[i]
		if t.InputSchema.Kind() != '{' {
			continue
		}
		b.est.tool(t.Name, t.Description, t.InputSchema)
	}
}

// encode writes the Chat request body of a validated request, with the
// max_tokens fitOutput chose (b.maxTokens).
func (b *builder) encode(req *messages.Request, w []byte) []byte {
	w = append(w, `{"model":`...)
	w = appendQuoted(w, b.target.BackendModel)
	w = append(w, `,"messages":[`...)
	for k := range b.msgs {
		if k > 0 {
			w = append(w, ',')
		}
		w = b.msgs[k].append(w)
	}
	w = append(w, ']')

	tools := 0
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.InputSchema.Kind() != '{' {
			continue // server tools, and tools without a schema
		}
		if tools == 0 {
			w = append(w, `,"tools":[`...)
		} else {
			w = append(w, ',')
		}
		tools++
		w = append(w, `{"type":"function","function":{"name":`...)
		w = appendQuoted(w, t.Name)
		if t.Description.Kind() == '"' {
			w = append(w, `,"description":`...)
			w = append(w, t.Description...)
		}
		w = append(w, `,"parameters":`...)
		w = append(w, t.InputSchema...)
		w = append(w, `}}`...)
	}
	if tools > 0 {
		w = append(w, ']')
		if tc := req.ToolChoice; tc != nil {
			switch tc.Type {
			case "auto":
				w = append(w, `,"tool_choice":"auto"`...)
			case "any":
				w = append(w, `,"tool_choice":"required"`...)
			case "none":
				w = append(w, `,"tool_choice":"none"`...)
			case "tool":
				w = append(w, `,"tool_choice":{"type":"function","function":{"name":`...)
				w = appendQuoted(w, tc.Name)
				w = append(w, `}}`...)
			}
			if tc.DisableParallelToolUse {
				w = append(w, `,"parallel_tool_calls":false`...)
			}
		}
	}

	w = append(w, `,"max_tokens":`...)
	w = strconv.AppendInt(w, b.maxTokens, 10)

	for _, f := range [...]struct {
		name string
		v    jsontext.Value
	}{{"temperature", req.Temperature}, {"top_p", req.TopP}, {"top_k", req.TopK}} {
		if f.v.Kind() == '0' {
			w = append(w, ',', '"')
			w = append(w, f.name...)
			w = append(w, '"', ':')
			w = append(w, f.v...)
		}
	}
	if len(req.StopSequences) > 0 {
		w = append(w, `,"stop":[`...)
		for i, s := range req.StopSequences {
			if i > 0 {
				w = append(w, ',')
			}
			w = appendQuoted(w, s)
		}
		w = append(w, ']')
	}
	if md := req.Metadata; md != nil {
		if md.UserID.Kind() == '"' {
			w = append(w, `,"user":`...)
			w = append(w, md.UserID...)
		}
	}
	if b.target.SupportsReasoningEffort {
		if e := reasoningEffort(req); e != "" {
			w = append(w, `,"reasoning_effort":"`...)
			w = append(w, e...)
			w = append(w, '"')
		}
	}
	if req.Stream {
		w = append(w, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(w, '}')
}

// append writes the message as a Chat message object.
func (m *chatMsg) append(w []byte) []byte {
	w = append(w, `{"role":"`...)
	w = append(w, m.role...)
	w = append(w, `","content":`...)
	switch {
	case m.role == "assistant":
		if len(m.parts) == 0 {
			w = append(w, "null"...)
		} else {
			w = append(w, '"')
			for k, p := range m.parts {
				if k > 0 {
					w = append(w, sepPara...)
				}
				for _, s := range p.segs {
					w = append(w, s...)
				}
			}
			w = append(w, '"')
		}
		if len(m.calls) > 0 {
			w = append(w, `,"tool_calls":[`...)
			for k, c := range m.calls {
				if k > 0 {
					w = append(w, ',')
				}
				w = append(w, `{"id":`...)
				w = appendQuoted(w, c.id)
				w = append(w, `,"type":"function","function":{"name":`...)
				w = appendQuoted(w, c.name)
				w = append(w, `,"arguments":`...)
				w = appendQuoted(w, c.input)
				w = append(w, `}}`...)
			}
			w = append(w, ']')
		}
	case m.str:
		w = appendString(w, m.parts[0].segs)
	default:
		w = append(w, '[')
		for k, p := range m.parts {
			if k > 0 {
				w = append(w, ',')
			}
			if p.image {
				w = append(w, `{"type":"image_url","image_url":{"url":`...)
				w = appendString(w, p.segs)
				w = append(w, `}}`...)
			} else {
				w = append(w, `{"type":"text","text":`...)
				w = appendString(w, p.segs)
				w = append(w, '}')
			}
		}
		w = append(w, ']')
	}
	if m.role == "tool" {
		w = append(w, `,"tool_call_id":`...)
		w = appendQuoted(w, m.callID)
	}
	return append(w, '}')
}
