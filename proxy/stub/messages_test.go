package stub

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

const bashTool = `"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`

func TestMessagesOnlyWithProtocol(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	resp := postJSON(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("a Chat-only stub answered /v1/messages with %d", resp.StatusCode)
	}
}

func TestMessagesAnswer(t *testing.T) {
	srv := httptest.NewServer(New(Options{Protocol: ProtocolMessages}))
	defer srv.Close()
	resp := postJSON(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":99,"messages":[{"role":"user","content":[{"type":"text","text":"stub:reasoning stub:tool"}]}],`+bashTool+`}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := `{"content":[{"id":"toolu_stub_1","input":{"command":"stub-command"},"name":"Bash","type":"tool_use"}],"id":"msg_stub","model":"m","role":"assistant","stop_reason":"tool_use","stop_sequence":null,"type":"message","usage":{"input_tokens":2,"output_tokens":8}}`
	if strings.TrimSpace(string(b)) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestMessagesStreamEvents(t *testing.T) {
	srv := httptest.NewServer(New(Options{Protocol: ProtocolMessages, Events: 2}))
	defer srv.Close()
	resp := postJSON(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":99,"stream":true,"messages":[{"role":"user","content":"stub:reasoning"}]}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^event: (\w+)\ndata: (.*)$`).FindAllStringSubmatch(string(b), -1) {
		var v struct{ Type string }
		if json.Unmarshal([]byte(m[2]), &v) != nil || v.Type != m[1] {
			t.Fatalf("event %s has data %s", m[1], m[2])
		}
		names = append(names, m[1])
	}
	got := strings.Join(names, " ")
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(string(b), `"signature_delta"`) || !strings.Contains(string(b), `"stop_reason":"end_turn"`) {
		t.Fatalf("stream lacks a signature or the stop reason:\n%s", b)
	}
}

func TestMessagesCountTokens(t *testing.T) {
	srv := httptest.NewServer(New(Options{Protocol: ProtocolMessages}))
	defer srv.Close()
	resp := postJSON(t, srv.URL+"/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"one two three"}]}`)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.TrimSpace(string(b)) != `{"input_tokens":3}` {
		t.Fatalf("count_tokens = %s", b)
	}
}
