package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/docker/docker/api/types/container"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
)

// The stub backend's deterministic answer to a plain user text.
func stubAnswer(text string) string { return "Hello from stub-backend. You said: " + text }

// The stack comes up from docker-compose.yml: images built FROM scratch from
// bin/ (nothing pulled), every service healthy, small images, no root.
func TestStackUp(t *testing.T) {
	s := upStack(t)
	t.Logf("project %s: built and healthy in %v (first test to ask starts it)", s.project, s.upTook.Round(time.Millisecond))
	ctx := context.Background()
	for _, svc := range services {
		info := s.inspect(t, svc)
		if info.State.Health == nil || info.State.Health.Status != "healthy" {
			t.Errorf("%s: health %+v, want healthy", svc, info.State.Health)
		}
		if p := info.HostConfig.RestartPolicy.Name; p != container.RestartPolicyUnlessStopped {
			t.Errorf("%s: restart policy %q, want unless-stopped", svc, p)
		}
		img, err := s.docker.ImageInspect(ctx, info.Image)
		if err != nil {
			t.Fatalf("%s: image: %v", svc, err)
		}
		if len(img.RepoDigests) != 0 {
			t.Errorf("%s: image %v has registry digests %v: it was pulled, not built", svc, img.RepoTags, img.RepoDigests)
		}
		// 32 MB: the proxy carries a pure-Go SQLite engine (modernc.org/sqlite,
		// about 7 MB) and pgx for per-user keys (issue 33), so that the
		// binary stays static and the image FROM scratch; it was 20 MB before.
		if img.Size >= 32<<20 {
			t.Errorf("%s: image is %.1f MB, want under 32 MB", svc, float64(img.Size)/(1<<20))
		}
		if img.Config == nil || img.Config.User != "65534:65534" {
			t.Errorf("%s: image user %q, want 65534:65534", svc, img.Config.User)
		}
		if img.Config.Healthcheck == nil || len(img.Config.Healthcheck.Test) < 2 || img.Config.Healthcheck.Test[0] != "CMD" {
			t.Errorf("%s: image health check %+v, want the binary's own flag in exec form", svc, img.Config.Healthcheck)
		}
		t.Logf("%-8s %-28s %5.1f MB  %s", svc, strings.Join(img.RepoTags, ","), float64(img.Size)/(1<<20), info.State.Health.Status)
	}
}

func chatClient(s *stack, t *testing.T) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(s.proxyURL(t)+"/v1"), ooption.WithAPIKey(s.key), ooption.WithMaxRetries(0))
}

// The official Chat Completions SDK, through the proxy container, to the stub.
func TestStackChatCompletionsSDK(t *testing.T) {
	s := upStack(t)
	t.Run("non-stream", func(t *testing.T) {
		text := "chat non-stream " + randomHex(4)
		client := chatClient(s, t)
		res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:     "local-model",
			Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
			MaxTokens: openai.Int(64),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Choices) != 1 || res.Choices[0].Message.Content != stubAnswer(text) {
			t.Fatalf("choices = %+v", res.Choices)
		}
		if res.Model != "local-model" || res.Choices[0].FinishReason != "stop" {
			t.Errorf("model %q finish %q", res.Model, res.Choices[0].FinishReason)
		}
		checkForwarded(t, s, text, false)
	})
	t.Run("stream", func(t *testing.T) {
		text := "chat stream " + randomHex(4)
		client := chatClient(s, t)
		stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model:         "claude-opus-5-5",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
			MaxTokens:     openai.Int(64),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		var acc openai.ChatCompletionAccumulator
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if chunks < 2 || len(acc.Choices) != 1 || acc.Choices[0].Message.Content != stubAnswer(text) {
			t.Fatalf("%d chunks, accumulated %+v", chunks, acc.Choices)
		}
		if acc.Usage.CompletionTokens == 0 {
			t.Errorf("usage = %+v", acc.Usage)
		}
		checkForwarded(t, s, text, true)
	})
}

// The official Messages SDK, the coding client's format, through the proxy
// container: x-api-key (SDK default) and Authorization: Bearer (what
// Claude Code sends from ANTHROPIC_AUTH_TOKEN).
func TestStackMessagesSDK(t *testing.T) {
	s := upStack(t)
	params := func(text string) anthropic.MessageNewParams {
		return anthropic.MessageNewParams{
			Model:     "claude-opus-5-5",
			MaxTokens: 64,
			System:    []anthropic.TextBlockParam{{Text: systemText}},
			Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
		}
	}
	t.Run("non-stream", func(t *testing.T) {
		text := "messages non-stream " + randomHex(4)
		client := anthropic.NewClient(aoption.WithBaseURL(s.proxyURL(t)), aoption.WithAPIKey(s.key), aoption.WithMaxRetries(0))
		msg, err := client.Messages.New(context.Background(), params(text))
		if err != nil {
			t.Fatal(err)
		}
		// The system text is folded into the user turn (supports_system_message:
		// false), so the stub's echo starts with it: check the start only.
		if len(msg.Content) != 1 || !strings.HasPrefix(msg.Content[0].Text, stubAnswer("")) {
			t.Fatalf("content = %+v", msg.Content)
		}
		if string(msg.Model) != "claude-opus-5-5" || msg.StopReason != anthropic.StopReasonEndTurn || !strings.HasPrefix(msg.ID, "msg_") {
			t.Errorf("id %q model %q stop %q", msg.ID, msg.Model, msg.StopReason)
		}
		if msg.Usage.InputTokens == 0 || msg.Usage.OutputTokens == 0 {
			t.Errorf("usage = %+v", msg.Usage)
		}
		checkSystemFolded(t, checkForwarded(t, s, text, false))
	})
	t.Run("stream", func(t *testing.T) {
		text := "messages stream " + randomHex(4)
		client := anthropic.NewClient(aoption.WithBaseURL(s.proxyURL(t)), aoption.WithAuthToken(s.key), aoption.WithMaxRetries(0))
		stream := client.Messages.NewStreaming(context.Background(), params(text))
		var msg anthropic.Message
		var events []string
		for stream.Next() {
			ev := stream.Current()
			events = append(events, ev.Type)
			if err := msg.Accumulate(ev); err != nil {
				t.Fatalf("accumulate %s: %v", ev.Type, err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(events) < 5 || events[0] != "message_start" || events[len(events)-1] != "message_stop" {
			t.Errorf("events %v: want message_start … message_stop", events)
		}
		if len(msg.Content) != 1 || !strings.HasPrefix(msg.Content[0].Text, stubAnswer("")) {
			t.Fatalf("content = %+v", msg.Content)
		}
		if msg.StopReason != anthropic.StopReasonEndTurn || msg.Usage.OutputTokens == 0 {
			t.Errorf("stop %q usage %+v", msg.StopReason, msg.Usage)
		}
		checkSystemFolded(t, checkForwarded(t, s, text, true))
	})
}

// systemText is the system prompt of the Messages tests; with
// supports_system_message: false it must reach the backend inside a user turn.
const systemText = "You are terse."

// checkForwarded checks the backend request behind an answer: the backend
// model of deploy/config.yaml, the backend key from the env file, and no
// system role (supports_system_message: false).
func checkForwarded(t *testing.T, s *stack, text string, stream bool) stubRequest {
	t.Helper()
	r := s.forwarded(t, text)
	b := r.chat(t)
	if b.Model != "stub-model" || b.Stream != stream {
		t.Errorf("backend request model %q stream %v, want stub-model %v", b.Model, b.Stream, stream)
	}
	if got := r.header("Authorization"); got != "Bearer "+backendKey {
		t.Errorf("backend Authorization %q, want the BACKEND_API_KEY of the env file", got)
	}
	for _, m := range b.Messages {
		if m.Role == "system" {
			t.Errorf("a system message reached the backend: %s", r.Body)
		}
	}
	return r
}

// checkSystemFolded checks that the Messages request's system text reached
// the backend, inside a user turn.
func checkSystemFolded(t *testing.T, r stubRequest) {
	t.Helper()
	if !strings.Contains(string(r.Body), systemText) {
		t.Errorf("the system text %q did not reach the backend: %s", systemText, r.Body)
	}
}

// The spec's own request (curl: a JSON body, no Content-Type), and its errors.
func TestStackSpecRequests(t *testing.T) {
	s := upStack(t)
	const body = `{"model":"claude-opus-5-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	status, out := s.post(t, "/v1/messages", s.key, body)
	var msg struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(out, &msg); err != nil || status != http.StatusOK {
		t.Fatalf("POST /v1/messages: %d %s (%v)", status, out, err)
	}
	if msg.Type != "message" || msg.Role != "assistant" || len(msg.Content) != 1 || msg.Content[0].Text != stubAnswer("hi") {
		t.Errorf("answer %s", out)
	}

	status, out = s.post(t, "/v1/chat/completions", s.key, strings.Replace(body, "claude-opus-5-5", "local-model", 1))
	if status != http.StatusOK || !strings.Contains(string(out), stubAnswer("hi")) {
		t.Errorf("POST /v1/chat/completions: %d %s", status, out)
	}

	status, out = s.post(t, "/v1/messages", s.key, strings.Replace(body, "claude-opus-5-5", "no-such-model", 1))
	if status != http.StatusNotFound || !strings.Contains(string(out), "not_found_error") || !strings.Contains(string(out), "no-such-model") {
		t.Errorf("unknown alias: %d %s, want 404 not_found_error naming it", status, out)
	}
	status, out = s.post(t, "/v1/messages", "wrong-key", body)
	if status != http.StatusUnauthorized || !strings.Contains(string(out), "authentication_error") {
		t.Errorf("wrong key: %d %s, want 401 authentication_error", status, out)
	}
	if strings.Contains(string(out), s.key) {
		t.Errorf("the 401 answer leaks the key: %s", out)
	}
}

// The warmer container reads the proxy's config (WARMER_CONFIG) and sends
// the backend a max_tokens 1 request per backend model, every
// WARMER_INTERVAL (2 s in the tests' env file).
func TestStackWarmerKeepsBackendWarm(t *testing.T) {
	s := upStack(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var warm []stubRequest
		for _, r := range s.backendRequests(t) {
			if r.header("User-Agent") == "dragoman-warmer" {
				warm = append(warm, r)
			}
		}
		if len(warm) >= 2 {
			for _, r := range warm {
				b := r.chat(t)
				if r.Path != "/v1/chat/completions" || b.Model != "stub-model" || b.MaxTokens == nil || *b.MaxTokens != 1 || b.Stream {
					t.Errorf("warm request %s %s: %s, want model stub-model, max_tokens 1, no stream", r.Method, r.Path, r.Body)
				}
				if got := r.header("Authorization"); got != "Bearer "+backendKey {
					t.Errorf("warm request Authorization %q, want the backend key", got)
				}
			}
			gap := warm[len(warm)-1].Time.Sub(warm[len(warm)-2].Time)
			t.Logf("%d warm requests (max_tokens 1) so far; the last two %v apart (WARMER_INTERVAL %v)", len(warm), gap.Round(time.Millisecond), warmerInterval)
			if gap < warmerInterval/2 {
				t.Errorf("warm requests %v apart, want about WARMER_INTERVAL %v", gap, warmerInterval)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d warm requests reached the backend in 20 s, want 2 or more (WARMER_INTERVAL %v)", len(warm), warmerInterval)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Restart the proxy container: it comes back healthy and serves both
// formats again (its host port may change: it is read afresh).
func TestStackProxyRestart(t *testing.T) {
	s := upStack(t)
	before := s.inspect(t, proxyService)
	timeout := 10
	start := time.Now()
	if err := s.docker.ContainerRestart(context.Background(), before.ID, container.StopOptions{Timeout: &timeout}); err != nil {
		t.Fatalf("restart: %v", err)
	}
	s.waitHealthy(t, proxyService, time.Minute)
	after := s.inspect(t, proxyService)
	if after.State.StartedAt == before.State.StartedAt {
		t.Fatalf("the proxy container was not restarted (started at %s)", after.State.StartedAt)
	}
	t.Logf("proxy restarted and healthy again in %v", time.Since(start).Round(time.Millisecond))

	text := "after restart " + randomHex(4)
	mclient := anthropic.NewClient(aoption.WithBaseURL(s.proxyURL(t)), aoption.WithAPIKey(s.key), aoption.WithMaxRetries(0))
	msg, err := mclient.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model:     "claude-opus-5-5",
		MaxTokens: 64,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	})
	if err != nil {
		t.Fatalf("Messages after restart: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != stubAnswer(text) {
		t.Errorf("Messages after restart: content %+v", msg.Content)
	}
	checkForwarded(t, s, text, false)

	chatText := "chat after restart " + randomHex(4)
	client := chatClient(s, t)
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "local-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(chatText)},
	})
	if err != nil {
		t.Fatalf("Chat Completions after restart: %v", err)
	}
	if len(res.Choices) != 1 || res.Choices[0].Message.Content != stubAnswer(chatText) {
		t.Errorf("Chat Completions after restart: %+v", res.Choices)
	}
}
