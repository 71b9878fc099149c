package server

// The Responses WebSocket transport: GET /v1/responses (and /responses)
// with Upgrade: websocket, as Codex's built-in provider opens it
// (OpenAI-Beta: responses_websockets=2026-02-06;
// codex-rs/codex-api/src/endpoint/responses_websocket.rs). On one
// connection the client sends, one after another, text frames
// {"type":"response.create", …the fields of a Responses request…}; each
// event of the answer comes back as its own text frame holding the JSON of
// the SSE data: payload, the last one response.completed or
// response.failed. A request refused before its stream began comes back as
// {"type":"error","status":N,"error":{"type","code","message"}}, the shape
// Codex's parse_wrapped_websocket_error_event reads.
//
// Each response.create goes through ServeHTTP as a POST /v1/responses of
// its own (key, model list, limits, request kinds and priority, metrics,
// traces, the access log, key scrubbing: all as over HTTP), with the
// upgrade's headers, into a frameWriter that turns the SSE stream into
// frames. Beyond HTTP, per connection:
//
//   - incremental input: the connection keeps the last response's id, the
//     full input of its request and its output items; a request naming
//     that id as previous_response_id with only its new items reaches the
//     backend with the whole conversation, as over HTTP (Codex's
//     get_incremental_items: previous input + the items added by the last
//     response + the new ones). Another id gets the error
//     previous_response_not_found, and the client sends everything again;
//   - generate: false (Codex's prewarm) is answered response.created and
//     response.completed, key and model checked, no backend called; its
//     input becomes the baseline of the next request;
//   - response.processed (a client's acknowledgement) is taken without an
//     answer;
//   - pings are answered (by the reading goroutine); a connection without
//     a request for the idle time is closed (1000); a refused key ends the
//     connection (1008) after its error frame; when the proxy leaves
//     (Server.Leave), the response in flight finishes, then a close frame
//     1001 sends the client elsewhere, and WaitWebSockets waits for that.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/responses"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// DefaultWebSocketIdle is how long a Responses WebSocket connection may go
// without a request before the proxy closes it. Codex opens one per
// session and reconnects when it finds it closed.
const DefaultWebSocketIdle = 10 * time.Minute

// wsWriteTimeout bounds the write of one frame to a client that stopped
// reading.
const wsWriteTimeout = 30 * time.Second

// webSockets tracks the open Responses WebSocket connections, for the
// drain.
type webSockets struct {
	idle    time.Duration
	mu      sync.Mutex
	leaving chan struct{} // closed by leave
	left    bool
	wg      sync.WaitGroup
	open    atomic.Int64
}

func (ws *webSockets) init(idle time.Duration) {
	if idle <= 0 {
		idle = DefaultWebSocketIdle
	}
	ws.idle = idle
	ws.leaving = make(chan struct{})
}

func (ws *webSockets) leave() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if !ws.left {
		ws.left = true
		close(ws.leaving)
	}
}

func (ws *webSockets) isLeaving() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.left
}

// WebSockets reports the Responses WebSocket connections open.
func (s *Server) WebSockets() int64 { return s.ws.open.Load() }

// WaitWebSockets waits, after Leave, until every Responses WebSocket
// connection has finished its response in flight and closed (http.Server's
// Shutdown does not wait for them: their connections are hijacked), or ctx
// ends.
func (s *Server) WaitWebSockets(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.ws.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isResponsesUpgrade reports whether r opens the Responses WebSocket.
func isResponsesUpgrade(r *http.Request) bool {
	if r.Method != http.MethodGet || (r.URL.Path != "/v1/responses" && r.URL.Path != "/responses") {
		return false
	}
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && headerHasToken(r.Header, "Connection", "upgrade")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// wsConn is one Responses WebSocket connection.
type wsConn struct {
	s       *Server
	c       *websocket.Conn
	cork    *corkConn // c's connection
	upgrade *http.Request
	id      string // the upgrade's request id
	// The last response: its id, the full input of its request and its
	// output items (raw JSON).
	lastID     string
	lastInput  []jsontext.Value
	lastOutput []jsontext.Value
	requests   int
}

// responsesWebSocket serves an upgrade of /v1/responses: the key checked
// first (a refusal is an HTTP answer, which Codex reports as such), then
// the connection's frames until it closes.
func (s *Server) responsesWebSocket(w http.ResponseWriter, r *http.Request) {
	id := requestID(r)
	w.Header().Set("Request-Id", id)
	if !s.authAllowed(w, r, responsesFormat) {
		s.log.Info("websocket refused", "request_id", id, "path", r.URL.Path, "status", http.StatusTooManyRequests)
		return
	}
	if _, p, ok := s.authenticate(r); !ok {
		s.refuseAuth(w, r, responsesFormat, p)
		s.log.Info("websocket refused", "request_id", id, "path", r.URL.Path, "status", renderings[p.kind].chatStatus)
		return
	}
	cw := &corkingWriter{ResponseWriter: w}
	c, err := websocket.Accept(cw, r, &websocket.AcceptOptions{
		// Codex offers permessage-deflate (its websocket_config); without
		// context takeover the compressors are pooled, not kept per
		// connection.
		CompressionMode: websocket.CompressionNoContextTakeover,
	})
	if err != nil {
		s.log.Info("websocket upgrade failed", "request_id", id, "err", err)
		return
	}
	limit := s.cfg.MaxRequestBytes
	if limit <= 0 {
		limit = config.DefaultMaxRequestBytes
	}
	c.SetReadLimit(limit)
	s.ws.wg.Add(1)
	s.ws.open.Add(1)
	defer func() {
		s.ws.open.Add(-1)
		s.ws.wg.Done()
	}()
	conn := &wsConn{s: s, c: c, cork: cw.conn, upgrade: r, id: id}
	start := time.Now()
	reason := conn.run(r.Context())
	s.log.Info("websocket closed", "request_id", id, "path", r.URL.Path, "requests", conn.requests,
		"reason", reason, "duration", time.Since(start).Round(time.Millisecond))
}

// frame is one message the reading goroutine read, or the error that
// ended its reading.
type frame struct {
	data []byte
	err  error
}

// run serves the connection's frames until it ends, and says why it did.
func (wc *wsConn) run(parent context.Context) string {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	frames := make(chan frame, 1)
	go func() {
		// The only reader: it answers pings, and a close or a broken
		// connection cancels ctx, so that a response in flight stops and
		// its backend request with it.
		for {
			typ, data, err := wc.c.Read(ctx)
			if err == nil && typ != websocket.MessageText {
				err = errors.New("a binary frame: the Responses WebSocket takes JSON text frames")
				wc.c.Close(websocket.StatusUnsupportedData, "send JSON text frames")
			}
			if err != nil {
				cancel()
				frames <- frame{err: err}
				return
			}
			select {
			case frames <- frame{data: data}:
			case <-ctx.Done():
				return
			}
		}
	}()
	ws := &wc.s.ws
	// A connection opened while the proxy leaves serves its first request
	// before it is sent away.
	leaving := ws.leaving
	if ws.isLeaving() {
		leaving = nil
	}
	idle := time.NewTimer(ws.idle)
	defer idle.Stop()
	for {
		select {
		case f := <-frames:
			if f.err != nil {
				if st := websocket.CloseStatus(f.err); st != -1 {
					return "client closed (" + strconv.Itoa(int(st)) + ")"
				}
				if errors.Is(f.err, io.EOF) {
					return "client closed the connection"
				}
				return "read: " + f.err.Error()
			}
			if !wc.handle(ctx, f.data) {
				wc.c.Close(websocket.StatusPolicyViolation, "the key was refused")
				return "key refused"
			}
			if ctx.Err() != nil {
				return "client gone"
			}
			if ws.isLeaving() {
				wc.c.Close(websocket.StatusGoingAway, "the proxy is shutting down: reconnect")
				return "proxy shutting down"
			}
			idle.Reset(ws.idle)
		case <-idle.C:
			wc.c.Close(websocket.StatusNormalClosure, "idle timeout")
			return "idle timeout"
		case <-leaving:
			wc.c.Close(websocket.StatusGoingAway, "the proxy is shutting down: reconnect")
			return "proxy shutting down"
		}
	}
}

// handle serves one frame; false ends the connection (its key was
// refused).
func (wc *wsConn) handle(ctx context.Context, data []byte) bool {
	var members map[string]jsontext.Value
	if err := json.Unmarshal(data, &members); err != nil {
		wc.sendError(ctx, http.StatusBadRequest, responses.InvalidRequestError, "", "a frame must be a JSON object {\"type\":\"response.create\", …}: "+err.Error())
		return true
	}
	var typ string
	json.Unmarshal(members["type"], &typ)
	switch typ {
	case "response.create":
	case "response.processed":
		return true // the client's acknowledgement of a response: nothing to do
	default:
		wc.sendError(ctx, http.StatusBadRequest, responses.InvalidRequestError, "", "frame type "+strconv.Quote(typ)+" is not one the proxy takes: send {\"type\":\"response.create\", …the fields of a Responses request…}")
		return true
	}
	wc.requests++
	delete(members, "type")
	input, ok := wc.fullInput(ctx, members)
	if !ok {
		return true
	}
	delete(members, "previous_response_id")
	members["input"], _ = json.Marshal(input)
	members["stream"] = jsontext.Value("true")
	generate := members["generate"]
	delete(members, "generate")
	if string(generate) == "false" {
		return wc.prewarm(ctx, members, input)
	}
	body, _ := json.Marshal(members)
	fw := wc.serve(ctx, body, traceContext(members["client_metadata"]))
	wc.cork.drop()
	switch {
	case fw.completed:
		wc.lastID, wc.lastInput, wc.lastOutput = fw.responseID, input, fw.items
	default:
		wc.lastID, wc.lastInput, wc.lastOutput = "", nil, nil
	}
	return fw.status != http.StatusUnauthorized && fw.status != http.StatusForbidden
}

// fullInput is the request's whole input: with previous_response_id, the
// connection's last input and output before the new items.
func (wc *wsConn) fullInput(ctx context.Context, members map[string]jsontext.Value) ([]jsontext.Value, bool) {
	var items []jsontext.Value
	switch in := members["input"]; in.Kind() {
	case '[':
		if err := json.Unmarshal(in, &items); err != nil {
			wc.sendError(ctx, http.StatusBadRequest, responses.InvalidRequestError, "", "input: "+err.Error())
			return nil, false
		}
	case '"':
		var text string
		json.Unmarshal(in, &text)
		items = []jsontext.Value{userMessage(text)}
	case 'n', jsontext.KindInvalid:
	default:
		wc.sendError(ctx, http.StatusBadRequest, responses.InvalidRequestError, "", "input: must be a string or an array of input items")
		return nil, false
	}
	var prev string
	if p := members["previous_response_id"]; p.Kind() == '"' {
		json.Unmarshal(p, &prev)
	}
	if prev == "" {
		return items, true
	}
	if prev != wc.lastID {
		wc.sendErrorParam(ctx, http.StatusBadRequest, "previous_response_not_found",
			"Previous response with id "+strconv.Quote(prev)+" not found: this connection keeps only its last response (the proxy stores none); send the whole input without previous_response_id", "previous_response_id")
		return nil, false
	}
	full := make([]jsontext.Value, 0, len(wc.lastInput)+len(wc.lastOutput)+len(items))
	full = append(append(append(full, wc.lastInput...), wc.lastOutput...), items...)
	return full, true
}

// prewarm answers generate: false: the key and the model checked, then
// response.created and response.completed, empty, no backend called.
func (wc *wsConn) prewarm(ctx context.Context, members map[string]jsontext.Value, input []jsontext.Value) bool {
	s := wc.s
	if _, p, ok := s.authenticate(wc.upgrade); !ok {
		wc.sendError(ctx, renderings[p.kind].chatStatus, renderings[p.kind].chatType, "", p.message)
		return false
	}
	var model string
	json.Unmarshal(members["model"], &model)
	if s.poolOf(model) == "" {
		wc.sendError(ctx, http.StatusNotFound, renderings[notFound].chatType, "model_not_found", (&unknownAlias{alias: model, known: s.aliasNames}).Error())
		wc.lastID, wc.lastInput, wc.lastOutput = "", nil, nil
		return true
	}
	resp := responses.Response{ID: translate.NewResponseID(), Object: "response", CreatedAt: time.Now().Unix(),
		Status: responses.StatusInProgress, Model: model, Output: []responses.OutputItem{}, Tools: []struct{}{},
		ToolChoice: "auto", Truncation: "disabled"}
	created, _ := json.Marshal(struct {
		Type     string             `json:"type"`
		Seq      int                `json:"sequence_number"`
		Response responses.Response `json:"response"`
	}{responses.EventCreated, 0, resp})
	resp.Status, resp.Usage = responses.StatusCompleted, &responses.Usage{}
	completed, _ := json.Marshal(struct {
		Type     string             `json:"type"`
		Seq      int                `json:"sequence_number"`
		Response responses.Response `json:"response"`
	}{"response.completed", 1, resp})
	if wc.write(ctx, created) == nil && wc.write(ctx, completed) == nil {
		wc.lastID, wc.lastInput, wc.lastOutput = resp.ID, input, nil
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("websocket prewarm answered", "request_id", wc.id, "model", model, "input_items", len(input))
	}
	return true
}

// traceContext reads the W3C trace context Codex sends with each
// response.create in client_metadata (a WebSocket request has no headers
// of its own: codex-rs/codex-api/src/common.rs,
// WS_REQUEST_HEADER_TRACEPARENT_CLIENT_METADATA_KEY), as the headers
// traceparent and tracestate.
func traceContext(metadata jsontext.Value) http.Header {
	if metadata.Kind() != '{' {
		return nil
	}
	var m struct {
		Parent string `json:"ws_request_header_traceparent"`
		State  string `json:"ws_request_header_tracestate"`
	}
	if json.Unmarshal(metadata, &m) != nil || m.Parent == "" {
		return nil
	}
	h := http.Header{"Traceparent": {m.Parent}}
	if m.State != "" {
		h.Set("Tracestate", m.State)
	}
	return h
}

// serve runs body through ServeHTTP as a POST of its own, with the
// upgrade's headers (and trace's over them), its events sent as frames.
func (wc *wsConn) serve(ctx context.Context, body []byte, trace http.Header) *frameWriter {
	up := wc.upgrade
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, up.URL.Path, bytes.NewReader(body))
	req.Header = up.Header.Clone()
	for _, h := range []string{"Upgrade", "Connection", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", "Sec-Websocket-Protocol", "X-Request-Id"} {
		req.Header.Del(h)
	}
	for k, v := range trace {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = int64(len(body))
	req.RemoteAddr, req.Host, req.RequestURI = up.RemoteAddr, up.Host, up.URL.Path
	fw := &frameWriter{wc: wc, ctx: ctx, header: http.Header{}}
	wc.s.ServeHTTP(fw, req)
	fw.finish()
	return fw
}

// write sends one text frame.
func (wc *wsConn) write(ctx context.Context, p []byte) error {
	wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
	defer cancel()
	return wc.c.Write(wctx, websocket.MessageText, p)
}

// wsError is the error frame (Codex's WrappedWebsocketErrorEvent).
type wsError struct {
	Type   string         `json:"type"`
	Status int            `json:"status"`
	Error  wsErrorPayload `json:"error"`
}

type wsErrorPayload struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitzero"`
	Message string `json:"message"`
	Param   string `json:"param,omitzero"`
}

func (wc *wsConn) sendError(ctx context.Context, status int, typ, code, message string) {
	b, _ := json.Marshal(wsError{Type: "error", Status: status, Error: wsErrorPayload{Type: typ, Code: code, Message: message}})
	wc.write(ctx, b)
}

func (wc *wsConn) sendErrorParam(ctx context.Context, status int, code, message, param string) {
	b, _ := json.Marshal(wsError{Type: "error", Status: status, Error: wsErrorPayload{Type: responses.InvalidRequestError, Code: code, Message: message, Param: param}})
	wc.write(ctx, b)
}

// frameWriter is the http.ResponseWriter of a response.create: a 200
// event stream becomes one text frame per data: payload; another answer
// (a JSON error) becomes an error frame.
type frameWriter struct {
	wc     *wsConn
	ctx    context.Context
	header http.Header
	status int
	stream int8  // 1: a 200 event stream, -1: not, 0: not known yet
	err    error // the first failed frame write

	pending []byte // an SSE line not yet whole
	event   string // the event: line of the event being read
	body    bytes.Buffer

	responseID string
	items      []jsontext.Value // the output items done
	completed  bool             // response.completed went out
	ended      bool             // response.completed or response.failed went out
}

func (fw *frameWriter) Header() http.Header { return fw.header }

func (fw *frameWriter) WriteHeader(code int) {
	if fw.status == 0 {
		fw.status = code
	}
}

func (fw *frameWriter) Flush() {}

// isStream reports whether the answer is a 200 event stream (read once,
// at its first write).
func (fw *frameWriter) isStream() bool {
	if fw.stream == 0 {
		fw.stream = -1
		if fw.status == http.StatusOK && isEventStream(fw.header) {
			fw.stream = 1
		}
	}
	return fw.stream == 1
}

func (fw *frameWriter) Write(p []byte) (int, error) {
	if fw.status == 0 {
		fw.status = http.StatusOK
	}
	if fw.err != nil {
		return 0, fw.err
	}
	if !fw.isStream() {
		return fw.body.Write(p)
	}
	n := len(p)
	// The frames of this write leave together.
	fw.wc.cork.cork()
	defer func() {
		if err := fw.wc.cork.release(); err != nil && fw.err == nil {
			fw.err = err
		}
	}()
	if len(fw.pending) > 0 {
		p = append(fw.pending, p...)
		fw.pending = nil
	}
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		fw.line(bytes.TrimSuffix(p[:i], []byte{'\r'}))
		p = p[i+1:]
		if fw.err != nil {
			return 0, fw.err
		}
	}
	if len(p) > 0 {
		fw.pending = append([]byte(nil), p...)
	}
	return n, nil
}

var (
	sseEvent = []byte("event:")
	sseData  = []byte("data:")
)

// line reads one SSE line: an event name, a data payload (sent), the blank
// line that ends an event, or a comment (a keep-alive, which a WebSocket
// does not need: its pings are the transport's).
func (fw *frameWriter) line(l []byte) {
	switch {
	case len(l) == 0:
		fw.event = ""
	case bytes.HasPrefix(l, sseEvent):
		fw.event = string(bytes.TrimSpace(l[len(sseEvent):]))
	case bytes.HasPrefix(l, sseData):
		data := bytes.TrimPrefix(l[len(sseData):], []byte{' '})
		fw.note(data)
		if err := fw.wc.write(fw.ctx, data); err != nil && fw.err == nil {
			fw.err = err
		}
	}
}

// note reads what the connection keeps from an event: the output items
// and the id of the response that completed.
func (fw *frameWriter) note(data []byte) {
	switch fw.event {
	case "response.output_item.done":
		var ev struct {
			Item jsontext.Value `json:"item"`
		}
		if json.Unmarshal(data, &ev) == nil && len(ev.Item) > 0 {
			fw.items = append(fw.items, bytes.Clone(ev.Item))
		}
	case "response.completed":
		var ev struct {
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		json.Unmarshal(data, &ev)
		fw.responseID, fw.completed, fw.ended = ev.Response.ID, true, true
	case "response.failed", "response.incomplete", "error":
		fw.ended = true
	}
}

// finish sends what the answer did not: an error frame for an answer that
// was not a stream, and for a stream that ended without its last event.
func (fw *frameWriter) finish() {
	if fw.err != nil {
		return
	}
	if fw.isStream() {
		if !fw.ended {
			fw.wc.sendError(fw.ctx, http.StatusBadGateway, "server_error", "", "the response ended before response.completed")
		}
		return
	}
	var e struct {
		Error wsErrorPayload `json:"error"`
	}
	if json.Unmarshal(fw.body.Bytes(), &e) != nil || e.Error.Message == "" {
		e.Error = wsErrorPayload{Type: "server_error", Message: "the proxy answered " + strconv.Itoa(fw.status) + " without an error body"}
	}
	status := fw.status
	if status == 0 {
		status = http.StatusBadGateway
	}
	b, _ := json.Marshal(wsError{Type: "error", Status: status, Error: e.Error})
	fw.wc.write(fw.ctx, b)
}
