package metrics

import (
	"testing"
	"time"
)

// BenchmarkObserve: what reporting one finished stream request costs (make
// bench prints the same figure beside the end-to-end on/off comparison).
func BenchmarkObserve(b *testing.B) {
	m := New(Setup{Version: "test", Routes: []Route{{Alias: "a", Backend: "b"}}})
	r := &Request{Endpoint: EndpointMessages, Alias: "a", Backend: "b", Status: 200, ErrorType: ErrorNone,
		Duration: time.Second, FirstToken: 300 * time.Millisecond, Usage: &Usage{Input: 10, Output: 20}}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(r)
	}
}
