package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/server"
	"github.com/dragoman-dev/dragoman/proxy/stub"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// BenchmarkNative54KB is issue 12's bench case in-process: the captured
// 54 KB client request, non-stream, through Dragoman to a vendora/ stub,
// and the request Dragoman forwards sent to the stub directly, one
// connection, one request at a time (bin/bench compares with the floor). Client, proxy and stub share the process: cpu-ns/op counts
// all three, so a proxy's own cost is its figure less direct's.
func BenchmarkNative54KB(b *testing.B) {
	capture, err := fixtures.ClientCapture("01-text-turn.json")
	if err != nil {
		b.Fatal(err)
	}
	body := bytes.Replace([]byte(capture.Body), []byte(`"stream": true`), []byte(`"stream": false`), 1)
	bs := answerServer(b, stubAnswer(b, body), "application/json")
	yaml := "model_list:\n  - model_name: claude-opus-5-5\n    proxy_params: {model: vendora/stub-model, api_base: '" + bs.URL + "/v1', api_key: k}\n" +
		"general_settings: {enable_vendora_pass_through: true}\n"
	cfg := loadConfig(b, yaml)
	bal := balance.New(cfg, balance.Options{})
	dm := httptest.NewServer(quietServer(b, cfg, bal, server.Options{}))
	b.Cleanup(dm.Close)
	forwarded, err := translate.MessagesOnMessagesRequest(body, func(string) (translate.Target, error) {
		return translate.Target{BackendModel: "stub-model", DropParams: strings.Join(config.DefaultDropParams, ",")}, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, via := range []struct {
		name string
		url  string
		body []byte
	}{
		{"dragoman", dm.URL, body},
		{"direct", bs.URL, forwarded.Body},
	} {
		b.Run(via.name, func(b *testing.B) {
			h := capture.Header()
			h.Set("Authorization", "Bearer "+clientKey)
			benchPosts(b, via.url+"/v1/messages", via.body, h)
		})
	}
}

// benchPosts posts body to url with header h, one request at a time on
// one connection (50 first to warm up), and reports allocations and the
// process's CPU per request; an answer other than 200 fails b.
func benchPosts(b *testing.B, url string, body []byte, h http.Header) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	send := func() {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header = h.Clone()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode, got)
		}
	}
	for range 50 {
		send()
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		send()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// answerServer is a backend that reads each request's body and answers
// answer, with content type ctype, doing nothing else: the stub's own work
// (it decodes and records each request) would drown the proxies'
// difference.
func answerServer(b *testing.B, answer []byte, ctype string) *httptest.Server {
	bs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := bufs.Get().(*[]byte)
		for {
			n, err := r.Body.Read((*buf)[:cap(*buf)])
			if err != nil || n == 0 {
				break
			}
		}
		bufs.Put(buf)
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		w.Write(answer)
	}))
	b.Cleanup(bs.Close)
	return bs
}

var bufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// stubAnswer is the stub's non-stream Messages answer to body, as bin/bench
// runs it (--events 64).
func stubAnswer(b *testing.B, body []byte) []byte {
	s := httptest.NewServer(stub.New(stub.Options{Protocol: stub.ProtocolMessages, Events: 64}))
	defer s.Close()
	resp, err := http.Post(s.URL+"/v1/messages", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("stub: %d %v: %s", resp.StatusCode, err, out)
	}
	return out
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
