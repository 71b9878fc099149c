package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// A vendora/ backend speaks the Messages format: /v1/responses reaches it
// through the Chat ⇄ Messages translators (Responses → Chat → Messages,
// and the answer back), JSON and stream.

func TestResponsesNativeSDK(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	c := h.responsesClient(clientKey)
	ctx := context.Background()

	whole, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model: "local-model", Input: textInput("Say hello"), Instructions: openai.String("Be brief."), MaxOutputTokens: openai.Int(50),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := whole.OutputText(); !strings.Contains(got, "You said: Say hello") || whole.Model != "local-model" || whole.Status != "completed" {
		t.Errorf("non-stream: text %q model %q status %q", got, whole.Model, whole.Status)
	}
	if whole.Usage.InputTokens == 0 || whole.Usage.OutputTokens == 0 {
		t.Errorf("non-stream usage %+v", whole.Usage)
	}

	_, streamedResp, _ := streamed(t, c, responses.ResponseNewParams{Model: "local-model", Input: textInput("Stream please")})
	if got := streamedResp.OutputText(); !strings.Contains(got, "You said: Stream please") || streamedResp.Status != "completed" {
		t.Errorf("stream: text %q status %q", got, streamedResp.Status)
	}

	reqs := nativeRequests(t, h)
	if len(reqs) != 2 {
		t.Fatalf("the Messages backend got %d requests, want 2", len(reqs))
	}
	body := string(reqs[0].Body)
	if !strings.Contains(body, `"system":[{"type":"text","text":"Be brief."}]`) || !strings.Contains(body, `"max_tokens":50`) {
		t.Errorf("the backend's Messages request: %s", body)
	}
}

func TestResponsesNativeSDKToolRoundTrip(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	c := h.responsesClient(clientKey)
	ctx := context.Background()
	params := responses.ResponseNewParams{Model: "local-model", Input: textInput("stub:tool What is the weather in Paris?"), Tools: []responses.ToolUnionParam{weatherTool}}
	whole, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	_, streamedResp, snap := streamed(t, c, params)
	for name, resp := range map[string]*responses.Response{"non-stream": whole, "stream": streamedResp} {
		if len(resp.Output) != 1 || resp.Output[0].Type != "function_call" {
			t.Fatalf("%s: output %s", name, resp.RawJSON())
		}
		call := resp.Output[0].AsFunctionCall()
		if call.Name != "get_weather" || call.CallID != "toolu_stub_1" || compactJSON(t, call.Arguments) != `{"city":"stub-city"}` {
			t.Errorf("%s: call %+v", name, call)
		}
	}
	if len(snap.Output) != 1 || compactJSON(t, snap.Output[0].Arguments) != `{"city":"stub-city"}` {
		t.Errorf("accumulator snapshot %+v", snap.Output)
	}

	answerWeatherCall(t, c, whole.Output[0].AsFunctionCall())
	reqs := nativeRequests(t, h)
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, `"type":"tool_use","id":"toolu_stub_1","name":"get_weather"`) || !strings.Contains(last, `"type":"tool_result","tool_use_id":"toolu_stub_1"`) {
		t.Errorf("the round trip reached the backend as %s", last)
	}
}

// TestResponsesNativeCodexRequests sends every recorded Codex request to a
// Messages backend: each is translated and answered.
func TestResponsesNativeCodexRequests(t *testing.T) {
	h := newNativeHarness(t, harnessOptions{})
	for _, name := range fixtures.CodexRequests() {
		raw, err := fixtures.CodexRequest(name)
		if err != nil {
			t.Fatal(err)
		}
		var req map[string]any
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Fatal(err)
		}
		req["model"] = "local-model"
		resp := h.post("/v1/responses", toJSON(req))
		body := drain(t, resp)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"type":"response.completed"`) {
			t.Errorf("%s: %d %.400s", name, resp.StatusCode, body)
		}
	}
	if reqs := nativeRequests(t, h); len(reqs) != len(fixtures.CodexRequests()) {
		t.Fatalf("the Messages backend got %d requests", len(reqs))
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b.String()
}
