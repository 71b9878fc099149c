//go:build !race

package upstream_test

// raceDetector: the race detector is on; its own allocations, and
// sync.Pool dropping what it is given at random, make allocation counts
// inexact.
const raceDetector = false
