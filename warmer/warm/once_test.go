package warm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

var fastBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond}

func TestOnceRetriesLoadingModel(t *testing.T) {
	t.Parallel()
	s, base := startStub(t, stub.Options{Loading: 700 * time.Millisecond})
	w, logs := newWarmer(5 * time.Second)
	out := w.Once(t.Context(), []Target{{Model: "m", APIBase: base, APIKey: testKey}}, 10*time.Second, fastBackoff)
	if len(out) != 1 || !out[0].Answered || out[0].Err != nil {
		t.Fatalf("outcome = %+v, want answered", out)
	}
	// Waits 100, 200, 400, 400ms: the 503s end 700ms after the stub started,
	// by the 4th or 5th attempt (fewer on a slow machine).
	if out[0].Attempts < 2 || out[0].Attempts > 6 || out[0].Attempts != len(s.Requests()) {
		t.Errorf("%d attempts, stub saw %d requests; want 2..6, the same", out[0].Attempts, len(s.Requests()))
	}
	if !strings.Contains(logs.String(), "Loading model") || !strings.Contains(logs.String(), "retry_in=") {
		t.Errorf("the 503 retries were not logged:\n%s", logs)
	}
}

func TestOnceRetriesConnectionRefused(t *testing.T) {
	t.Parallel()
	// Reserve a loopback port, free it, and start the backend there later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := stub.New(stub.Options{})
	started := make(chan *httptest.Server, 1)
	go func() {
		defer close(started)
		time.Sleep(600 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return
		}
		srv := httptest.NewUnstartedServer(s)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		started <- srv
	}()
	defer func() {
		if srv := <-started; srv != nil {
			srv.Close()
		}
	}()
	w, logs := newWarmer(5 * time.Second)
	out := w.Once(t.Context(), []Target{{Model: "m", APIBase: "http://" + addr + "/v1", APIKey: testKey}}, 10*time.Second, fastBackoff)
	if !out[0].Answered || out[0].Attempts < 2 {
		t.Fatalf("outcome = %+v, want answered after retries", out[0])
	}
	if len(s.Requests()) != 1 || !strings.Contains(logs.String(), "connection refused") {
		t.Errorf("stub saw %d requests (want 1), logs:\n%s", len(s.Requests()), logs)
	}
}

func TestOnceDeadlineNamesTheSilentModel(t *testing.T) {
	t.Parallel()
	_, goodBase := startStub(t, stub.Options{})
	silentBase := startHandler(t, blockUntilGone)
	w, _ := newWarmer(time.Minute)
	start := time.Now()
	out := w.Once(t.Context(), []Target{
		{Model: "fine", APIBase: goodBase, APIKey: testKey},
		{Model: "silent", APIBase: silentBase, APIKey: testKey},
	}, time.Second, fastBackoff)
	// The silent backend never answers: only the deadline ends Once (the
	// DeadlineError below says it did), and not before it. How soon after
	// it a loaded machine returned is not bounded here.
	if el := time.Since(start); el < time.Second {
		t.Errorf("Once took %s, less than its 1s deadline", el)
	}
	if !out[0].Answered || out[0].Target.Model != "fine" {
		t.Errorf("fine: %+v, want answered", out[0])
	}
	var de *DeadlineError
	if out[1].Answered || !errors.As(out[1].Err, &de) || !de.Waiting || de.Attempts != 1 {
		t.Fatalf("silent: %+v, want a DeadlineError while waiting on its only attempt", out[1])
	}
	if msg := out[1].Err.Error(); !strings.Contains(msg, "WARMER_DEADLINE (1s)") || !strings.Contains(msg, "still waiting") {
		t.Errorf("message %q", msg)
	}
}

func TestOnceGivesUpAtOnceOnAuthError(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	base := startHandler(t, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
	})
	w, _ := newWarmer(5 * time.Second)
	// One attempt, one call: no retry (not a wall-clock bound).
	out := w.Once(t.Context(), []Target{{Model: "m", APIBase: base, APIKey: testKey}}, 10*time.Second, fastBackoff)
	var se *StatusError
	if out[0].Answered || !errors.As(out[0].Err, &se) || se.Code != 401 || out[0].Attempts != 1 || calls.Load() != 1 {
		t.Fatalf("outcome %+v after %d calls, want one 401 and no retry", out[0], calls.Load())
	}
}

func TestOnceInterrupted(t *testing.T) {
	t.Parallel()
	base := startHandler(t, blockUntilGone)
	w, _ := newWarmer(time.Minute)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	out := w.Once(ctx, []Target{{Model: "m", APIBase: base, APIKey: testKey}}, time.Minute, fastBackoff)
	var de *DeadlineError
	if out[0].Answered || errors.As(out[0].Err, &de) || !strings.Contains(out[0].Err.Error(), "interrupted") {
		t.Fatalf("outcome %+v, want interrupted (not a deadline)", out[0])
	}
}
