package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/server"
)

// poolBenchAnswer is a backend's small non-stream Chat Completions answer.
const poolBenchAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there."},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

// BenchmarkPool is what a pool costs a request: the same small Messages
// request, with a session id, through the proxy in front of one backend
// and in front of a pool of three (session affinity), in-process over
// loopback. The difference between the two is the pool's cost (issue 11:
// at most 5 µs).
func BenchmarkPool(b *testing.B) {
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			var y strings.Builder
			y.WriteString("model_list:\n")
			for i := range n {
				fmt.Fprintf(&y, "  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '%s', api_key: k, name: b%d}\n", cannedBackend(b, http.StatusOK, poolBenchAnswer), i)
			}
			cfg := loadConfig(b, y.String()+"general_settings: {enable_vendora_pass_through: true}\n")
			bal := balance.New(cfg, balance.Options{})
			proxy := httptest.NewServer(quietServer(b, cfg, bal, server.Options{}))
			b.Cleanup(proxy.Close)
			client := &http.Client{}
			send := func() {
				req := smallRequest(proxy.URL+"/v1/messages", false)
				req.Header.Set(server.SessionHeader, "179b29e7-4a3f-4eb6-a37f-0c8eb28d1106")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if got := drain(b, resp); resp.StatusCode != 200 {
					b.Fatalf("status %d: %s", resp.StatusCode, got)
				}
			}
			for range 50 {
				send()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				send()
			}
		})
	}
}
