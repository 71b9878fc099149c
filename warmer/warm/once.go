package warm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Backoff is the wait between attempts of Once: Initial, doubling each
// time, never more than Max.
type Backoff struct {
	Initial, Max time.Duration
}

// DefaultBackoff waits 500ms, 1s, 2s, 4s, 8s, then 10s between attempts.
var DefaultBackoff = Backoff{Initial: 500 * time.Millisecond, Max: 10 * time.Second}

// Outcome is how Once ended for one target.
type Outcome struct {
	Target   Target
	Answered bool // a 2xx came back
	Attempts int
	Elapsed  time.Duration
	Err      error // why it did not answer; nil when Answered
}

// DeadlineError is a target that had not answered when the deadline passed.
type DeadlineError struct {
	Deadline time.Duration
	Attempts int
	Waiting  bool  // the last request was still waiting for an answer
	Last     error // the last attempt that ended with an error, if any
}

func (e *DeadlineError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no answer within WARMER_DEADLINE (%s) after %d attempt(s)", e.Deadline, e.Attempts)
	if e.Waiting {
		b.WriteString("; the last request was still waiting for an answer")
	}
	if e.Last != nil {
		fmt.Fprintf(&b, "; last error: %v", e.Last)
	}
	return b.String()
}

func (e *DeadlineError) Unwrap() error { return e.Last }

var errDeadline = errors.New("WARMER_DEADLINE passed")

// Once warms every target at the same time until each has answered with a
// 2xx, or deadline passes, or ctx ends. A target retries with backoff
// after a failure that may go away (connection refused, time-out, 5xx such
// as 503 "Loading model", 429) and gives up at once on other 4xx. The
// outcomes are in the order of targets.
func (w *Warmer) Once(ctx context.Context, targets []Target, deadline time.Duration, backoff Backoff) []Outcome {
	if backoff.Initial <= 0 {
		backoff = DefaultBackoff
	}
	backoff.Max = max(backoff.Max, backoff.Initial)
	ctx, cancel := context.WithTimeoutCause(ctx, deadline, errDeadline)
	defer cancel()
	out := make([]Outcome, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { out[i] = w.untilAnswered(ctx, t, deadline, backoff) })
	}
	wg.Wait()
	return out
}

func (w *Warmer) untilAnswered(ctx context.Context, t Target, deadline time.Duration, backoff Backoff) Outcome {
	start := time.Now()
	out := Outcome{Target: t}
	wait := backoff.Initial
	var last error
	gaveUp := func(waiting bool) Outcome {
		out.Elapsed = time.Since(start)
		if errors.Is(context.Cause(ctx), errDeadline) {
			out.Err = &DeadlineError{Deadline: deadline, Attempts: out.Attempts, Waiting: waiting, Last: last}
		} else if last != nil {
			out.Err = fmt.Errorf("interrupted after %d attempt(s); last error: %w", out.Attempts, last)
		} else {
			out.Err = fmt.Errorf("interrupted after %d attempt(s)", out.Attempts)
		}
		return out
	}
	for {
		out.Attempts++
		res := w.Warm(ctx, t)
		if res.OK() {
			w.logResult(res, slog.Int("attempt", out.Attempts))
			out.Answered, out.Elapsed = true, time.Since(start)
			return out
		}
		if ctx.Err() != nil {
			return gaveUp(true)
		}
		last = res.Err
		if !Retryable(res.Err) {
			w.logResult(res, slog.Int("attempt", out.Attempts), slog.String("retry", "no: this error will not go away by waiting"))
			out.Err, out.Elapsed = res.Err, time.Since(start)
			return out
		}
		w.logResult(res, slog.Int("attempt", out.Attempts), slog.Duration("retry_in", wait))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return gaveUp(false)
		case <-timer.C:
		}
		wait = min(2*wait, backoff.Max)
	}
}
