package server

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/textcall"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// chunkStream is a backend's Chat stream: a content chunk for each Read
// until chunks are sent (then io.EOF; -1: never), or until it is closed.
type chunkStream struct {
	mu     sync.Mutex
	chunks int
	closed bool
}

func (s *chunkStream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return 0, io.ErrClosedPipe
	case s.chunks == 0:
		return 0, io.EOF
	}
	s.chunks--
	return copy(p, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"more text \"}}]}\n\n"), nil
}

func (s *chunkStream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// TestTextCallBodyCloseWhileReading: Close from another goroutine (as
// drain's timer closes a body) while Reads are under way, or just after
// the last one, neither races with the filter (go test -race: a CI run
// caught Close's count of the recovered calls beside the last Read's) nor
// waits for them, and ends them.
func TestTextCallBodyCloseWhileReading(t *testing.T) {
	for _, chunks := range []int{-1, 3} {
		closeWhileReading(t, chunks)
	}
}

func closeWhileReading(t *testing.T, chunks int) {
	o := &textcall.Options{Families: textcall.All, Tools: []textcall.Tool{{Name: "Bash"}}}
	counted := 0
	b := &textCallBody{in: &chunkStream{chunks: chunks}, stream: translate.NewChatTextCalls(o, "call_x_"), count: func(textcall.Family) { counted++ }}
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 512)
		for {
			if _, err := b.Read(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if chunks < 0 && !strings.Contains(err.Error(), "closed") || chunks >= 0 && err != io.EOF {
			t.Errorf("%d chunks: the Read ended with %v", chunks, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the Reads")
	}
	if counted != 0 {
		t.Errorf("%d calls counted in a stream of plain text", counted)
	}
}
