package main

import (
	"testing"
	"time"
)

// TestSessionsGoals: the must-shows follow the figures: prefill / ideal
// at most 1.15, the saturated TTFT p90 within 1.1 × least-busy's without
// errors, the moves metric within a quarter of the servers' count.
func TestSessionsGoals(t *testing.T) {
	aff := sessionsRouter{name: "session-affinity", strategy: "session-affinity"}
	lb := sessionsRouter{name: "least-busy", strategy: "least-busy"}
	small, sat := sessionsWorkload{"24×6", 24, 6, 8}, sessionsWorkload{"saturated", 64, 6, 32}
	ttft := func(p90 time.Duration) []time.Duration {
		var xs []time.Duration
		for range 9 {
			xs = append(xs, time.Millisecond)
		}
		return append(xs, p90, p90)
	}
	res := &sessionsResult{runs: []*sessionsRun{
		{workload: small, router: aff, replicas: 3, prefill: 114, ideal: 100, metricMoves: 10, serverAway: 8},
		{workload: small, router: aff, replicas: 1, prefill: 116, ideal: 100},
		{workload: sat, router: aff, replicas: 3, ttft: ttft(110 * time.Millisecond), metricMoves: 10, serverAway: 7},
		{workload: sat, router: lb, replicas: 3, ttft: ttft(100 * time.Millisecond)},
		{workload: sat, router: aff, replicas: 1, ttft: ttft(120 * time.Millisecond)},
		{workload: sat, router: lb, replicas: 1, ttft: ttft(100 * time.Millisecond)},
	}}
	want := []bool{true, false, true, false, true, false} // 1.14, 1.16; 1.10×, 1.20×; 10 vs 8, 10 vs 7
	got := res.goals()
	if len(got) != len(want) {
		t.Fatalf("%d goals, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		if g.met != want[i] {
			t.Errorf("%s (%s): met %v, want %v", g.what, g.got, g.met, want[i])
		}
	}
	merged := mergeRuns([]*sessionsRun{res.runs[2], res.runs[2]})
	if len(merged) != 1 || merged[0].reps != 2 || len(merged[0].ttft) != 22 || merged[0].metricMoves != 20 || res.runs[2].metricMoves != 10 {
		t.Errorf("merged %+v", merged[0])
	}
}
