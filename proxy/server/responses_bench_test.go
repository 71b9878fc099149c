package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/server"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// BenchmarkResponses43KB is the bench's "responses 43 KB" case in-process:
// the recorded Codex request (compacted, as bin/bench sends it), through
// Dragoman to a Chat backend that answers what the stub answers at
// --events 64, one connection, one request at a time. cpu-ns/op counts
// client, proxy and backend alike.
func BenchmarkResponses43KB(b *testing.B) {
	raw, err := fixtures.CodexRequest("01-text-turn.json")
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		b.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		name, body := "stream", compact.Bytes()
		if !stream {
			name, body = "non-stream", bytes.Replace(body, []byte(`"stream":true`), []byte(`"stream":false`), 1)
		}
		b.Run(name, func(b *testing.B) {
			answer, ctype := chatStubAnswer(b, stream)
			bs := answerServer(b, answer, ctype)
			yaml := "model_list:\n  - model_name: coder\n    proxy_params: {model: vendorb/stub-model, api_base: '" + bs.URL + "/v1', api_key: k}\n"
			cfg := loadConfig(b, yaml)
			dm := httptest.NewUnstartedServer(quietServer(b, cfg, balance.New(cfg, balance.Options{}), server.Options{}))
			dm.Config.ConnContext = server.ConnContext // as bin/proxy serves: the connection's memo
			dm.Start()
			b.Cleanup(dm.Close)
			benchPosts(b, dm.URL+"/v1/responses", body, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + clientKey}})
		})
	}
}

// chatStubAnswer is the stub's Chat answer (--events 64) to a small
// request, and its content type.
func chatStubAnswer(b *testing.B, stream bool) ([]byte, string) {
	s := httptest.NewServer(stub.New(stub.Options{Events: 64}))
	defer s.Close()
	req := `{"model":"stub-model","messages":[{"role":"user","content":"hi"}],"stream":` + strconv.FormatBool(stream) + `}`
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(req)))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("stub: %d %v: %s", resp.StatusCode, err, out)
	}
	return out, resp.Header.Get("Content-Type")
}
