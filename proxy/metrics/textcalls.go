package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// newTextCalls is dragoman_text_tool_calls_total: the tool calls a
// backend model wrote as text in its answer and the proxy recovered, by
// alias and format (the family the call was written in), so that an
// operator sees which models slip. Every alias starts with a series of
// each family at 0.
func newTextCalls(routes []Route) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dragoman_text_tool_calls_total",
		Help: "Tool calls a backend model wrote as text in its answer's content and the proxy gave the client as real calls, by alias and format (the family it was written in: hermes, qwen3_coder, mistral…).",
	}, []string{"alias", "format"})
	seen := map[string]bool{}
	for _, r := range routes {
		if seen[r.Alias] {
			continue
		}
		seen[r.Alias] = true
		for _, f := range textcall.FamilyNames() {
			c.WithLabelValues(r.Alias, f)
		}
	}
	return c
}

// TextToolCall counts one tool call recovered from an answer's text.
func (m *Metrics) TextToolCall(alias string, f textcall.Family) {
	if m != nil {
		m.textCalls.WithLabelValues(alias, f.String()).Inc()
	}
}
