package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// scrape reads GET /metrics without a client key, checks it with the lint
// of promtool check metrics, and parses it with the Prometheus text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics without a key: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the Prometheus text format", ct)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	for _, secret := range []string{clientKey, backendKey} {
		if bytes.Contains(body, []byte(secret)) {
			t.Errorf("a key is in the exposition")
		}
	}
	return mfs
}

// labelOrder is the order of labels in the keys of series.
var labelOrder = []string{"endpoint", "alias", "backend", "key", "status", "error_type", "kind", "reason", "goversion", "version", "provider", "result"}

// series maps each series of a family, its labels as "k=v,k=v" in
// labelOrder, to its value (a histogram's: its sample count). The key
// label of the proxy's own key (key=master, every request of these tests
// but the per-user keys') is left out.
func series(mfs map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	mf, ok := mfs[name]
	if !ok {
		return nil
	}
	for _, m := range mf.Metric {
		pairs := slices.Clone(m.Label)
		slices.SortFunc(pairs, func(a, b *dto.LabelPair) int {
			return slices.Index(labelOrder, a.GetName()) - slices.Index(labelOrder, b.GetName())
		})
		var labels []string
		for _, l := range pairs {
			if l.GetName() == "key" && l.GetValue() == "master" {
				continue
			}
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		var v float64
		switch {
		case m.Counter != nil:
			v = m.Counter.GetValue()
		case m.Gauge != nil:
			v = m.Gauge.GetValue()
		case m.Histogram != nil:
			v = float64(m.Histogram.GetSampleCount())
		}
		out[strings.Join(labels, ",")] = v
	}
	return out
}

func checkSeries(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]float64) {
	t.Helper()
	got := series(mfs, name)
	for k, v := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s{%s}: missing, want %v", name, k, v)
		} else if g != v {
			t.Errorf("%s{%s} = %v, want %v", name, k, g, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s{%s} = %v: not expected", name, k, v)
		}
	}
}

var families = []string{
	"dragoman_requests_total", "dragoman_request_duration_seconds", "dragoman_time_to_first_token_seconds",
	"dragoman_output_tokens_per_second", "dragoman_tokens_total", "dragoman_inflight_requests",
	"dragoman_queued_requests", "dragoman_queue_wait_seconds", "dragoman_backend_up",
	"dragoman_backend_retries_total", "dragoman_session_moves_total", "dragoman_stream_pings_total",
	"dragoman_client_disconnects_total", "dragoman_text_tool_calls_total", "dragoman_build_info", "go_goroutines", "process_resident_memory_bytes",
}

// TestMetricsAfterKnownTraffic scrapes /metrics at start-up and after a
// success, an unknown alias, a backend 503, a Chat stream and a client
// hanging up mid-stream, and checks every request counter, histogram count
// and token count exactly.
func TestMetricsAfterKnownTraffic(t *testing.T) {
	backend := httptest.NewServer(stub.New(stub.Options{EventDelay: 30 * time.Millisecond}))
	defer backend.Close()
	loading := cannedBackend(t, http.StatusServiceUnavailable, `{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`)
	host := func(base string) string { u, _ := url.Parse(base); return u.Host }
	// A backend's label is its name: proxy_params.name, else host:port/model.
	S, B := host(backend.URL)+"/qwen3-coder", host(loading)+"/big"
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: "model_list:\n" +
		"  - model_name: claude-opus-5-5\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: " + backend.URL + "/v1\n      api_key: os.environ/TEST_BACKEND_KEY\n" +
		"  - model_name: loading-model\n    proxy_params:\n      model: vendorb/big\n      api_base: " + loading + "\n      api_key: os.environ/TEST_BACKEND_KEY\n      num_retries: 0\n"})

	mfs := scrape(t, h.proxy.URL)
	for _, f := range families {
		if _, ok := mfs[f]; !ok {
			t.Errorf("%s is not exported at start-up", f)
		}
	}
	checkSeries(t, mfs, "dragoman_session_moves_total", map[string]float64{
		"alias=claude-opus-5-5,reason=home_full": 0, "alias=claude-opus-5-5,reason=home_down": 0,
		"alias=loading-model,reason=home_full": 0, "alias=loading-model,reason=home_down": 0,
	})
	checkSeries(t, mfs, "dragoman_backend_up", map[string]float64{"backend=" + S: 1, "backend=" + B: 1})

	// A success.
	resp := h.post("/v1/messages", `{"model":"claude-opus-5-5","max_tokens":64,"messages":[{"role":"user","content":"say hello to the metrics"}]}`)
	var msg struct {
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if resp.StatusCode != 200 || msg.Usage.OutputTokens == 0 {
		t.Fatalf("success: %d %+v", resp.StatusCode, msg)
	}
	// An unknown alias, never a label value.
	resp = h.post("/v1/messages", `{"model":"secret-project-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("unknown alias: %d", resp.StatusCode)
	}
	// A backend 503.
	resp = h.post("/v1/messages", `{"model":"loading-model","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	resp.Body.Close()
	if resp.StatusCode != 529 {
		t.Fatalf("backend 503: %d", resp.StatusCode)
	}
	// A Chat stream, read to its end; its last chunk carries the usage.
	resp = h.post("/v1/chat/completions", `{"model":"claude-opus-5-5","stream":true,"messages":[{"role":"user","content":"stream something"}]}`)
	var chatUsage struct{ PromptTokens, CompletionTokens int }
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var chunk struct {
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &chunk) == nil && chunk.Usage != nil {
			chatUsage.PromptTokens, chatUsage.CompletionTokens = chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens
		}
	}
	resp.Body.Close()
	if chatUsage.CompletionTokens == 0 {
		t.Fatal("the chat stream carried no usage")
	}
	// A client that hangs up after the first token of a Messages stream.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.proxy.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-opus-5-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"a long story please"}]}`))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc = bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "content_block_delta") {
	}
	cancel()
	resp.Body.Close()

	want := map[string]float64{
		"endpoint=messages,alias=claude-opus-5-5,backend=" + S + ",status=200,error_type=none,kind=main":              1,
		"endpoint=messages,alias=unknown,backend=unknown,status=404,error_type=not_found,kind=main":                   1,
		"endpoint=messages,alias=loading-model,backend=" + B + ",status=529,error_type=overloaded,kind=main":          1,
		"endpoint=chat_completions,alias=claude-opus-5-5,backend=" + S + ",status=200,error_type=none,kind=main":      1,
		"endpoint=messages,alias=claude-opus-5-5,backend=" + S + ",status=200,error_type=client_disconnect,kind=main": 1,
		// Exported at 0 from start-up.
		"endpoint=messages,alias=loading-model,backend=" + B + ",status=200,error_type=none,kind=main":         0,
		"endpoint=chat_completions,alias=loading-model,backend=" + B + ",status=200,error_type=none,kind=main": 0,
		"endpoint=responses,alias=claude-opus-5-5,backend=" + S + ",status=200,error_type=none,kind=main":      0,
		"endpoint=responses,alias=loading-model,backend=" + B + ",status=200,error_type=none,kind=main":        0,
	}
	// The hang-up is reported when the proxy notices it: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for series(scrape(t, h.proxy.URL), "dragoman_requests_total")["endpoint=messages,alias=claude-opus-5-5,backend="+S+",status=200,error_type=client_disconnect,kind=main"] != 1 {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mfs = scrape(t, h.proxy.URL)
	checkSeries(t, mfs, "dragoman_requests_total", want)
	checkSeries(t, mfs, "dragoman_client_disconnects_total", map[string]float64{
		"endpoint=messages": 1, "endpoint=chat_completions": 0, "endpoint=count_tokens": 0, "endpoint=responses": 0, "endpoint=models": 0,
	})
	perRoute := func(opus, loading float64) map[string]float64 {
		return map[string]float64{"alias=claude-opus-5-5,backend=" + S: opus, "alias=loading-model,backend=" + B: loading}
	}
	byEndpoint := func(msgOpus, msgLoading, chatOpus float64) map[string]float64 {
		return map[string]float64{
			"endpoint=messages,alias=claude-opus-5-5,backend=" + S: msgOpus, "endpoint=messages,alias=loading-model,backend=" + B: msgLoading,
			"endpoint=chat_completions,alias=claude-opus-5-5,backend=" + S: chatOpus, "endpoint=chat_completions,alias=loading-model,backend=" + B: 0,
			"endpoint=responses,alias=claude-opus-5-5,backend=" + S: 0, "endpoint=responses,alias=loading-model,backend=" + B: 0,
		}
	}
	checkSeries(t, mfs, "dragoman_request_duration_seconds", byEndpoint(2, 1, 1))
	checkSeries(t, mfs, "dragoman_time_to_first_token_seconds", byEndpoint(1, 0, 1)) // the two streams
	checkSeries(t, mfs, "dragoman_output_tokens_per_second", perRoute(1, 0))         // the stream read to its end
	// Input and output tokens per route; no cached or reasoning tokens.
	tokens := map[string]float64{}
	for route, n := range map[string][2]int{
		"alias=claude-opus-5-5,backend=" + S: {msg.Usage.InputTokens + chatUsage.PromptTokens, msg.Usage.OutputTokens + chatUsage.CompletionTokens},
		"alias=loading-model,backend=" + B:   {0, 0},
	} {
		tokens[route+",kind=input"], tokens[route+",kind=output"] = float64(n[0]), float64(n[1])
		tokens[route+",kind=cache_read"], tokens[route+",kind=reasoning"] = 0, 0
	}
	checkSeries(t, mfs, "dragoman_tokens_total", tokens)
	info := series(mfs, "dragoman_build_info")
	if len(info) != 1 || !strings.HasPrefix(slices.Collect(maps.Keys(info))[0], "goversion=go") {
		t.Errorf("dragoman_build_info: %v", info)
	}
	exposition := mfs["dragoman_requests_total"].String()
	if strings.Contains(exposition, "secret-project-x") {
		t.Error("the client's unknown model name became a label value")
	}
}
