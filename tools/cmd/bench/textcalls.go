package main

import (
	"fmt"
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

// textCallsPair starts the two Dragomans make bench compares for issue
// 38: tool_calls_in_text auto (the default) and off on every route. Each
// runs from a copy of its own and serves the one case alone, so that the
// two differ in the setting only. Compared with the table's main Dragoman
// instead, off ran one binary file with it (processes that run one file
// share its code's pages in the CPU caches: privateCopy) and had served
// none of the cases before, while the main one had served them all; that
// put auto 1.11× and 1.16× behind off in two full runs where --ab,
// interleaving two copies, measured 1.04× and 1.05×.
func (r *runner) textCallsPair(stub *proc) (auto, off *proc, err error) {
	bin, params := r.proxyBin, r.dmParams
	defer func() { r.proxyBin, r.dmParams = bin, params }()
	var pair [2]*proc
	for i, name := range [2]string{"dragoman-textcalls-auto", "dragoman-textcalls-off"} {
		if r.proxyBin, err = privateCopy(bin, r.dir, name); err != nil {
			return nil, nil, fmt.Errorf("copying %s: %w", bin, err)
		}
		r.dmParams = params
		if i == 1 {
			r.dmParams = strings.TrimPrefix(params+",tool_calls_in_text: off", ",")
		}
		if pair[i], err = r.dragoman(name, stub, "warn"); err != nil {
			return nil, nil, err
		}
	}
	return pair[0], pair[1], nil
}

// textCallsCase is the case whose added p50 make bench compares between
// tool_calls_in_text auto (the default) and off: the streamed 54 KB
// Messages answer, the coding client's request with its tools.
func (k *kase) textCallsCase() bool {
	return k.api == "messages" && k.large && k.stream
}
