package warm

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// fakeClock is the loop's time in a test: it moves only when the loop
// waits, and only once the loop is idle (no warm request in flight), by
// as much as the loop would wait then.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// after is Loop.After for l: it waits for l to be idle, then moves the
// clock to l's next due time and fires.
func (c *fakeClock) after(l *Loop) func(time.Duration) <-chan time.Time {
	return func(time.Duration) <-chan time.Time {
		for {
			l.mu.Lock()
			busy := false
			for _, st := range l.state {
				busy = busy || st.busy
			}
			l.mu.Unlock()
			if !busy {
				break
			}
			time.Sleep(time.Millisecond)
		}
		d := l.untilNext()
		c.mu.Lock()
		c.now = c.now.Add(d)
		now := c.now
		c.mu.Unlock()
		ch := make(chan time.Time, 1)
		ch <- now
		return ch
	}
}

// ollamaKeepAlive stands in for Ollama v0.17.4 with OLLAMA_KEEP_ALIVE=20s
// on the fake clock: a request loads the model (a cold load when it had
// expired) and keeps it loaded 20 s from then; GET /api/ps lists it, with
// expires_at, while it is loaded. withPS false: a server without
// /api/ps (the warmer cannot know the keep-alive).
type ollamaKeepAlive struct {
	clock     *fakeClock
	keepAlive time.Duration
	withPS    bool

	mu          sync.Mutex
	loadedUntil time.Time
	loads       int // cold loads, the first included
	requests    int
}

func (o *ollamaKeepAlive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := o.clock.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	switch r.URL.Path {
	case "/api/ps":
		if !o.withPS {
			http.NotFound(w, r)
			return
		}
		models := `[]`
		if now.Before(o.loadedUntil) {
			models = fmt.Sprintf(`[{"name":"rigged:latest","model":"rigged:latest","size":26062592,"expires_at":%q,"size_vram":0,"context_length":4096}]`,
				o.loadedUntil.Format(time.RFC3339Nano))
		}
		fmt.Fprintf(w, `{"models":%s}`, models)
	case "/v1/chat/completions":
		o.requests++
		if !now.Before(o.loadedUntil) {
			o.loads++
		}
		o.loadedUntil = now.Add(o.keepAlive)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":%d,"model":"rigged","choices":[{"index":0,"message":{"role":"assistant","content":"p"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, now.Unix())
	default:
		http.NotFound(w, r)
	}
}

// runFor runs a loop over one Ollama-shaped target with the default 20 s
// interval for span of fake time and returns the stand-in.
func runFor(t *testing.T, span time.Duration, withPS bool) *ollamaKeepAlive {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	o := &ollamaKeepAlive{clock: clock, keepAlive: 20 * time.Second, withPS: withPS}
	base := startHandler(t, o.ServeHTTP)
	w, _ := newWarmer(5 * time.Second)
	l := &Loop{Warmer: w, Interval: 20 * time.Second, Now: clock.Now, Targets: []Target{{Model: "rigged", APIBase: base, APIKey: testKey}}}
	l.After = clock.after(l)
	start := clock.Now()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	waitFor(t, 20*time.Second, "the fake clock to run "+span.String(), func() bool { return clock.Now().Sub(start) >= span })
	cancel()
	<-done
	return o
}

// TestWarmerKeepsOllamaModelLoaded: with a 20 s keep-alive and the default
// 20 s interval, the warmer reads expires_at and warms before it: over 5
// minutes the model is loaded once and never unloads. Without /api/ps (the
// same timing, nothing to read) it unloads again and again: the test sees
// an unload when there is one.
func TestWarmerKeepsOllamaModelLoaded(t *testing.T) {
	t.Parallel()
	o := runFor(t, 5*time.Minute, true)
	o.mu.Lock()
	loads, requests := o.loads, o.requests
	o.mu.Unlock()
	t.Logf("with /api/ps: %d load(s), %d warm requests in 5 minutes", loads, requests)
	if loads != 1 {
		t.Errorf("the model was loaded %d times in 5 minutes (%d warm requests), want once: it unloaded between warm-ups", loads, requests)
	}
	if requests < 15 || requests > 40 {
		t.Errorf("%d warm requests in 5 minutes of a 20 s keep-alive, want one about every 15 s", requests)
	}

	blind := runFor(t, 5*time.Minute, false)
	blind.mu.Lock()
	defer blind.mu.Unlock()
	t.Logf("without /api/ps: %d loads, %d warm requests", blind.loads, blind.requests)
	if blind.loads < 5 {
		t.Errorf("without /api/ps, %d loads in 5 minutes: the stand-in does not unload on a 20 s interval", blind.loads)
	}
}
