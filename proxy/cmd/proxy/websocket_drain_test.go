package main

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestWebSocketDrainOnSIGTERM: SIGTERM while a Responses WebSocket
// response streams: the response runs to response.completed, then the
// proxy sends the close frame 1001 and exits 0 (http.Server.Shutdown does
// not wait for hijacked connections: main waits for them).
func TestWebSocketDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	backend := stub.New(stub.Options{Events: 20, EventDelay: 100 * time.Millisecond}) // 2 s a stream
	p := startProxy(t, serveBackend(t, backend), "--grace", "20s", "--drain-delay", "500ms")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(p.url, "http")+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + clientKey}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	frame := `{"type":"response.create","model":"claude-opus-5-5","stream":true,"input":"a slow answer"}`
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	sigterm := false
	completed := false
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway {
				t.Fatalf("the connection ended with %v, want the close 1001", err)
			}
			break
		}
		s := string(data)
		if strings.Contains(s, `"response.output_text.delta"`) {
			text.WriteString(s)
			if !sigterm {
				sigterm = true
				if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
		}
		if strings.Contains(s, `"type":"response.completed"`) {
			completed = true
		}
	}
	if n := strings.Count(text.String(), "output_text.delta"); !completed || n < 15 {
		t.Errorf("the response in flight did not finish: completed %v, %d deltas", completed, n)
	}
	if code := p.exitCode(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), `reason="proxy shutting down"`) {
		t.Errorf("no close line for the WebSocket:\n%s", p.stderr.String())
	}
}
