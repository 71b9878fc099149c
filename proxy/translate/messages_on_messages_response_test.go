package translate

import (
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// messagesUsage reads a usage object as the JSON decoder does (anything
// but an object is no usage, as MessagesUsage has always had it).
func TestMessagesUsageAsTheDecoder(t *testing.T) {
	for _, v := range []string{
		`{"input_tokens":80,"output_tokens":28,"cache_read_input_tokens":24,"cache_creation_input_tokens":3}`,
		`{"input_tokens":80,"output_tokens":28,"cache_creation":{"ephemeral_5m_input_tokens":0},"service_tier":"standard","server_tool_use":null}`,
		`{}`,
		`{"input_tokens":1,"input_tokens":2}`,
		`{"input_tokens":1,"input_tokens":null}`,
		`{ "output_tokens" : -5 }`,
		`{"output_tokens":"5"}`,
		`{"output_tokens":1.5}`,
		`{"output_tokens":1e3}`,
		`{"output_tokens":99999999999999999999999}`,
		`{"output_tokens":true}`,
		`{"output_tokens":[1]}`,
		`[]`,
		`null`,
		`{"input_tokens":1`,
	} {
		got, ok := messagesUsage([]byte(v))
		var want messages.Usage
		err := json.Unmarshal([]byte(v), &want, decodeOpts)
		isObject := len(v) > 0 && v[0] == '{'
		if ok != (err == nil && isObject) || (ok && got != want) {
			t.Errorf("%s: got %+v, %v; the decoder: %+v, %v", v, got, ok, want, err)
		}
	}
}

// MessagesResponseModel rewrites the model alone (every other byte kept)
// and reads the usage, as ChatResponseModel and MessagesUsage do apart.
func TestMessagesResponseModel(t *testing.T) {
	for _, body := range []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"qwen3","content":[{"type":"text","text":"hi \"model\""}],"stop_reason":"end_turn","usage":{"input_tokens":80,"output_tokens":28,"cache_read_input_tokens":24}}`,
		`{"id":"msg_1","content":[],"usage":{"input_tokens":1,"output_tokens":2}}`,
		`{}`,
		`{"model":"a","model":"b","usage":{"output_tokens":"x"}}`,
	} {
		out, usage, err := MessagesResponseModel([]byte(body), "claude-x")
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		want, err := ChatResponseModel([]byte(body), "claude-x")
		if err != nil || string(out) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s (%v)", body, out, want, err)
		}
		wantUsage := MessagesUsage([]byte(body))
		if (usage == nil) != (wantUsage == nil) || usage != nil && (usage.PromptTokens != wantUsage.PromptTokens || usage.CompletionTokens != wantUsage.CompletionTokens || usage.PromptTokensDetails.CachedTokens != wantUsage.PromptTokensDetails.CachedTokens) {
			t.Errorf("%s: usage %+v, MessagesUsage %+v", body, usage, wantUsage)
		}
	}
	if _, _, err := MessagesResponseModel([]byte(`{"model":`), "x"); err == nil {
		t.Error("a body cut short: no error")
	}
	out, usage, _ := MessagesResponseModel([]byte(`{"model":"q","usage":{"input_tokens":80,"output_tokens":28,"cache_read_input_tokens":24}}`), "claude-x")
	if string(out) != `{"model":"claude-x","usage":{"input_tokens":80,"output_tokens":28,"cache_read_input_tokens":24}}` || usage == nil || usage.PromptTokens != 104 || usage.CompletionTokens != 28 || usage.PromptTokensDetails.CachedTokens != 24 {
		t.Errorf("got %s, %+v", out, usage)
	}
}

// BenchmarkMessagesResponseModel: a Messages backend's non-stream answer
// (the stub's, as bin/bench runs it) with its model rewritten and its
// usage read.
func BenchmarkMessagesResponseModel(b *testing.B) {
	body := []byte(`{"content":[{"text":"Hello from stub-backend. You said: hi","type":"text"}],"id":"msg_stub","model":"stub-model","role":"assistant","stop_reason":"end_turn","stop_sequence":null,"type":"message","usage":{"input_tokens":12043,"output_tokens":64,"cache_read_input_tokens":0}}`)
	runBench(b, body, func(body []byte) {
		out, usage, err := MessagesResponseModel(body, "claude-native")
		if err != nil || usage == nil {
			b.Fatal(err)
		}
		bufpool.Put(out)
	})
}
