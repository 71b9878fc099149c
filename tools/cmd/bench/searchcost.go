package main

import (
	"errors"
	"fmt"

	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// measureSearchScan is what web search costs a request that carries no web
// search tool while search_settings is on (issue 31): the server's look
// for the tool's mark in the body (translate.MessagesWebSearchTool), here
// on the recorded coding-client request of the 54 KB Messages cases.
// With search_settings off the server skips even that (a nil check).
func measureSearchScan(cases []*kase) (inProcess, error) {
	for _, k := range cases {
		if k.api != "messages" || !k.large {
			continue
		}
		if _, found := translate.MessagesWebSearchTool(k.body); found {
			return inProcess{}, errors.New("the 54 KB Messages case carries a web search tool: it cannot measure a request without one")
		}
		body := k.body
		return measure(func() { translate.MessagesWebSearchTool(body) }), nil
	}
	return inProcess{}, errors.New("no 54 KB Messages case to measure the web search scan on")
}

// searchGoal is issue 31's target line: a request without a web search
// tool pays nothing measurable: no allocation, and at most 1 % of the
// added p50 of the case it was measured on (ml, the 54 KB Messages
// non-stream case; the end-to-end A/A noise is ±3 %).
func (res *results) searchGoal(ml *caseResult) goal {
	t := res.searchScan
	const what, limit = "web search on, a request without its tool (issue 31)", "0 allocs, ≤ 1 % of the added p50"
	if t.perRequest == 0 || ml == nil {
		return goal{what, limit, "not measured: no 54 KB Messages case in this run", false}
	}
	added := ml.via[2].p50 - ml.via[0].p50
	got := fmt.Sprintf("%d ns, %d allocs per request (%.2f %% of the added p50 %s of %s)", t.perRequest.Nanoseconds(), t.allocs,
		100*float64(t.perRequest)/float64(added), us(added), ml.k.name)
	return goal{what, limit, got, t.allocs == 0 && added > 0 && float64(t.perRequest) <= 0.01*float64(added)}
}
