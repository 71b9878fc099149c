package upstream_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// A body given with Recycle comes back exactly once, whole, after the
// backend has read it; the backend saw every byte.
func TestRecycleAfterTheBodyIsSent(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 6000)
	read := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		read <- b
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	var mu sync.Mutex
	var recycled [][]byte
	call := upstream.Call{BaseURL: srv.URL, Path: "/x", Body: body, Timeout: 5 * time.Second,
		Recycle: func(b []byte) { mu.Lock(); recycled = append(recycled, b); mu.Unlock() }}
	for range 3 {
		resp, err := upstream.NewPool().Do(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := <-read; !bytes.Equal(got, body) {
			t.Fatalf("backend read %d bytes, want %d", len(got), len(body))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(recycled)
		mu.Unlock()
		if n == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recycled) != 3 {
		t.Fatalf("recycled %d times for 3 calls", len(recycled))
	}
	for _, b := range recycled {
		if &b[0] != &body[0] || len(b) != len(body) {
			t.Fatal("recycled something else than the body")
		}
	}
}

// A backend that answers without reading the body: the body still comes
// back once, when the transport is done with it.
func TestRecycleWhenTheBackendAnswersEarly(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 4<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"no"}}`))
	}))
	defer srv.Close()
	recycled := make(chan struct{}, 2)
	call := upstream.Call{BaseURL: srv.URL, Path: "/x", Body: body, Timeout: 5 * time.Second,
		Recycle: func([]byte) { recycled <- struct{}{} }}
	if _, err := upstream.NewPool().Do(context.Background(), call); err == nil {
		t.Fatal("want the backend's 400")
	}
	select {
	case <-recycled:
	case <-time.After(5 * time.Second):
		t.Fatal("never recycled")
	}
	select {
	case <-recycled:
		t.Fatal("recycled twice")
	case <-time.After(100 * time.Millisecond):
	}
}

// A backend that reads the body and is slow to answer (a cold model): the
// body goes once it was sent whole, before the answer, not when it comes.
func TestRecycleBeforeASlowAnswer(t *testing.T) {
	body := bytes.Repeat([]byte("y"), 54<<10)
	answer := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-answer
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	defer close(answer)
	recycled := make(chan struct{}, 2)
	call := upstream.Call{BaseURL: srv.URL, Path: "/x", Body: body, Timeout: 5 * time.Second,
		Recycle: func([]byte) { recycled <- struct{}{} }}
	done := make(chan error, 1)
	go func() {
		resp, err := upstream.NewPool().Do(context.Background(), call)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-recycled:
	case err := <-done:
		t.Fatalf("answered (%v) before the body was let go", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the body was held while the backend was slow to answer")
	}
}
