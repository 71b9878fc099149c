package server

import "time"

// SetDrainWait sets how long relay waits for the rest of a backend's
// stream after its end, and returns the setting before.
func SetDrainWait(d time.Duration) time.Duration {
	old := drainWait
	drainWait = d
	return old
}

// SetAdmission gives s an admission budget of budget bytes, each share
// held at most hold, and returns what restores the hold before.
func SetAdmission(s *Server, budget int64, hold time.Duration) (restore func()) {
	old := admissionHold
	admissionHold = hold
	s.admission = newAdmission(budget)
	return func() { admissionHold = old }
}
