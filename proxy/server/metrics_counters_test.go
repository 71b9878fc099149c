package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/server"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// The counters that TestMetricsAfterKnownTraffic leaves at 0 (pings,
// retries, session moves, queue waits, cached and reasoning tokens, a
// backend out), each driven to a known non-zero value.

// zeroEndpoints is a per-endpoint family with every endpoint at 0 but
// those given.
func zeroEndpoints(nonZero map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, e := range []string{"messages", "chat_completions", "count_tokens", "responses", "models"} {
		out["endpoint="+e] = nonZero[e]
	}
	return out
}

// TestMetricsStreamPings: a backend slow to its first byte and between
// events makes the proxy ping a Messages stream's client; the ping counter
// equals the pings the client received, and a Chat stream (which is never
// pinged) counts none.
func TestMetricsStreamPings(t *testing.T) {
	h := newHarness(t, harnessOptions{metrics: true, ping: 60 * time.Millisecond,
		stub: stub.Options{FirstTokenDelay: 250 * time.Millisecond, Events: 3, EventDelay: 250 * time.Millisecond}})
	resp := h.post("/v1/messages", `{"model":"claude-opus-5-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"slow please"}]}`)
	text := drain(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(text, "event: message_stop") {
		t.Fatalf("stream: %d\n%s", resp.StatusCode, text)
	}
	pings := strings.Count(text, "event: ping")
	// ≥ 3 before the first byte and ≥ 3 in each of the two 250 ms gaps at
	// a 60 ms interval, with room for a loaded machine.
	if pings < 4 {
		t.Fatalf("%d pings with the backend silent 250 ms before its first byte and between events at a 60 ms interval:\n%s", pings, text)
	}
	resp = h.post("/v1/chat/completions", `{"model":"claude-opus-5-5","stream":true,"messages":[{"role":"user","content":"slow chat"}]}`)
	if text := drain(t, resp); resp.StatusCode != 200 || strings.Contains(text, "ping") {
		t.Fatalf("chat stream: %d\n%s", resp.StatusCode, text)
	}
	checkSeries(t, scrape(t, h.proxy.URL), "dragoman_stream_pings_total", zeroEndpoints(map[string]float64{"messages": float64(pings)}))
	t.Logf("dragoman_stream_pings_total{endpoint=\"messages\"} = %d = the pings the client received", pings)
}

// TestMetricsSessionMovesAndRetries: one session through a pool of two
// backends of one slot each. Its home's slot taken by a stream, its next
// request is served by the other backend (home_full); back home when that
// stream ends (no move: it is home); its home killed, the attempt there is
// retried on the other backend
// (dragoman_backend_retries_total{reason="unreachable"}) and served away
// from home (home_down), and the dead backend is reported out.
func TestMetricsSessionMovesAndRetries(t *testing.T) {
	backends := []*poolBackend{
		newPoolBackend(t, stub.Options{Events: 8, EventDelay: 80 * time.Millisecond}),
		newPoolBackend(t, stub.Options{Events: 8, EventDelay: 80 * time.Millisecond}),
	}
	var y strings.Builder
	y.WriteString("model_list:\n")
	for i, b := range backends {
		fmt.Fprintf(&y, "  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '%s', api_key: os.environ/TEST_BACKEND_KEY, name: b%d, num_retries: 2, max_parallel_requests: 1}\n", b.url(), i)
	}
	y.WriteString("router_settings: {allowed_fails: 1, cooldown_time: 60, health_check_interval: 0}\n")
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: y.String()})
	const session = "0c8eb28d-4a3f-4eb6-a37f-000000000001"
	post := func(text string, stream bool) *http.Response {
		return h.post("/v1/messages", coderBody(text, stream), server.SessionHeader, session)
	}
	served := func() [2]int64 { return [2]int64{backends[0].served.Load(), backends[1].served.Load()} }

	mfs := scrape(t, h.proxy.URL)
	zeroMoves := map[string]float64{"alias=coder,reason=home_full": 0, "alias=coder,reason=home_down": 0}
	checkSeries(t, mfs, "dragoman_session_moves_total", zeroMoves)

	// Turn 0 finds the session's home.
	if resp := post("t0", false); resp.StatusCode != 200 {
		t.Fatalf("t0: %d %s", resp.StatusCode, drain(t, resp))
	} else {
		drain(t, resp)
	}
	home := 0
	if s := served(); s[1] == 1 {
		home = 1
	}
	other := 1 - home
	X, Y := fmt.Sprint("b", home), fmt.Sprint("b", other)

	// Turn 1 streams at home; turn 2, sent while it is in flight, finds
	// home's one slot taken (full) and is served by the other: home_full.
	stream := post("t1", true)
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "content_block_delta") {
	}
	resp := post("t2", false)
	if body := drain(t, resp); resp.StatusCode != 200 {
		t.Fatalf("t2: %d %s", resp.StatusCode, body)
	}
	if rest := drain(t, stream); !strings.Contains(rest, "message_stop") {
		t.Fatalf("t1 stream ended without message_stop: %s", rest)
	}
	if s := served(); s[home] != 2 || s[other] != 1 {
		t.Fatalf("after t2 backends served %v, want home b%d 2 (t0, t1), b%d 1 (t2)", s, home, other)
	}
	// Turn 3, home idle again (its lease released): back home, no move.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if series(scrape(t, h.proxy.URL), "dragoman_inflight_requests")["backend="+X] == 0 {
			break
		}
	}
	if resp := post("t3", false); resp.StatusCode != 200 {
		t.Fatalf("t3: %d %s", resp.StatusCode, drain(t, resp))
	} else {
		drain(t, resp)
	}
	if s := served(); s[home] != 3 {
		t.Fatalf("t3 did not go home: served %v", s)
	}
	mfs = scrape(t, h.proxy.URL)
	checkSeries(t, mfs, "dragoman_session_moves_total", map[string]float64{
		"alias=coder,reason=home_full": 1, "alias=coder,reason=home_down": 0})
	checkSeries(t, mfs, "dragoman_backend_up", map[string]float64{"backend=b0": 1, "backend=b1": 1})

	// Home dies; turn 4 is refused there, retried on the other backend.
	backends[home].kill()
	if resp := post("t4", false); resp.StatusCode != 200 {
		t.Fatalf("t4: %d %s", resp.StatusCode, drain(t, resp))
	} else {
		drain(t, resp)
	}
	if s := served(); s[other] != 2 {
		t.Fatalf("t4 not served by b%d: served %v", other, s)
	}
	mfs = scrape(t, h.proxy.URL)
	checkSeries(t, mfs, "dragoman_session_moves_total", map[string]float64{
		"alias=coder,reason=home_full": 1, "alias=coder,reason=home_down": 1})
	retries := map[string]float64{}
	for _, b := range []string{"b0", "b1"} {
		for _, reason := range []string{"unreachable", "timeout", "status_502", "status_503", "max_tokens"} {
			retries["backend="+b+",reason="+reason] = 0
		}
	}
	retries["backend="+X+",reason=unreachable"] = 1
	checkSeries(t, mfs, "dragoman_backend_retries_total", retries)
	checkSeries(t, mfs, "dragoman_backend_up", map[string]float64{"backend=" + X: 0, "backend=" + Y: 1})
	want := map[string]float64{
		"endpoint=messages,alias=coder,backend=" + X + ",status=200,error_type=none,kind=main":         3, // t0, t1, t3
		"endpoint=messages,alias=coder,backend=" + Y + ",status=200,error_type=none,kind=main":         2, // t2, t4
		"endpoint=chat_completions,alias=coder,backend=" + X + ",status=200,error_type=none,kind=main": 0,
		"endpoint=chat_completions,alias=coder,backend=" + Y + ",status=200,error_type=none,kind=main": 0,
		"endpoint=responses,alias=coder,backend=" + X + ",status=200,error_type=none,kind=main":        0,
		"endpoint=responses,alias=coder,backend=" + Y + ",status=200,error_type=none,kind=main":        0,
	}
	checkSeries(t, mfs, "dragoman_requests_total", want)
	if !t.Failed() {
		t.Logf("home %s: moves home_full 1, home_down 1; retries{%s,unreachable} 1; backend_up{%s} 0", X, X, X)
	}
}

// TestMetricsRetryOn503: a pool where one backend (a stub loading its
// model) answers 503 to every request: each request that tried it first is
// retried on the other, and dragoman_backend_retries_total{reason=
// "status_503"} counts exactly the 503s that backend sent.
func TestMetricsRetryOn503(t *testing.T) {
	loading := newPoolBackend(t, stub.Options{Loading: time.Hour})
	good := newPoolBackend(t, stub.Options{Events: 1})
	y := "model_list:\n" +
		"  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '" + loading.url() + "', api_key: os.environ/TEST_BACKEND_KEY, name: loading, num_retries: 1}\n" +
		"  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '" + good.url() + "', api_key: os.environ/TEST_BACKEND_KEY, name: good, num_retries: 1}\n" +
		"router_settings: {routing_strategy: simple-shuffle, allowed_fails: 10, cooldown_time: 60, health_check_interval: 0}\n"
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: y})
	sent := 0
	for ; loading.served.Load() < 3 && sent < 200; sent++ {
		resp := h.post("/v1/chat/completions", coderBody(fmt.Sprint("r", sent), false))
		if body := drain(t, resp); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", sent, resp.StatusCode, body)
		}
	}
	n := loading.served.Load()
	if n < 3 {
		t.Fatalf("the 503 backend got %d of %d requests under simple-shuffle", n, sent)
	}
	mfs := scrape(t, h.proxy.URL)
	checkSeries(t, mfs, "dragoman_backend_retries_total", map[string]float64{
		"backend=loading,reason=unreachable": 0, "backend=loading,reason=timeout": 0, "backend=loading,reason=status_502": 0, "backend=loading,reason=status_503": float64(n), "backend=loading,reason=max_tokens": 0,
		"backend=good,reason=unreachable": 0, "backend=good,reason=timeout": 0, "backend=good,reason=status_502": 0, "backend=good,reason=status_503": 0, "backend=good,reason=max_tokens": 0,
	})
	if got := series(mfs, "dragoman_requests_total")["endpoint=chat_completions,alias=coder,backend=good,status=200,error_type=none,kind=main"]; got != float64(sent) {
		t.Errorf("requests served by good: %v, want all %d", got, sent)
	}
	t.Logf("%d requests, %d answered 503 by one backend and retried: dragoman_backend_retries_total{backend=\"loading\",reason=\"status_503\"} = %d", sent, n, n)
}

// TestMetricsQueueWait: with max_parallel_requests 1, a request sent while
// a stream holds the backend's slot is queued (dragoman_queued_requests 1,
// dragoman_inflight_requests 1 while it waits), and its wait is observed
// once in dragoman_queue_wait_seconds.
func TestMetricsQueueWait(t *testing.T) {
	b := newPoolBackend(t, stub.Options{Events: 8, EventDelay: 100 * time.Millisecond})
	y := "model_list:\n  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '" + b.url() + "', api_key: os.environ/TEST_BACKEND_KEY, name: single, max_parallel_requests: 1}\n"
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: y})
	stream := h.post("/v1/messages", coderBody("hold the slot", true))
	sc := bufio.NewScanner(stream.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "content_block_delta") {
	}
	queued := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/chat/completions", strings.NewReader(coderBody("queued", false)))
		req.Header.Set("Authorization", "Bearer "+clientKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			queued <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		queued <- resp.StatusCode
	}()
	gauges := func() (float64, float64) {
		mfs := scrape(t, h.proxy.URL)
		return series(mfs, "dragoman_queued_requests")["backend=single,kind=main"], series(mfs, "dragoman_inflight_requests")["backend=single"]
	}
	var q, in float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if q, in = gauges(); q == 1 {
			break
		}
	}
	if q != 1 || in != 1 {
		t.Errorf("while the stream holds the only slot: queued %v, in flight %v, want 1 and 1", q, in)
	}
	if rest := drain(t, stream); !strings.Contains(rest, "message_stop") {
		t.Fatalf("the stream ended without message_stop: %s", rest)
	}
	if code := <-queued; code != 200 {
		t.Fatalf("the queued request: %d", code)
	}
	mfs := scrape(t, h.proxy.URL)
	checkSeries(t, mfs, "dragoman_queue_wait_seconds", map[string]float64{"backend=single": 1})
	checkSeries(t, mfs, "dragoman_queued_requests", map[string]float64{"backend=single,kind=main": 0, "backend=single,kind=subagent": 0, "backend=single,kind=background": 0, "backend=single,kind=warmer": 0})
	checkSeries(t, mfs, "dragoman_inflight_requests", map[string]float64{"backend=single": 0})
	wait := mfs["dragoman_queue_wait_seconds"].Metric[0].Histogram.GetSampleSum()
	if wait <= 0 || wait > 5 {
		t.Errorf("queue wait %v s, want the rest of the stream (about 0.8 s)", wait)
	}
	t.Logf("queued 1 and in flight 1 during the wait; dragoman_queue_wait_seconds count 1, sum %.3f s", wait)
}

// TestMetricsCachedAndReasoningTokens: the usage a backend reports,
// cached prompt tokens and reasoning tokens included, is counted per kind.
func TestMetricsCachedAndReasoningTokens(t *testing.T) {
	backend := cannedBackend(t, http.StatusOK, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":100,"completion_tokens":40,"total_tokens":140,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":25}}}`)
	y := "model_list:\n  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '" + backend + "', api_key: os.environ/TEST_BACKEND_KEY, name: usage}\n"
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: y})
	for i, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		resp := h.post(path, coderBody(fmt.Sprint("u", i), false))
		if body := drain(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	checkSeries(t, scrape(t, h.proxy.URL), "dragoman_tokens_total", map[string]float64{
		"alias=coder,backend=usage,kind=input": 200, "alias=coder,backend=usage,kind=output": 80,
		"alias=coder,backend=usage,kind=cache_read": 128, "alias=coder,backend=usage,kind=reasoning": 50,
	})
}

// TestMetricsNativeUsage: a Messages (vendora/) backend's usage reaches the
// token counters on every path to it: Messages and Chat clients, JSON and
// stream. Its input counts the cached and cache-creation tokens, as on the
// Chat side; a message_delta's counts replace message_start's.
func TestMetricsNativeUsage(t *testing.T) {
	const usage = `"usage":{"input_tokens":10,"cache_read_input_tokens":6,"cache_creation_input_tokens":4,"output_tokens":1}`
	backend := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		start := `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,` + usage + `}`
		if !strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(strings.Replace(strings.Replace(start, `"content":[]`, `"content":[{"type":"text","text":"ok"}]`, 1), `"output_tokens":1`, `"output_tokens":7`, 1)))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":` + start + `}`,
			`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
			`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		} {
			io.WriteString(w, ev+"\n\n")
		}
	}))
	y := "model_list:\n  - model_name: coder\n    proxy_params: {model: vendora/m, api_base: '" + backend + "', api_key: os.environ/TEST_BACKEND_KEY, name: native}\n"
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: y})
	for i, c := range []struct {
		path string
		body string
	}{
		{"/v1/messages", coderBody("m0", false)},
		{"/v1/messages", coderBody("m1", true)},
		{"/v1/chat/completions", coderBody("c0", false)},
		{"/v1/chat/completions", coderBody("c1", true)},
	} {
		resp := h.post(c.path, c.body)
		if body := drain(t, resp); resp.StatusCode != 200 || !strings.Contains(body, "ok") {
			t.Fatalf("request %d, %s: %d %s", i, c.path, resp.StatusCode, body)
		}
	}
	checkSeries(t, scrape(t, h.proxy.URL), "dragoman_tokens_total", map[string]float64{
		"alias=coder,backend=native,kind=input": 4 * 20, "alias=coder,backend=native,kind=output": 4 * 7,
		"alias=coder,backend=native,kind=cache_read": 4 * 6, "alias=coder,backend=native,kind=reasoning": 0,
	})
}
