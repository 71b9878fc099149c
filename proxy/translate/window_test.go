package translate

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// promptOf makes a Messages request of about n tokens of English prose
// asking for maxTokens.
func promptOf(n int, maxTokens int) string {
	words := strings.Repeat("the quick brown fox jumps over the lazy dog ", n/9)
	return `{"model":"a","max_tokens":` + itoa(maxTokens) + `,"messages":[{"role":"user","content":"` + words + `"}]}`
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func sentMaxTokens(t *testing.T, body []byte) (int, bool) {
	t.Helper()
	var m struct {
		MaxTokens *int `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("invalid body: %v\n%s", err, body)
	}
	if m.MaxTokens == nil {
		return 0, false
	}
	return *m.MaxTokens, true
}

func TestWindowClampsMaxTokens(t *testing.T) {
	tgt := Target{BackendModel: "m", SupportsSystemMessage: true, ContextWindow: 8192}
	req, err := MessagesOnChatRequest([]byte(promptOf(3000, 128000)), resolverFor(tgt))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := sentMaxTokens(t, req.Body)
	p := req.InputTokens
	if p < 2500 || p > 3500 {
		t.Fatalf("estimate %d for a 3000-token prompt", p)
	}
	if want := 8192 - p - p/8 - 64; got != want {
		t.Errorf("max_tokens %d, want %d (window 8192, prompt %d)", got, want, p)
	}

	// A request that fits is left alone.
	req, _ = MessagesOnChatRequest([]byte(promptOf(3000, 1000)), resolverFor(tgt))
	if got, _ := sentMaxTokens(t, req.Body); got != 1000 {
		t.Errorf("max_tokens %d, want the 1000 asked", got)
	}

	// max_output_tokens wins over the window.
	tgt.MaxOutputTokens = 6000
	req, _ = MessagesOnChatRequest([]byte(promptOf(3000, 128000)), resolverFor(tgt))
	if got, _ := sentMaxTokens(t, req.Body); got != 6000 {
		t.Errorf("max_tokens %d, want max_output_tokens 6000", got)
	}

	// Unknown window: nothing clamped.
	req, _ = MessagesOnChatRequest([]byte(promptOf(3000, 128000)), resolverFor(tgtPlain))
	if got, _ := sentMaxTokens(t, req.Body); got != 128000 {
		t.Errorf("max_tokens %d with no window known", got)
	}

	// Close to the window, the margin gives way: what is left is sent.
	tgt = Target{BackendModel: "m", SupportsSystemMessage: true, ContextWindow: p + 100}
	req, err = MessagesOnChatRequest([]byte(promptOf(3000, 128000)), resolverFor(tgt))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := sentMaxTokens(t, req.Body); got != 100 {
		t.Errorf("max_tokens %d, want the 100 left", got)
	}
}

func TestWindowRefusesAPromptThatCannotFit(t *testing.T) {
	tgt := Target{BackendModel: "m", SupportsSystemMessage: true, ContextWindow: 2048}
	_, err := MessagesOnChatRequest([]byte(promptOf(3000, 100)), resolverFor(tgt))
	var ce *ContextOverflowError
	if !errors.As(err, &ce) || ce.Window != 2048 || ce.Tokens < 2500 {
		t.Fatalf("err %v, want a ContextOverflowError", err)
	}
	if !strings.HasPrefix(err.Error(), "prompt is too long: ") {
		t.Errorf("message %q", err)
	}
	// max_output_tokens does not let it through.
	tgt.MaxOutputTokens = 10
	if _, err := MessagesOnChatRequest([]byte(promptOf(3000, 100)), resolverFor(tgt)); !errors.As(err, &ce) {
		t.Errorf("with max_output_tokens: %v", err)
	}
}

func TestWindowChatPassThrough(t *testing.T) {
	words := strings.Repeat("the quick brown fox jumps over the lazy dog ", 330)
	body := `{"model":"a","max_completion_tokens":128000,"max_tokens":64000,"messages":[{"role":"user","content":[{"type":"text","text":"` + words + `"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + strings.Repeat("A", 200000) + `"}}]}]}`
	tgt := Target{BackendModel: "m", SupportsSystemMessage: true, ContextWindow: 8192}
	req, err := ChatOnChatRequest([]byte(body), resolverFor(tgt))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
	}
	if err := json.Unmarshal(req.Body, &m); err != nil {
		t.Fatal(err)
	}
	// The image counts as one image, not as its 200 KB of base64.
	p := req.InputTokens
	if p < 4000 || p > 5500 {
		t.Fatalf("estimate %d (3000 words of prose and an image)", p)
	}
	want := 8192 - p - p/8 - 64
	if m.MaxTokens != want || m.MaxCompletionTokens != want {
		t.Errorf("max_tokens %d, max_completion_tokens %d, want %d", m.MaxTokens, m.MaxCompletionTokens, want)
	}
	tgt.ContextWindow = 4000
	_, err = ChatOnChatRequest([]byte(`{"model":"a","messages":[{"role":"user","content":"`+words+words+`"}]}`), resolverFor(tgt))
	var ce *ContextOverflowError
	if !errors.As(err, &ce) || ce.Window != 4000 {
		t.Errorf("a prompt over the window without max_tokens: %v", err)
	}
}

func TestNoVisionImagesBecomePlaceholders(t *testing.T) {
	body := `{"model":"a","max_tokens":100,"messages":[
	 {"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},
	 {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a.png"}}]},
	 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"the file"},{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]}]}`
	req, err := MessagesOnChatRequest([]byte(body), resolverFor(Target{BackendModel: "m", SupportsSystemMessage: true, NoVision: true}))
	if err != nil {
		t.Fatal(err)
	}
	out := string(req.Body)
	if strings.Contains(out, "image_url") || strings.Contains(out, "iVBOR") || strings.Contains(out, "example.com") {
		t.Errorf("an image reached a backend without vision:\n%s", out)
	}
	if n := strings.Count(out, ImagePlaceholder); n != 2 {
		t.Errorf("%d placeholders, want 2:\n%s", n, out)
	}
	var chat struct {
		Messages []struct {
			Role    string         `json:"role"`
			Content jsontext.Value `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(req.Body, &chat); err != nil {
		t.Fatal(err)
	}
	if len(chat.Messages) != 3 || chat.Messages[2].Role != "tool" || !strings.Contains(string(chat.Messages[2].Content), "the file\\n"+ImagePlaceholder) {
		t.Errorf("the tool result's image must be its text's placeholder:\n%s", out)
	}
	// With vision, the same request carries both images.
	req, _ = MessagesOnChatRequest([]byte(body), resolverFor(tgtPlain))
	if n := strings.Count(string(req.Body), `"type":"image_url"`); n != 2 {
		t.Errorf("%d images with vision", n)
	}
	// A malformed image is still refused.
	bad := `{"model":"a","max_tokens":100,"messages":[{"role":"user","content":[{"type":"image"}]}]}`
	if _, err := MessagesOnChatRequest([]byte(bad), resolverFor(Target{BackendModel: "m", NoVision: true})); err == nil {
		t.Error("an image without a source passed")
	}
}

func TestWithMaxTokens(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"model":"m","max_tokens":32000,"messages":[]}`, `{"model":"m","max_tokens":3168,"messages":[]}`},
		{`{"max_completion_tokens":9000,"messages":[{"max_tokens":1}],"max_tokens":9000}`, `{"max_completion_tokens":3168,"messages":[{"max_tokens":1}],"max_tokens":3168}`},
	} {
		got, ok := WithMaxTokens([]byte(c.in), 3168)
		if !ok || string(got) != c.want {
			t.Errorf("%s: %s %v, want %s", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{`{"model":"m","messages":[]}`, `{"max_tokens":null}`, `not json`} {
		if got, ok := WithMaxTokens([]byte(in), 10); ok {
			t.Errorf("%s: %s, want no change", in, got)
		}
	}
	if RoomFor(19500, 16296) != 19500-16296-countedMargin || RoomFor(4096, 4090) != 0 {
		t.Errorf("RoomFor: %d %d", RoomFor(19500, 16296), RoomFor(4096, 4090))
	}
}
