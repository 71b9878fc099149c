package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestReplicasAgreeOnSessions: two proxy processes with one config and
// nothing shared; 200 sessions, each sent alternately through both, land
// on the same backend every time.
func TestReplicasAgreeOnSessions(t *testing.T) {
	var stubs []*stub.Server
	var cfg strings.Builder
	cfg.WriteString("model_list:\n")
	for range 3 {
		s := stub.New(stub.Options{Events: 1})
		stubs = append(stubs, s)
		fmt.Fprintf(&cfg, "  - model_name: coder\n    proxy_params: {model: vendorb/m, api_base: '%s', api_key: os.environ/DRAIN_BACKEND_KEY}\n", serveBackend(t, s))
	}
	cfg.WriteString("general_settings:\n  enable_vendora_pass_through: true\n")
	replicas := []*proxyProc{startProxyConfig(t, cfg.String()), startProxyConfig(t, cfg.String())}
	const sessions, turns = 200, 4
	for turn := range turns {
		for s := range sessions {
			p := replicas[(s+turn)%2]
			body := fmt.Sprintf(`{"model":"coder","max_tokens":8,"messages":[{"role":"user","content":"s%d t%d"}]}`, s, turn)
			req, _ := http.NewRequest(http.MethodPost, p.url+"/v1/messages", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+clientKey)
			req.Header.Set("X-Claude-Code-Session-Id", fmt.Sprintf("session-%04d", s))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("session %d turn %d: status %d", s, turn, resp.StatusCode)
			}
		}
	}
	where := map[string]int{} // user text → backend
	for i, s := range stubs {
		for _, r := range s.Requests() {
			var req struct {
				Messages []struct {
					Content string `json:"content"`
				} `json:"messages"`
			}
			if r.Path != "/v1/chat/completions" || json.Unmarshal(r.Body, &req) != nil || len(req.Messages) == 0 {
				continue
			}
			where[req.Messages[len(req.Messages)-1].Content] = i
		}
	}
	perBackend := make([]int, 3)
	for s := range sessions {
		home, ok := where[fmt.Sprintf("s%d t0", s)]
		if !ok {
			t.Fatalf("session %d's first request reached no backend", s)
		}
		perBackend[home]++
		for turn := 1; turn < turns; turn++ {
			if got, ok := where[fmt.Sprintf("s%d t%d", s, turn)]; !ok || got != home {
				t.Errorf("session %d: turn 0 on backend %d (replica 0 or 1), turn %d on %d (the other replica)", s, home, turn, got)
			}
		}
	}
	t.Logf("200 sessions through two replicas, %d requests each: sessions per backend %v", turns, perBackend)
}
