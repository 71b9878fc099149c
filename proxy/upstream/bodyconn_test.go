package upstream_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// Writing a 54 KB body to the socket takes no buffer of its own: a TCP
// connection's ReadFrom allocated 32 KB for each (bodyConn).
func TestBodyWrittenWithoutACopyBuffer(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts are not exact under -race (make test runs this without it)")
	}
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	}), nil)
	pool := upstream.NewPool()
	body := bytes.Repeat([]byte("w"), 54<<10)
	do := func() {
		resp, err := pool.Do(context.Background(), upstream.Call{BaseURL: srv, Path: "/x", Body: body, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do() // the connection dialed
	const calls = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		do()
	}
	runtime.ReadMemStats(&after)
	// Client and backend together, headers and all, allocate about 10 KB
	// a call here.
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > 24<<10 {
		t.Fatalf("%d bytes allocated a call, want at most 24 KB", per)
	}
}
