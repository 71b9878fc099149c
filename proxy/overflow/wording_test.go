package overflow

import "testing"

func TestWording(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"error":{"code":400,"message":"request (6031 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":6031,"n_ctx":4096}}`, "llama.cpp"},
		{400, `{"error":{"message":"Input length of 9000 tokens exceeds the maximum context of 8192"}}`, "by meaning"},
		{400, `{"error":{"message":"no words for it","type":"exceed_context_size_error"}}`, "by its error code"},
		{429, `{"error":{"message":"rate limit: too many tokens per minute"}}`, ""},
		{400, `{"error":{"message":"messages: required"}}`, ""},
	} {
		if got := Wording(c.status, []byte(c.body)); got != c.want {
			t.Errorf("%d %s: %q, want %q", c.status, c.body, got, c.want)
		}
	}
}
