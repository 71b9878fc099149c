package server_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// responsesClient is the official Go SDK's client, pointed at the proxy.
func (h *harness) responsesClient(key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(h.proxy.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

func textInput(s string) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfString: openai.String(s)}
}

func itemsInput(items ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: items}
}

var weatherTool = responses.ToolParamOfFunction("get_weather", map[string]any{
	"type":       "object",
	"properties": map[string]any{"city": map[string]any{"type": "string"}},
	"required":   []string{"city"},
}, false)

// streamed runs a streaming request through the SDK, feeds every event to
// the SDK's accumulator, and returns the event types and the response the
// accumulator rebuilt.
func streamed(t *testing.T, c openai.Client, params responses.ResponseNewParams) ([]string, *responses.Response, responses.ResponseAccumulatorSnapshot) {
	t.Helper()
	stream := c.Responses.NewStreaming(t.Context(), params)
	var acc responses.ResponseAccumulator
	var types []string
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != int64(len(types)) {
			t.Errorf("event %d (%s) has sequence_number %d", len(types), ev.Type, ev.SequenceNumber)
		}
		types = append(types, ev.Type)
		var ws responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &ws); err != nil {
			t.Fatal(err)
		}
		if err := acc.AddEvent(ws); err != nil {
			t.Fatalf("accumulator refused %s: %v\n%s", ev.Type, err, ev.RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	resp, err := acc.ReconstructedResponse()
	if err != nil {
		t.Fatalf("accumulator: %v (events %v)", err, types)
	}
	return types, resp, acc.Snapshot()
}

func TestResponsesSDKNonStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.responsesClient(clientKey)
	resp, err := c.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: "local-model", Input: textInput("Say hello"), Instructions: openai.String("Be brief."),
		MaxOutputTokens: openai.Int(50), Store: openai.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.OutputText(); !strings.Contains(got, "Hello from stub-backend. You said: Say hello") {
		t.Errorf("output text %q", got)
	}
	if resp.Model != "local-model" || resp.Status != "completed" || !strings.HasPrefix(resp.ID, "resp_") {
		t.Errorf("model %q status %q id %q", resp.Model, resp.Status, resp.ID)
	}
	if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 || resp.Usage.TotalTokens != resp.Usage.InputTokens+resp.Usage.OutputTokens {
		t.Errorf("usage %+v", resp.Usage)
	}
	reqs := h.backendRequests()
	if len(reqs) != 1 || reqs[0]["model"] != "qwen3-coder" || reqs[0]["max_tokens"] != float64(50) {
		t.Fatalf("backend requests %v", reqs)
	}
	msgs := reqs[0]["messages"].([]any)
	if first := msgs[0].(map[string]any); first["role"] != "system" || first["content"] != "Be brief." {
		t.Errorf("instructions reached the backend as %v", first)
	}
}

func TestResponsesSDKStreamAccumulator(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	types, resp, _ := streamed(t, h.responsesClient(clientKey), responses.ResponseNewParams{Model: "local-model", Input: textInput("Stream please")})
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	if len(types) < 8 || strings.Join(types[:4], " ") != strings.Join(want, " ") {
		t.Fatalf("events %v", types)
	}
	tail := types[len(types)-4:]
	if strings.Join(tail, " ") != "response.output_text.done response.content_part.done response.output_item.done response.completed" {
		t.Errorf("events end %v", tail)
	}
	if got := resp.OutputText(); got != "Hello from stub-backend. You said: Stream please" {
		t.Errorf("accumulated text %q", got)
	}
	if resp.Status != "completed" || resp.Usage.OutputTokens == 0 {
		t.Errorf("status %q usage %+v", resp.Status, resp.Usage)
	}
}

func TestResponsesSDKFunctionToolRoundTrip(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.responsesClient(clientKey)
	ctx := t.Context()
	user := responses.ResponseInputItemParamOfMessage("stub:tool What is the weather in Paris?", responses.EasyInputMessageRoleUser)
	first, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "local-model", Input: itemsInput(user), Tools: []responses.ToolUnionParam{weatherTool}})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Output) != 1 || first.Output[0].Type != "function_call" {
		t.Fatalf("output %s", first.RawJSON())
	}
	call := first.Output[0].AsFunctionCall()
	if call.Name != "get_weather" || call.CallID != "call_stub_1" || call.Arguments != `{"city": "stub-city"}` {
		t.Fatalf("call %+v", call)
	}
	answerWeatherCall(t, c, call)
	reqs := h.backendRequests()
	last := reqs[len(reqs)-1]["messages"].([]any)
	if len(last) != 3 {
		t.Fatalf("backend messages %v", last)
	}
	asst, tool := last[1].(map[string]any), last[2].(map[string]any)
	calls := asst["tool_calls"].([]any)
	if asst["role"] != "assistant" || len(calls) != 1 || calls[0].(map[string]any)["id"] != "call_stub_1" || tool["role"] != "tool" {
		t.Fatalf("round trip reached the backend as %v / %v", asst, tool)
	}
}

// answerWeatherCall sends the second turn of a get_weather round trip:
// the question, the model's call, its output; the stub answers with the
// output it got.
func answerWeatherCall(t *testing.T, c openai.Client, call responses.ResponseFunctionToolCall) {
	t.Helper()
	answerWeather(t, c, responses.ResponseInputItemUnionParam{OfFunctionCall: ptr(call.ToParam())}, call.CallID)
}

// answerWeather is answerWeatherCall for a call item written by the
// client (callID its call_id).
func answerWeather(t *testing.T, c openai.Client, call responses.ResponseInputItemUnionParam, callID string) {
	t.Helper()
	out := responses.ResponseInputItemParamOfFunctionCallOutput("Sunny, 21 C")
	out.OfFunctionCallOutput.CallID = openai.String(callID) // the SDK's helper leaves it to the caller
	second, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "local-model", Tools: []responses.ToolUnionParam{weatherTool}, Input: itemsInput(
		responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
		call,
		out,
	)})
	if err != nil {
		t.Fatal(err)
	}
	if got := second.OutputText(); got != "Got the tool result: Sunny, 21 C" {
		t.Errorf("answer %q", got)
	}
}

// TestResponsesSDKFunctionToolResultTurn: a tool result turn whose call
// the client wrote itself (not one the proxy answered).
func TestResponsesSDKFunctionToolResultTurn(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	call := responses.ResponseInputItemParamOfFunctionCall(`{"city":"Paris"}`, "call_stub_1", "get_weather")
	answerWeather(t, h.responsesClient(clientKey), call, "call_stub_1")
}

func TestResponsesSDKParallelCalls(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	_, resp, snap := streamed(t, h.responsesClient(clientKey), responses.ResponseNewParams{
		Model: "local-model", Input: textInput("stub:parallel two cities"), Tools: []responses.ToolUnionParam{weatherTool},
		ParallelToolCalls: openai.Bool(true),
	})
	if len(resp.Output) != 2 {
		t.Fatalf("output %s", resp.RawJSON())
	}
	a, b := resp.Output[0].AsFunctionCall(), resp.Output[1].AsFunctionCall()
	if a.CallID != "call_stub_1" || b.CallID != "call_stub_2" || a.Arguments != `{"city": "stub-city"}` || b.Arguments != `{"city": "stub2-city"}` {
		t.Errorf("calls %+v %+v", a, b)
	}
	if len(snap.Output) != 2 || snap.Output[1].Arguments != b.Arguments || snap.TerminalEvent != "response.completed" {
		t.Errorf("accumulator snapshot %+v", snap)
	}
}

func TestResponsesSDKCustomToolRoundTrip(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.responsesClient(clientKey)
	patchTool := responses.ToolParamOfCustom("apply_patch")
	_, resp, snap := streamed(t, c, responses.ResponseNewParams{Model: "local-model", Input: textInput("stub:tool add a file"), Tools: []responses.ToolUnionParam{patchTool}})
	if len(resp.Output) != 1 || resp.Output[0].Type != "custom_tool_call" {
		t.Fatalf("output %s", resp.RawJSON())
	}
	ct := resp.Output[0].AsCustomToolCall()
	if ct.Name != "apply_patch" || ct.Input != "stub-input" || snap.Output[0].Input != "stub-input" {
		t.Fatalf("custom call %+v, accumulated %+v", ct, snap.Output[0])
	}
	reqs := h.backendRequests()
	tools := reqs[0]["tools"].([]any)
	fn := tools[0].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "apply_patch" || !strings.Contains(toJSON(fn["parameters"]), `"input":{"description"`) {
		t.Errorf("the custom tool reached the backend as %s", toJSON(fn))
	}
	second, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "local-model", Tools: []responses.ToolUnionParam{patchTool}, Input: itemsInput(
		responses.ResponseInputItemParamOfMessage("add a file", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemUnionParam{OfCustomToolCall: ptr(ct.ToParam())},
		responses.ResponseInputItemParamOfCustomToolCallOutput(ct.CallID, "Success. Updated the following files:\nA hello.txt"),
	)})
	if err != nil {
		t.Fatal(err)
	}
	if got := second.OutputText(); !strings.HasPrefix(got, "Got the tool result: Success.") {
		t.Errorf("answer %q", got)
	}
	msgs := h.backendRequests()[1]["messages"].([]any)
	args := msgs[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"]
	if args != `{"input":"stub-input"}` {
		t.Errorf("the custom call went back as arguments %v", args)
	}
}

func TestResponsesSDKReasoningItems(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	c := h.responsesClient(clientKey)
	for _, field := range []string{"stub:reasoning", "stub:reasoning_content"} {
		nonStream, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: "local-model", Input: textInput(field)})
		if err != nil {
			t.Fatal(err)
		}
		_, streamResp, _ := streamed(t, c, responses.ResponseNewParams{Model: "local-model", Input: textInput(field)})
		for _, resp := range []*responses.Response{nonStream, streamResp} {
			if len(resp.Output) != 2 || resp.Output[0].Type != "reasoning" {
				t.Fatalf("%s: output %s", field, resp.RawJSON())
			}
			r := resp.Output[0].AsReasoning()
			if len(r.Content) != 1 || r.Content[0].Text != "The user wants a greeting." || resp.OutputText() != "Hello!" {
				t.Errorf("%s: reasoning %+v, text %q", field, r.Content, resp.OutputText())
			}
		}
	}
}

func TestResponsesSDKErrors(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := t.Context()
	for _, c := range []struct {
		name   string
		key    string
		params responses.ResponseNewParams
		status int
		typ    string
		text   string
	}{
		{"unknown alias", clientKey, responses.ResponseNewParams{Model: "gpt-nope", Input: textInput("hi")}, 404, "not_found_error", `NotFoundError: model "gpt-nope" is not in model_list`},
		{"wrong key", "sk-wrong", responses.ResponseNewParams{Model: "local-model", Input: textInput("hi")}, 401, "authentication_error", "invalid key"},
		{"previous_response_id", clientKey, responses.ResponseNewParams{Model: "local-model", Input: textInput("hi"), PreviousResponseID: openai.String("resp_123")}, 400, "invalid_request_error", "stateless"},
	} {
		for _, stream := range []bool{false, true} {
			cl := h.responsesClient(c.key)
			var err error
			if stream {
				s := cl.Responses.NewStreaming(ctx, c.params)
				for s.Next() {
				}
				err = s.Err()
			} else {
				_, err = cl.Responses.New(ctx, c.params)
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("%s (stream %v): err %v is not an API error", c.name, stream, err)
			}
			if apiErr.StatusCode != c.status || apiErr.Type != c.typ || !strings.Contains(apiErr.Message, c.text) {
				t.Errorf("%s (stream %v): %d %q %q", c.name, stream, apiErr.StatusCode, apiErr.Type, apiErr.Message)
			}
		}
	}
	if n := len(h.backendRequests()); n != 0 {
		t.Errorf("%d requests reached the backend", n)
	}
}

func TestResponsesPathWithoutV1(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	resp := h.post("/responses", `{"model":"local-model","input":"hi"}`)
	body := drain(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(body, `"object":"response"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	resp = h.post("/v1/responses", `{"model":`)
	body = drain(t, resp)
	if resp.StatusCode != 400 || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, `"param":null`) {
		t.Fatalf("malformed body: %d %s", resp.StatusCode, body)
	}
}

// TestResponsesDroppedToolsLoggedAtDebug: what a request offered that the
// backend cannot run (a hosted tool) is named in a debug line.
func TestResponsesDroppedToolsLoggedAtDebug(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	resp := h.post("/v1/responses", `{"model":"local-model","input":"hi","tools":[{"type":"web_search"},{"type":"function","name":"f"}]}`)
	if body := drain(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "left out of a Responses request") || !strings.Contains(logs, `dropped="tool web_search"`) {
		t.Fatalf("no debug line names the hosted tool:\n%s", logs)
	}
}

func TestResponsesStreamPingsWhileBackendIsSlow(t *testing.T) {
	// The bound is the backend's delay, not a guess at the machine's speed:
	// the stream must be committed before the backend's first token.
	// 2 s, not 1 s: 1.9 s of room at a 100 ms ping for a loaded -race run.
	const delay = 2 * time.Second
	h := newHarness(t, harnessOptions{stub: stub.Options{FirstTokenDelay: delay}, ping: 100 * time.Millisecond})
	start := time.Now()
	resp := h.post("/v1/responses", `{"model":"local-model","input":"hi","stream":true}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || time.Since(start) >= delay {
		t.Fatalf("status %d after %v: the stream was not committed before the backend's first token (%s)", resp.StatusCode, time.Since(start), delay)
	}
	s := drain(t, resp)
	created, keepalive, delta := strings.Index(s, "response.created"), strings.Index(s, ": keepalive"), strings.Index(s, "response.output_text.delta")
	if created < 0 || keepalive < created || delta < keepalive || !strings.HasSuffix(s, "\n\n") || !strings.Contains(s, "response.completed") {
		t.Fatalf("stream:\n%s", s)
	}
}

func TestResponsesStreamBackendFailsFast(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{Loading: time.Hour}, extraYAML: "      num_retries: 0\n"})
	resp := h.post("/v1/responses", `{"model":"local-model","input":"hi","stream":true}`)
	body := drain(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(body, `"type":"service_unavailable"`) || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}

func TestResponsesStreamBackendErrorMidStream(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	resp := h.post("/v1/responses", `{"model":"local-model","input":"stub:error-midstream","stream":true}`)
	s := drain(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(s, "event: response.failed") || !strings.Contains(s, `"status":"failed"`) || strings.Contains(s, "response.completed") {
		t.Fatalf("%d\n%s", resp.StatusCode, s)
	}
}

func ptr[T any](v T) *T { return &v }

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestModelsForCodex: GET /v1/models keeps the list other clients read and
// adds the catalog Codex CLI reads from model_catalog_url (its ModelInfo
// fields; Codex 0.169.0 refuses the whole catalog when one is missing).
func TestModelsForCodex(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	req, _ := http.NewRequest(http.MethodGet, h.proxy.URL+"/v1/models?client_version=0.169.0", nil)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID string `json:"id"`
		} `json:"data"`
		Models []map[string]any `json:"models"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 2 || len(list.Models) != 2 {
		t.Fatalf("%+v", list)
	}
	for _, field := range []string{"slug", "display_name", "description", "supported_reasoning_levels", "shell_type", "visibility",
		"supported_in_api", "priority", "upgrade", "base_instructions", "supports_reasoning_summaries", "support_verbosity",
		"default_verbosity", "apply_patch_tool_type", "truncation_policy", "supports_parallel_tool_calls", "experimental_supported_tools"} {
		if _, ok := list.Models[1][field]; !ok {
			t.Errorf("catalog model lacks %s", field)
		}
	}
	if list.Models[1]["slug"] != "local-model" || list.Models[1]["apply_patch_tool_type"] != "freeform" {
		t.Errorf("catalog %v", list.Models[1])
	}
}
