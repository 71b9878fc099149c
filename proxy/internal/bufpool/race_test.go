//go:build race

package bufpool

// raceEnabled: under the race detector sync.Pool drops a quarter of the
// buffers given back, on purpose.
const raceEnabled = true
