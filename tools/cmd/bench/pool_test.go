package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestMedianCI: the median and its order-statistic bounds of a known
// sample, and an interval that holds the true median of a noisy one.
func TestMedianCI(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 101; i++ {
		xs = append(xs, time.Duration(i))
	}
	// n = 101: half-width 1.96·√101/2 = 9.85 ranks around rank 50.
	if got, want := medianCI(xs), (interval{med: 51, lo: 41, hi: 61}); got != want {
		t.Errorf("medianCI(1..101) = %+v, want %+v", got, want)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	var noisy []time.Duration
	for range 20000 {
		noisy = append(noisy, 3*time.Microsecond+time.Duration(rnd.NormFloat64()*float64(100*time.Microsecond)))
	}
	v := medianCI(noisy)
	if v.lo > 3*time.Microsecond || v.hi < 3*time.Microsecond || v.hi-v.lo > 5*time.Microsecond {
		t.Errorf("20,000 draws of N(3 µs, 100 µs): %v, want an interval of under 5 µs around 3 µs", v)
	}
	if (medianCI(nil) != interval{}) {
		t.Error("an empty sample has an interval")
	}
}

// TestPoolGoalFollowsTheUpperBounds: met only when both upper bounds are
// within the limit.
func TestPoolGoalFollowsTheUpperBounds(t *testing.T) {
	us := time.Microsecond
	for _, c := range []struct {
		lat, cpu interval
		met      bool
	}{
		{interval{1 * us, -1 * us, 3 * us}, interval{0, -2 * us, 2 * us}, true},
		{interval{1 * us, -4 * us, 6 * us}, interval{0, -2 * us, 2 * us}, false}, // wide: cannot tell
		{interval{1 * us, -1 * us, 3 * us}, interval{4 * us, 3 * us, 5*us + 1}, false},
		{interval{5 * us, 5 * us, 5 * us}, interval{5 * us, 5 * us, 5 * us}, true},
	} {
		p := &poolResult{lat: [3]interval{c.lat}, cpuDiff: [3]interval{c.cpu}}
		if p.met() != c.met || p.goal().met != c.met {
			t.Errorf("latency %v, CPU %v: met %v, want %v", c.lat, c.cpu, p.met(), c.met)
		}
	}
}
