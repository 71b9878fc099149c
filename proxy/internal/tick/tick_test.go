package tick

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestEveryRunsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		Every(ctx, 5*time.Millisecond, func(context.Context) {
			if n.Add(1) == 3 {
				cancel()
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if got := n.Load(); got < 3 {
		t.Fatalf("job ran %d times, want at least 3", got)
	}
}

func TestEveryZeroReturnsAtOnce(t *testing.T) {
	Every(context.Background(), 0, func(context.Context) { t.Fatal("job ran with interval 0") })
}
