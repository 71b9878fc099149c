package main

// The Responses WebSocket phase (issue 39): Dragoman in front of the stub,
//
//   - 200 concurrent WebSocket sessions of five requests each, every
//     request after the first incremental (previous_response_id and one
//     new item), as Codex sends them: errors counted;
//   - the memory of an idle connection: a fresh Dragoman's RSS with 500
//     open connections, each after one request, less its RSS after one
//     request on one connection, per connection;
//   - the p50 of one small streamed Responses request over a WebSocket
//     beside the same over SSE (and the stub's own Chat stream, the
//     floor both are added to), one connection, interleaved.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/coder/websocket"
)

const (
	wsSessions     = 200
	wsPerSession   = 5
	wsIdleConns    = 500
	wsLatencyPairs = 400
)

// websocketBench runs the phase and prints its table.
func (r *runner) websocketBench(quick bool) error {
	pairs, idle := wsLatencyPairs, wsIdleConns
	if quick {
		pairs, idle = 40, 100
	}
	stub, err := r.stub("stub-ws")
	if err != nil {
		return err
	}
	dm, err := r.dragoman("dragoman-ws", stub, "warn")
	if err != nil {
		return err
	}
	wsURL := "ws" + strings.TrimPrefix(dm.url, "http") + "/v1/responses"
	ctx := context.Background()

	progress("websocket: memory of %d idle connections", idle)
	first, err := wsDial(ctx, wsURL)
	if err != nil {
		return err
	}
	if _, err := wsRequest(ctx, first, wsBody("first", "")); err != nil {
		return err
	}
	first.Close(websocket.StatusNormalClosure, "")
	time.Sleep(200 * time.Millisecond)
	_, before, err := memory(dm.pid())
	if err != nil {
		return err
	}
	conns := make([]*websocket.Conn, 0, idle)
	for i := range idle {
		c, err := wsDial(ctx, wsURL)
		if err != nil {
			return fmt.Errorf("idle connection %d: %w", i, err)
		}
		if _, err := wsRequest(ctx, c, wsBody(fmt.Sprintf("idle %d", i), "")); err != nil {
			return fmt.Errorf("idle connection %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	time.Sleep(time.Second)
	_, after, err := memory(dm.pid())
	if err != nil {
		return err
	}
	for _, c := range conns {
		c.Close(websocket.StatusNormalClosure, "")
	}

	progress("websocket: %d concurrent sessions of %d requests", wsSessions, wsPerSession)
	start := time.Now()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range wsSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wsSession(ctx, wsURL, i, wsPerSession); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sessionsTook := time.Since(start)

	progress("websocket: %d requests over WebSocket and over SSE, 1 connection, interleaved", pairs)
	c, err := wsDial(ctx, wsURL)
	if err != nil {
		return err
	}
	defer c.Close(websocket.StatusNormalClosure, "")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	chatBody := `{"model":"` + backendModel + `","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`
	var direct, sse, ws []time.Duration
	for i := range pairs + 20 {
		d1, err1 := ssePost(client, stub.url+"/v1/chat/completions", chatBody, false)
		d2, err2 := ssePost(client, dm.url+"/v1/responses", wsBody("Say hello in one short sentence.", ""), true)
		d3, err3 := wsRequest(ctx, c, wsBody("Say hello in one short sentence.", ""))
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		if i >= 20 { // warm-up
			direct, sse, ws = append(direct, d1), append(sse, d2), append(ws, d3.took)
		}
	}
	pd, ps, pw := p50(direct), p50(sse), p50(ws)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "Responses WebSocket (issue 39)\t\n")
	fmt.Fprintf(w, "%d sessions × %d requests, concurrent\t%d errors, %s\t\n", wsSessions, wsPerSession, len(errs), sessionsTook.Round(time.Millisecond))
	for i, e := range errs {
		if i == 5 {
			break
		}
		fmt.Fprintf(w, "  error\t%v\t\n", e)
	}
	fmt.Fprintf(w, "memory per idle connection (%d, each after a request)\t%.1f KB (RSS %s → %s)\t\n", idle, float64(after-before)/float64(idle)/1024, mib(before), mib(after))
	fmt.Fprintf(w, "p50 stub direct (Chat stream)\t%s\t\n", us(pd))
	fmt.Fprintf(w, "p50 Responses over SSE\t%s (added %s)\t\n", us(ps), us(ps-pd))
	fmt.Fprintf(w, "p50 Responses over WebSocket\t%s (added %s)\t\n", us(pw), us(pw-pd))
	fmt.Fprintf(w, "WebSocket − SSE\t%s\t\n", us(pw-ps))
	fmt.Fprintf(w, "load average\t%s\t\n", loadAverage())
	if err := w.Flush(); err != nil {
		return err
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d sessions failed", len(errs), wsSessions)
	}
	return nil
}

func p50(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func wsDial(ctx context.Context, url string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + clientKey}}})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 24)
	return c, nil
}

// wsBody is a response.create frame's Responses request: one new user
// item, after prev when set.
func wsBody(text, prev string) string {
	p := ""
	if prev != "" {
		p = `,"previous_response_id":"` + prev + `"`
	}
	q, _ := json.Marshal(text)
	return `{"model":"` + alias + `","stream":true,"store":false,"max_output_tokens":64` + p +
		`,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(q) + `}]}]}`
}

type wsResult struct {
	id   string
	took time.Duration
}

// wsRequest sends body as a response.create and reads to its end.
func wsRequest(ctx context.Context, c *websocket.Conn, body string) (wsResult, error) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.Write(rctx, websocket.MessageText, []byte(`{"type":"response.create",`+body[1:])); err != nil {
		return wsResult{}, err
	}
	for {
		_, data, err := c.Read(rctx)
		if err != nil {
			return wsResult{}, err
		}
		var ev struct {
			Type     string `json:"type"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if !bytes.Contains(data, []byte(`"type":"response.`)) || bytes.Contains(data, []byte(`.delta"`)) {
			if bytes.HasPrefix(data, []byte(`{"type":"error"`)) {
				return wsResult{}, fmt.Errorf("error frame: %s", data)
			}
			continue
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return wsResult{}, err
		}
		switch ev.Type {
		case "response.completed":
			return wsResult{id: ev.Response.ID, took: time.Since(start)}, nil
		case "response.failed":
			return wsResult{}, fmt.Errorf("response.failed: %s", data)
		}
	}
}

// wsSession is one Codex-like session: n requests on one connection, each
// after the first naming the last response and sending one new item.
func wsSession(ctx context.Context, url string, i, n int) error {
	c, err := wsDial(ctx, url)
	if err != nil {
		return fmt.Errorf("session %d: %w", i, err)
	}
	defer c.Close(websocket.StatusNormalClosure, "")
	prev := ""
	for j := range n {
		res, err := wsRequest(ctx, c, wsBody(fmt.Sprintf("session %d turn %d", i, j), prev))
		if err != nil {
			return fmt.Errorf("session %d request %d: %w", i, j, err)
		}
		prev = res.id
	}
	return nil
}

// ssePost posts body and reads the stream to its end.
func ssePost(client *http.Client, url, body string, responses bool) (time.Duration, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil || resp.StatusCode != 200 {
		return 0, fmt.Errorf("%s: %d %v %.200s", url, resp.StatusCode, err, b)
	}
	if responses && !bytes.Contains(b, []byte("response.completed")) {
		return 0, fmt.Errorf("%s: no response.completed: %.200s", url, b)
	}
	return took, nil
}
