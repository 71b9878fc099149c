//go:build !race

package server_test

// raceDetector: the race detector is on; its own allocations make
// allocation counts inexact.
const raceDetector = false
