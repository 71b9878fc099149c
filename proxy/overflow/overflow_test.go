package overflow

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

func readFixture(t *testing.T, name string) fixtures.OverflowError {
	t.Helper()
	f, err := fixtures.ReadOverflowError(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDetectRecordedWordings maps each server's recorded wording to the
// Messages text its fixture wants (the numbers are in that text).
func TestDetectRecordedWordings(t *testing.T) {
	all, err := fixtures.OverflowErrors()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 16 {
		t.Fatalf("only %d recorded wordings", len(all))
	}
	for _, f := range all {
		t.Run(f.Name, func(t *testing.T) {
			o, ok := Detect(f.Status, f.Body)
			if !ok {
				t.Fatalf("not recognized: %s", f.Body)
			}
			if got := o.Message(); got != f.Want {
				t.Errorf("message %q, want %q (%+v)", got, f.Want, o)
			}
		})
	}
}

func TestWithWindowFillsWhatTheBackendLeftOut(t *testing.T) {
	for _, c := range []struct {
		file, want string
	}{
		{"ollama-openai.txt", "prompt is too long: the model's maximum is 8192 tokens"},
		{"ollama-excess.txt", "prompt is too long: 12213 tokens > 8192 maximum"},
		// The backend's own maximum wins over the configured one.
		{"llamacpp.txt", "prompt is too long: 9000 tokens > 8192 maximum"},
	} {
		f := readFixture(t, c.file)
		o, _ := Detect(f.Status, f.Body)
		if got := o.WithWindow(8192).Message(); got != c.want {
			t.Errorf("%s: %q, want %q", c.file, got, c.want)
		}
	}
	f := readFixture(t, "ollama-native.txt")
	o, _ := Detect(f.Status, f.Body)
	if got := o.WithWindow(8192).WithPrompt(9500).Message(); got != "prompt is too long: 9500 tokens > 8192 maximum" {
		t.Errorf("with a prompt count over the window: %q", got)
	}
	if got := o.WithWindow(8192).WithPrompt(7000).Message(); strings.Contains(got, "7000") {
		t.Errorf("a count under the window contradicts the backend, yet was used: %q", got)
	}
}

func TestDetectRefusesOtherErrors(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
	}{
		{503, `{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`},
		{429, `{"error":{"message":"too many tokens per minute: prompt is too long for your tier","type":"rate_limit_error"}}`},
		{404, `{"error":{"message":"The model 'x' does not exist.","type":"NotFoundError","code":404}}`},
		{400, `{"error":{"message":"registry.ollama.ai/library/gemma does not support tools","type":"invalid_request_error"}}`},
		{400, `{"error":{"message":"max_tokens must be at least 1, got 0.","type":"BadRequestError","code":400}}`},
		{500, `{"error":{"code":500,"message":"Jinja Exception: System message must be at the beginning","type":"server_error"}}`},
		{400, `not json at all`},
		{200, `{"error":{"message":"prompt is too long"}}`},
		// Rate limits, refused keys, unknown models and overload that speak
		// of tokens and even of the context are never an overflow.
		{429, `{"error":{"message":"Rate limit reached: 40000 tokens requested exceeds the 30000 tokens per minute of your tier (context length 8192)","type":"rate_limit_error"}}`},
		{429, `{"error":"too many tokens: the input of 9000 tokens exceeds the maximum context of 8192 for free keys"}`},
		{401, `{"error":{"message":"invalid token: the token exceeds the maximum context length","type":"authentication_error"}}`},
		{403, `{"error":{"message":"monthly quota of 1000000 tokens exceeded; context window 8192","type":"permission_error"}}`},
		{404, `{"error":{"message":"no model with a context length over 8192 tokens","type":"not_found_error"}}`},
		{503, `{"error":{"message":"Loading model: the context size (8192 tokens) exceeds the free memory","type":"unavailable_error"}}`},
		{400, `{"error":{"message":"too many tokens per minute: limit 30000, requested 40000 tokens","type":"invalid_request_error"}}`},
	} {
		if o, ok := Detect(c.status, []byte(c.body)); ok {
			t.Errorf("%d %s: taken for an overflow (%+v)", c.status, c.body, o)
		}
	}
}

func TestDetectPlainTextAndCodes(t *testing.T) {
	if o, ok := Detect(400, []byte("request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it\n")); !ok || o.Tokens != 9000 || o.Maximum != 8192 {
		t.Errorf("plain text body: %+v %v", o, ok)
	}
	if _, ok := Detect(400, []byte(`{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}}`)); !ok {
		t.Error("the Chat code alone was not recognized")
	}
	if _, ok := Detect(400, []byte(`{"error":{"message":"no room","type":"exceed_context_size_error","code":400}}`)); !ok {
		t.Error("llama.cpp's type alone was not recognized")
	}
	// vLLM's max_tokens check names the output asked for: the prompt
	// itself fits.
	f := readFixture(t, "vllm-max-tokens.txt")
	o, _ := Detect(f.Status, f.Body)
	if o.Output != 32000 || o.Tokens-o.Output >= o.Maximum {
		t.Errorf("vLLM max_tokens: %+v", o)
	}
}

func TestRenderedBodies(t *testing.T) {
	o := Overflow{Tokens: 9000, Maximum: 8192}
	var m struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(o.MessagesError(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "error" || m.Error.Type != "invalid_request_error" || m.Error.Message != "prompt is too long: 9000 tokens > 8192 maximum" {
		t.Errorf("Messages body: %s", o.MessagesError())
	}
	var c struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   string `json:"param"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(o.ChatError(), &c); err != nil {
		t.Fatal(err)
	}
	if c.Error.Code != "context_length_exceeded" || c.Error.Type != "invalid_request_error" || c.Error.Param != "messages" ||
		c.Error.Message != "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages." {
		t.Errorf("Chat body: %s", o.ChatError())
	}
	// What a Chat client recognizes must survive a round trip through
	// Detect, so that a proxy in front of the proxy maps it too.
	if back, ok := Detect(400, o.ChatError()); !ok || back != o {
		t.Errorf("Chat body read back as %+v %v", back, ok)
	}
	if back, ok := Detect(400, o.MessagesError()); !ok || back != o {
		t.Errorf("Messages body read back as %+v %v", back, ok)
	}
}
