package server

import "time"

// SetDrainWait sets how long relay waits for the rest of a backend's
// stream after its end, and returns the setting before.
func SetDrainWait(d time.Duration) time.Duration {
	old := drainWait
	drainWait = d
	return old
}
