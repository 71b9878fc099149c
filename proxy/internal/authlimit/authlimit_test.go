package authlimit

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestTenFailuresAMinute: an address is refused after 10 failures within a
// minute, with the wait until the oldest is a minute old; another address
// is not; once the minute has passed it may attempt again. Concurrent
// use is safe (go test -race).
func TestTenFailuresAMinute(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := New(clock)
	throttled := 0
	l.Throttled = func() { throttled++ }
	for i := range MaxFailures {
		if _, ok := l.Allow("10.0.0.1"); !ok {
			t.Fatalf("refused after %d failures", i)
		}
		l.Failed("10.0.0.1")
		mu.Lock()
		now = now.Add(time.Second)
		mu.Unlock()
	}
	wait, ok := l.Allow("10.0.0.1")
	if ok || wait != 50*time.Second || throttled != 1 {
		t.Fatalf("after 10 failures: %v %v (throttled %d)", wait, ok, throttled)
	}
	if _, ok := l.Allow("10.0.0.2"); !ok {
		t.Fatal("another address refused")
	}
	mu.Lock()
	now = now.Add(50 * time.Second)
	mu.Unlock()
	if _, ok := l.Allow("10.0.0.1"); !ok {
		t.Fatal("refused once the minute has passed")
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := fmt.Sprint("10.1.0.", i%5)
			l.Failed(a)
			l.Allow(a)
			l.Succeeded(a)
		}()
	}
	wg.Wait()
}
