package translate

// Writing the Chat request body from the built messages.

import (
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
// max_tokens fitOutput chose (b.maxTokens), through the one Chat writer.
func (b *builder) encode(req *messages.Request, w []byte) []byte {
	out := chatBody{model: b.target.BackendModel, msgs: b.msgs, foldSystem: !b.target.SupportsSystemMessage, maxTokens: &b.maxTokens, stop: req.StopSequences}
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.InputSchema.Kind() != '{' {
			continue // server tools, and tools without a schema
		}
		def := chatTool{name: t.Name, parameters: t.InputSchema}
		if t.Description.Kind() == '"' {
			def.desc = t.Description
		}
		out.tools = append(out.tools, def)
	}
	if tc := req.ToolChoice; tc != nil && len(out.tools) > 0 {
		switch tc.Type {
		case "auto", "none":
			out.toolChoice = jsontext.Value(`"` + tc.Type + `"`)
		case "any":
			out.toolChoice = jsontext.Value(`"required"`)
		case "tool":
			out.toolChoiceName = tc.Name
		}
		if tc.DisableParallelToolUse {
			out.parallelToolCalls = new(bool)
		}
	}
	for _, f := range [...]struct {
		v   jsontext.Value
		dst *jsontext.Value
	}{{req.Temperature, &out.temperature}, {req.TopP, &out.topP}, {req.TopK, &out.topK}} {
		if f.v.Kind() == '0' {
			*f.dst = f.v
		}
	}
	if md := req.Metadata; md != nil && md.UserID.Kind() == '"' {
		out.user = md.UserID
	}
	if b.target.SupportsReasoningEffort {
		out.reasoningEffort = reasoningEffort(req)
	}
	out.stream = req.Stream
	return out.append(w)
}
