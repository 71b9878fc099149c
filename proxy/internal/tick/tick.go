// Package tick runs a job at a fixed interval until its context ends: the
// loop behind the balancer's health probes and the server's model
// discovery.
package tick

import (
	"context"
	"time"
)

// Every calls job every interval until ctx ends; with interval 0 or less it
// returns at once. The first call comes one interval after the start.
func Every(ctx context.Context, interval time.Duration, job func(context.Context)) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			job(ctx)
		}
	}
}
