package server_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	trace "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// wsClient is a real WebSocket client (coder/websocket's) on the proxy's
// Responses WebSocket, as Codex opens it.
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialResponses(t *testing.T, h *harness, key string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+key)
	hdr.Set("OpenAI-Beta", "responses_websockets=2026-02-06")
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.proxy.URL, "http")+"/v1/responses", &websocket.DialOptions{
		HTTPHeader: hdr, CompressionMode: websocket.CompressionContextTakeover,
	})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	c.SetReadLimit(1 << 24)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: t, c: c}
}

func (w *wsClient) send(frame string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		w.t.Fatalf("write: %v", err)
	}
}

// event is one frame the proxy sent.
type event map[string]any

func (e event) typ() string { s, _ := e["type"].(string); return s }

// response reads frames until one ends the response (response.completed,
// response.failed or an error frame) and returns them all.
func (w *wsClient) response() []event {
	w.t.Helper()
	var out []event
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		typ, data, err := w.c.Read(ctx)
		cancel()
		if err != nil {
			w.t.Fatalf("read after %d frames: %v", len(out), err)
		}
		if typ != websocket.MessageText {
			w.t.Fatalf("a binary frame")
		}
		var e event
		if err := json.Unmarshal(data, &e); err != nil {
			w.t.Fatalf("a frame that is not JSON: %q", data)
		}
		out = append(out, e)
		switch e.typ() {
		case "response.completed", "response.failed", "error":
			return out
		}
	}
}

// closeStatus reads until the connection ends and returns its close code.
func (w *wsClient) closeStatus() websocket.StatusCode {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, data, err := w.c.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err)
		}
		w.t.Logf("frame before the close: %s", data)
	}
}

func last(evs []event) event { return evs[len(evs)-1] }

func completedID(t *testing.T, evs []event) string {
	t.Helper()
	e := last(evs)
	if e.typ() != "response.completed" {
		t.Fatalf("the response ended with %v", e)
	}
	r, _ := e["response"].(map[string]any)
	id, _ := r["id"].(string)
	if id == "" {
		t.Fatalf("response.completed without an id: %v", e)
	}
	return id
}

// outputItems are the items of the response's output_item.done events.
func outputItems(evs []event) []any {
	var items []any
	for _, e := range evs {
		if e.typ() == "response.output_item.done" {
			items = append(items, e["item"])
		}
	}
	return items
}

func outputText(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.typ() == "response.output_text.delta" {
			s, _ := e["delta"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func userItem(text string) string {
	b, _ := json.Marshal(map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}})
	return string(b)
}

func create(extra string, items ...string) string {
	return `{"type":"response.create","model":"local-model","instructions":"Be brief.","store":false,"stream":true` + extra + `,"input":[` + strings.Join(items, ",") + `]}`
}

// TestWebSocketPlainAnswer: one response.create, its events as frames in
// order (created … output_text deltas … completed), the same events an
// SSE stream carries; two requests in sequence on one connection.
func TestWebSocketPlainAnswer(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	for _, say := range []string{"hello over a socket", "and again"} {
		ws.send(create("", userItem(say)))
		evs := ws.response()
		if evs[0].typ() != "response.created" {
			t.Errorf("first frame %v", evs[0])
		}
		completedID(t, evs)
		if got := outputText(evs); !strings.Contains(got, say) {
			t.Errorf("text %q does not echo %q", got, say)
		}
		for i, e := range evs {
			if n, _ := e["sequence_number"].(float64); int(n) != i {
				t.Errorf("frame %d has sequence_number %v", i, e["sequence_number"])
				break
			}
		}
	}
	if n := len(h.backendRequests()); n != 2 {
		t.Errorf("backend requests: %d, want 2", n)
	}
	if !strings.Contains(h.logs.String(), `path=/v1/responses status=200`) {
		t.Errorf("no access log line for the WebSocket's requests:\n%s", h.logs.String())
	}
}

const shellTool = `,"tools":[{"type":"function","name":"exec_command","description":"Runs a command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}]`

// TestWebSocketToolCall: a function call comes back as an output item;
// its output, sent incrementally (previous_response_id and the new item
// only), reaches the backend after the call, and the model answers it.
func TestWebSocketToolCall(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	ws.send(create(shellTool, userItem("stub:shell ls -la")))
	evs := ws.response()
	id := completedID(t, evs)
	items := outputItems(evs)
	var call map[string]any
	for _, it := range items {
		if m := it.(map[string]any); m["type"] == "function_call" {
			call = m
		}
	}
	if call == nil || call["name"] != "exec_command" || !strings.Contains(call["arguments"].(string), "ls -la") {
		t.Fatalf("no exec_command call in %v", items)
	}
	out := `{"type":"function_call_output","call_id":"` + call["call_id"].(string) + `","output":"total 0"}`
	ws.send(create(shellTool+`,"previous_response_id":"`+id+`"`, out))
	evs = ws.response()
	completedID(t, evs)
	if got := outputText(evs); !strings.Contains(got, "Got the tool result: total 0") {
		t.Errorf("answer to the tool result: %q", got)
	}
	reqs := h.backendRequests()
	msgs := reqs[len(reqs)-1]["messages"].([]any)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if want := []string{"system", "user", "assistant", "tool"}; !reflect.DeepEqual(roles, want) {
		t.Errorf("backend roles %v, want %v", roles, want)
	}
}

// TestWebSocketIncrementalInput: three requests, the second and third with
// previous_response_id and only their new items; the backend sees the
// whole conversation, the same messages an HTTP request with the full
// input gets.
func TestWebSocketIncrementalInput(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	full := []string{}
	prev := ""
	for i, say := range []string{"first turn", "second turn", "third turn"} {
		extra := ""
		if prev != "" {
			extra = `,"previous_response_id":"` + prev + `"`
		}
		ws.send(create(extra, userItem(say)))
		evs := ws.response()
		prev = completedID(t, evs)
		full = append(full, userItem(say))
		if i < 2 {
			for _, it := range outputItems(evs) {
				b, _ := json.Marshal(it)
				full = append(full, string(b))
			}
		}
	}
	reqs := h.backendRequests()
	if len(reqs) != 3 {
		t.Fatalf("backend requests: %d", len(reqs))
	}
	wsMessages := reqs[2]["messages"]
	// The same conversation over HTTP, whole.
	body := `{"model":"local-model","instructions":"Be brief.","store":false,"stream":true,"input":[` + strings.Join(full, ",") + `]}`
	resp := h.post("/v1/responses", body)
	drain(t, resp)
	reqs = h.backendRequests()
	if got := reqs[3]["messages"]; !reflect.DeepEqual(wsMessages, got) {
		t.Errorf("the backend saw over WebSocket\n%v\nand over HTTP\n%v", wsMessages, got)
	}
	texts := []string{}
	for _, m := range wsMessages.([]any) {
		b, _ := json.Marshal(m.(map[string]any)["content"])
		texts = append(texts, string(b))
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"first turn", "You said: first turn", "second turn", "You said: second turn", "third turn"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the third backend request lacks %q: %s", want, joined)
		}
	}
	// An id this connection does not know: previous_response_not_found,
	// and the connection still serves.
	ws.send(create(`,"previous_response_id":"resp_unknown"`, userItem("lost")))
	e := last(ws.response())
	errObj, _ := e["error"].(map[string]any)
	if e.typ() != "error" || e["status"] != float64(400) || errObj["code"] != "previous_response_not_found" {
		t.Errorf("unknown previous_response_id: %v", e)
	}
	ws.send(create("", userItem("whole again")))
	completedID(t, ws.response())
	// Over HTTP previous_response_id is still refused.
	resp, b := h.do(http.MethodPost, "/v1/responses", `{"model":"local-model","previous_response_id":"`+prev+`","input":"x"}`, nil, false)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "previous_response_id") {
		t.Errorf("HTTP previous_response_id: %d %s", resp.StatusCode, b)
	}
}

// TestWebSocketPrewarm: generate: false answers response.created and
// response.completed without a backend call; the next request, naming the
// prewarm's id with no new items, reaches the backend with the prewarm's
// input.
func TestWebSocketPrewarm(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	ws.send(create(`,"generate":false`, userItem("warm me up")))
	evs := ws.response()
	if len(evs) != 2 || evs[0].typ() != "response.created" {
		t.Fatalf("prewarm frames: %v", evs)
	}
	id := completedID(t, evs)
	if n := len(h.backendRequests()); n != 0 {
		t.Fatalf("the prewarm called the backend %d times", n)
	}
	ws.send(create(`,"previous_response_id":"` + id + `"`))
	evs = ws.response()
	completedID(t, evs)
	if got := outputText(evs); !strings.Contains(got, "warm me up") {
		t.Errorf("after the prewarm: %q", got)
	}
	// A prewarm for a model not in model_list is an error frame.
	ws.send(`{"type":"response.create","model":"no-such-model","generate":false,"input":[]}`)
	e := last(ws.response())
	if e.typ() != "error" || e["status"] != float64(404) || !strings.Contains(e["error"].(map[string]any)["message"].(string), "no-such-model") {
		t.Errorf("prewarm of an unknown model: %v", e)
	}
}

// TestWebSocketErrorFrames: a request refused before its stream began is
// one error frame with the HTTP status and the Responses error; frames
// that are not response.create are refused; the connection goes on.
func TestWebSocketErrorFrames(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	for _, c := range []struct {
		frame, errType, want string
		status               float64
	}{
		{`{"type":"response.create","model":"no-such-model","input":"hi"}`, "not_found_error", "no-such-model", 404},
		{create("", `{"type":"item_reference","id":"msg_1"}`), "invalid_request_error", `"item_reference"`, 400},
		{`{"type":"session.update"}`, "invalid_request_error", "session.update", 400},
		{`not json`, "invalid_request_error", "JSON object", 400},
	} {
		ws.send(c.frame)
		e := last(ws.response())
		errObj, _ := e["error"].(map[string]any)
		msg, _ := errObj["message"].(string)
		if e.typ() != "error" || e["status"] != c.status || errObj["type"] != c.errType || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %v", c.frame, e)
		}
	}
	if n := len(h.backendRequests()); n != 0 {
		t.Errorf("refused requests reached the backend %d times", n)
	}
	ws.send(create("", userItem("still here")))
	completedID(t, ws.response())
}

// TestWebSocketBackendFailsMidStream: a backend that breaks off after its
// first tokens ends the response with response.failed; the connection
// serves the next request.
func TestWebSocketBackendFailsMidStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	for _, marker := range []string{"stub:error-midstream", "stub:die"} {
		ws.send(create("", userItem(marker)))
		evs := ws.response()
		if e := last(evs); e.typ() != "response.failed" {
			t.Errorf("%s: the response ended with %v", marker, e)
		}
		// A failed response is no baseline for the next.
		ws.send(create(`,"previous_response_id":"resp_x"`, userItem("x")))
		if e := last(ws.response()); e.typ() != "error" {
			t.Errorf("%s: previous_response_id after a failure: %v", marker, e)
		}
	}
	ws.send(create("", userItem("after the failures")))
	completedID(t, ws.response())
}

// TestWebSocketRevokedKey: the key is checked at the upgrade (a wrong one
// is an HTTP 401) and again for each response.create: a key revoked while
// the connection is open gets an error frame 401, then the close (1008).
func TestWebSocketRevokedKey(t *testing.T) {
	c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
	g := newGate(t, "sqlite://"+filepath.Join(t.TempDir(), "dragoman.db"), c)
	h := newHarness(t, harnessOptions{gate: g})
	alice := createKey(t, g, keys.Spec{Name: "alice"})

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hdr := http.Header{"Authorization": {"Bearer " + keys.Prefix + "not-a-key"}}
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.proxy.URL, "http")+"/v1/responses", &websocket.DialOptions{HTTPHeader: hdr})
	if err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("upgrade with a wrong key: %v %v", err, resp)
	}

	ws := dialResponses(t, h, alice)
	ws.send(create("", userItem("before")))
	completedID(t, ws.response())
	if err := g.Revoke(context.Background(), "alice"); err != nil {
		t.Fatal(err)
	}
	ws.send(create("", userItem("after")))
	e := last(ws.response())
	if e.typ() != "error" || e["status"] != float64(401) || !strings.Contains(e["error"].(map[string]any)["message"].(string), "revoked") {
		t.Errorf("after the revocation: %v", e)
	}
	if st := ws.closeStatus(); st != websocket.StatusPolicyViolation {
		t.Errorf("close status %v, want 1008", st)
	}
	if n := len(h.backendRequests()); n != 1 {
		t.Errorf("backend requests: %d, want 1", n)
	}
	if strings.Contains(h.logs.String(), alice) {
		t.Error("the per-user key reached the logs")
	}
}

// TestWebSocketDrainOnShutdown: when the proxy leaves, the response in
// flight finishes, then the close frame 1001; an idle connection gets
// 1001 at once; WaitWebSockets returns once they closed.
func TestWebSocketDrainOnShutdown(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{EventDelay: 80 * time.Millisecond, Events: 8}})
	busy := dialResponses(t, h, clientKey)
	idle := dialResponses(t, h, clientKey)
	idle.send(create("", userItem("warm")))
	completedID(t, idle.response())
	if n := h.server.WebSockets(); n != 2 {
		t.Fatalf("WebSockets() = %d", n)
	}
	busy.send(create("", userItem("a slow answer")))
	// Wait for the stream to start, then leave.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, first, err := busy.c.Read(ctx)
	if err != nil || !strings.Contains(string(first), "response.created") {
		t.Fatalf("first frame: %s %v", first, err)
	}
	h.server.Leave()
	if st := idle.closeStatus(); st != websocket.StatusGoingAway {
		t.Errorf("idle connection: close %v, want 1001", st)
	}
	evs := busy.response()
	if e := last(evs); e.typ() != "response.completed" {
		t.Errorf("the response in flight ended with %v", e)
	}
	if got := outputText(evs); !strings.Contains(got, "a slow answer") {
		t.Errorf("the response in flight was cut: %q", got)
	}
	if st := busy.closeStatus(); st != websocket.StatusGoingAway {
		t.Errorf("busy connection: close %v, want 1001", st)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := h.server.WaitWebSockets(wctx); err != nil {
		t.Errorf("WaitWebSockets: %v (%d open)", err, h.server.WebSockets())
	}
}

// TestWebSocketPingAndIdle: pings are answered; a connection without a
// request for the idle time is closed (1000).
func TestWebSocketPingAndIdle(t *testing.T) {
	h := newHarness(t, harnessOptions{wsIdle: 300 * time.Millisecond})
	ws := dialResponses(t, h, clientKey)
	readErr := make(chan error, 1)
	go func() {
		_, _, err := ws.c.Read(context.Background())
		readErr <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ws.c.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	select {
	case err := <-readErr:
		if st := websocket.CloseStatus(err); st != websocket.StatusNormalClosure {
			t.Errorf("idle close: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the idle connection was not closed")
	}
	for i := 0; i < 100 && !strings.Contains(h.logs.String(), "reason=\"idle timeout\""); i++ {
		time.Sleep(10 * time.Millisecond) // the line follows the close
	}
	if !strings.Contains(h.logs.String(), "reason=\"idle timeout\"") {
		t.Errorf("no close line in the log:\n%s", h.logs.String())
	}
}

// TestWebSocketBinaryFrame: a binary frame closes the connection with
// 1003.
func TestWebSocketBinaryFrame(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ws := dialResponses(t, h, clientKey)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := ws.c.Write(ctx, websocket.MessageBinary, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	var ce websocket.CloseError
	_, _, err := ws.c.Read(ctx)
	if !errors.As(err, &ce) || ce.Code != websocket.StatusUnsupportedData {
		t.Errorf("after a binary frame: %v", err)
	}
}

// TestWebSocketTraces: each response.create has its own server span, the
// child of the trace context Codex sends in client_metadata.
func TestWebSocketTraces(t *testing.T) {
	recv, tracer := otlpTracer(t)
	h := newHarness(t, harnessOptions{tracer: tracer})
	ws := dialResponses(t, h, clientKey)
	parents := []string{"0af7651916cd43dd8448eb211c80319c", "4bf92f3577b34da6a3ce929d0e0e4736"}
	for _, p := range parents {
		ws.send(create(`,"client_metadata":{"ws_request_header_traceparent":"00-`+p+`-b7ad6b7169203331-01"}`, userItem("traced")))
		completedID(t, ws.response())
	}
	// A span ends when its ServeHTTP returns, after the last frame: the
	// connection closes once the last one has.
	ws.c.Close(websocket.StatusNormalClosure, "")
	for i := 0; i < 200 && !strings.Contains(h.logs.String(), "websocket closed"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if err := tracer.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	got := map[string]bool{}
	for _, s := range recv.spans {
		if s.Kind == trace.Span_SPAN_KIND_SERVER {
			got[hex.EncodeToString(s.TraceId)] = true
		}
	}
	for _, p := range parents {
		if !got[p] {
			t.Errorf("no server span in trace %s: %v", p, got)
		}
	}
}

// TestWebSocketMetrics: each response.create counts as a Responses
// request, with its time to first token and its tokens, as over HTTP; a
// refused one counts with its error type.
func TestWebSocketMetrics(t *testing.T) {
	h := newHarness(t, harnessOptions{metrics: true, stub: stub.Options{Events: 4}})
	ws := dialResponses(t, h, clientKey)
	for range 3 {
		ws.send(create("", userItem("counted")))
		completedID(t, ws.response())
	}
	ws.send(create("", `{"type":"item_reference","id":"x"}`))
	ws.response()
	mfs := scrape(t, h.proxy.URL)
	counted := func(name, with string) (n float64) {
		for k, v := range series(mfs, name) {
			if strings.Contains(k, "endpoint=responses,") && strings.Contains(k, with) {
				n += v
			}
		}
		return n
	}
	if n := counted("dragoman_request_duration_seconds", ""); n != 4 {
		t.Errorf("dragoman_request_duration_seconds counts %v Responses requests, want 4", n)
	}
	if n := counted("dragoman_time_to_first_token_seconds", ""); n != 3 {
		t.Errorf("dragoman_time_to_first_token_seconds counts %v, want 3", n)
	}
	if n := counted("dragoman_requests_total", "error_type=invalid_request"); n != 1 {
		t.Errorf("the refused request: %v in dragoman_requests_total with error_type=invalid_request", n)
	}
}
