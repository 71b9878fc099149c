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
		Duration: time.Second, FirstToken: 300 * time.Millisecond, Usage: Usage{Input: 10, Output: 20}}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(r)
	}
}

// TestObserveAllocatesNothing: reporting a request allocates nothing, on
// a route known at start-up (its series resolved there) and on an outcome
// seen before (its counter resolved the first time).
func TestObserveAllocatesNothing(t *testing.T) {
	m := New(Setup{Version: "test", Routes: []Route{{Alias: "a", Backend: "b"}}})
	for _, r := range []*Request{
		{Endpoint: EndpointMessages, Alias: "a", Backend: "b", Status: 200, ErrorType: ErrorNone, Duration: time.Second},
		{Endpoint: EndpointMessages, Alias: "a", Backend: "b", Status: 200, ErrorType: ErrorNone, Duration: time.Second,
			FirstToken: 300 * time.Millisecond, Usage: Usage{Input: 10, Output: 20, CacheRead: 5, Reasoning: 3}, Pings: 2},
		{Endpoint: EndpointChat, Alias: "a", Backend: "b", Status: StatusClientClosed, ErrorType: ErrorClientDisconnect, Duration: time.Second, Disconnect: true},
		{Endpoint: EndpointMessages, Alias: Unknown, Backend: Unknown, Status: 404, ErrorType: "not_found"},
	} {
		m.Observe(r)
		if n := testing.AllocsPerRun(100, func() { m.Observe(r) }); n != 0 {
			t.Errorf("Observe(%+v): %v allocations, want 0", *r, n)
		}
	}
	for name, f := range map[string]func(){
		"Retried":      func() { m.Retried("b", "status_503") },
		"SessionMoved": func() { m.SessionMoved("a", "down") },
		"QueueWait":    func() { m.QueueWait("b", time.Millisecond) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}
