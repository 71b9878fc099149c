package main

import (
	"os"
	"strings"
)

// The cost of recovering tool calls written as text (issue 38): the B
// Dragoman of --ab gets --ab-params in the proxy_params of every route,
// so that one binary is compared under two per-route settings:
//
//	bin/bench --ab bin/proxy --ab-params "tool_calls_in_text: off" --cases "messages 54 KB stream"
//
// A (the default, tool_calls_in_text: auto) scans every content delta of
// the stub's answer (the 54 KB request offers the coding client's tools);
// B passes it as before. The target: A's added p50 at most 1.1 × B's.

// addRouteParams writes params (YAML lines such as "tool_calls_in_text:
// off", separated by newlines or commas) into the proxy_params of every
// route of the config file at path.
func addRouteParams(path, params string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var lines strings.Builder
	for _, p := range strings.FieldsFunc(params, func(r rune) bool { return r == '\n' || r == ',' }) {
		if p = strings.TrimSpace(p); p != "" {
			lines.WriteString("      " + p + "\n")
		}
	}
	cfg := strings.ReplaceAll(string(b), "    proxy_params:\n", "    proxy_params:\n"+lines.String())
	return os.WriteFile(path, []byte(cfg), 0o600)
}

// textCallsCase is the case whose added p50 make bench compares between
// tool_calls_in_text auto (the default) and off: the streamed 54 KB
// Messages answer, the coding client's request with its tools.
func (k *kase) textCallsCase() bool {
	return k.api == "messages" && k.large && k.stream
}
