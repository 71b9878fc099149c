package server_test

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestMetricsResponsesFirstToken: a Responses stream counts one time to
// first token (its first response.output_text.delta), as the Messages and
// Chat streams do; a Responses answer without a stream counts none.
func TestMetricsResponsesFirstToken(t *testing.T) {
	h := newHarness(t, harnessOptions{metrics: true, stub: stub.Options{Events: 4}})
	for _, stream := range []string{"true", "false"} {
		resp := h.post("/v1/responses", `{"model":"claude-opus-5-5","stream":`+stream+`,"input":"hello"}`)
		if text := drain(t, resp); resp.StatusCode != 200 || !strings.Contains(text, "completed") {
			t.Fatalf("stream %s: %d\n%s", stream, resp.StatusCode, text)
		}
	}
	mfs := scrape(t, h.proxy.URL)
	counted := func(name string) (n float64) {
		for k, v := range series(mfs, name) {
			if strings.Contains(k, "endpoint=responses,") {
				n += v
			}
		}
		return n
	}
	if n := counted("dragoman_request_duration_seconds"); n != 2 {
		t.Fatalf("dragoman_request_duration_seconds counts %v Responses requests, want 2", n)
	}
	if n := counted("dragoman_time_to_first_token_seconds"); n != 1 {
		t.Fatalf("dragoman_time_to_first_token_seconds counts %v Responses streams, want 1 (the stream; the JSON answer has no first token)", n)
	}
}
