package translate

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/internal/apierror"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// codexBody returns a recorded Codex request, compacted as Codex sends it.
func codexBody(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := fixtures.CodexRequest(name)
	return compacted(t, raw, err)
}

// TestResponsesToChatGolden translates every recorded Codex request and
// compares the Chat body (indented) with
// testdata/responses/request/NAME.SUFFIX.json.
func TestResponsesToChatGolden(t *testing.T) {
	requestGolden(t, filepath.Join("testdata", "responses", "request"), fixtures.CodexRequests(), 5, codexBody, func(body []byte, res Resolver) (BackendRequest, error) {
		br, _, err := ResponsesOnChatRequest(body, res)
		return br, err
	})
}

// TestResponsesToChatCodex checks the translated Codex requests rule by
// rule, independently of the golden files.
func TestResponsesToChatCodex(t *testing.T) {
	for _, name := range fixtures.CodexRequests() {
		body := codexBody(t, name)
		var in responses.Request
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatal(err)
		}
		for _, gt := range goldenTargets {
			t.Run(name+"/"+gt.suffix, func(t *testing.T) {
				br, call, err := ResponsesOnChatRequest(body, resolverFor(gt.target))
				if err != nil {
					t.Fatal(err)
				}
				var out chat.Request
				if err := json.Unmarshal(br.Body, &out); err != nil {
					t.Fatalf("output: %v", err)
				}
				if out.Model != gt.target.BackendModel || !br.Stream || out.StreamOptions == nil || !out.StreamOptions.IncludeUsage {
					t.Errorf("model %q, stream %v, stream_options %+v", out.Model, br.Stream, out.StreamOptions)
				}
				for i, m := range out.Messages {
					if !gt.target.SupportsSystemMessage && m.Role == "system" {
						t.Errorf("message %d: system role sent to a backend without one", i)
					}
					if m.Role == "developer" {
						t.Errorf("message %d: developer role sent", i)
					}
					if i > 0 && m.Role == out.Messages[i-1].Role && m.Role != "tool" {
						t.Errorf("messages %d and %d are both %s", i-1, i, m.Role)
					}
				}
				if !slicesContain(call.Dropped, "tool web_search") {
					t.Errorf("web_search not reported dropped: %v", call.Dropped)
				}
				tools := map[string]chat.Tool{}
				for _, tl := range out.Tools {
					tools[tl.Function.Name] = tl
				}
				if _, ok := tools["exec_command"]; !ok {
					t.Error("exec_command tool missing")
				}
				if _, ok := tools["multi_agent_v1__close_agent"]; !ok {
					t.Error("the namespace's tools are not offered as namespace__name")
				}
				if ns, n, _ := call.callName("multi_agent_v1__close_agent"); ns != "multi_agent_v1" || n != "close_agent" {
					t.Errorf("namespaced name maps back to %q %q", ns, n)
				}
				if strings.HasPrefix(name, "04") || strings.HasPrefix(name, "05") {
					ap, ok := tools["apply_patch"]
					if !ok {
						t.Fatal("apply_patch (custom tool) not offered")
					}
					if !strings.Contains(string(ap.Function.Parameters), `"input":{"type":"string"`) || !strings.Contains(ap.Function.Description, "lark grammar") {
						t.Errorf("apply_patch as a function: %s / %.80q", ap.Function.Parameters, ap.Function.Description)
					}
					if _, _, custom := call.callName("apply_patch"); !custom {
						t.Error("apply_patch not known as a custom tool")
					}
				}
				last := out.Messages[len(out.Messages)-1]
				switch name {
				case "03-shell-result-turn.json", "05-apply-patch-result-turn.json":
					prev := out.Messages[len(out.Messages)-2]
					if last.Role != "tool" || prev.Role != "assistant" || len(prev.ToolCalls) != 1 || prev.ToolCalls[0].ID != last.ToolCallID {
						t.Fatalf("tool round trip: %s %+v then %s %q", prev.Role, prev.ToolCalls, last.Role, last.ToolCallID)
					}
					if name[1] == '5' && prev.ToolCalls[0].Function.Arguments != `{"input":"*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"}` {
						t.Errorf("custom tool call arguments: %s", prev.ToolCalls[0].Function.Arguments)
					}
				default:
					if last.Role != "user" {
						t.Errorf("last message is %s", last.Role)
					}
				}
			})
		}
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestResponsesToChatFields(t *testing.T) {
	tgt := Target{BackendModel: "m", SupportsSystemMessage: true, SupportsReasoningEffort: true, MaxOutputTokens: 100}
	br, _, err := ResponsesOnChatRequest([]byte(`{"model":"a","instructions":"Be brief.","input":[
		{"role":"developer","content":"dev"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]},
		{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thought"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"calling"}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"},
		{"type":"function_call","call_id":"c2","name":"f","arguments":""},
		{"type":"function_call_output","call_id":"c1","output":"one"},
		{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"two"},{"type":"input_image","image_url":"https://x/i.png"}]},
		{"type":"web_search_call","id":"ws"}
	],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"file_search"}],
	"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,"max_output_tokens":5000,
	"temperature":0.5,"top_p":0.9,"reasoning":{"effort":"xhigh","summary":"auto"},
	"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true}},
	"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"k","metadata":{"a":"b"}}`), resolverFor(tgt))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"system","content":"Be brief.\n\ndev"},` +
		`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},` +
		`{"role":"assistant","content":"calling","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","content":"one","tool_call_id":"c1"},{"role":"tool","content":"two","tool_call_id":"c2"},` +
		`{"role":"user","content":[{"type":"text","text":"(images from the tool results above)"},{"type":"image_url","image_url":{"url":"https://x/i.png"}}]}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],` +
		`"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,"max_tokens":100,"temperature":0.5,"top_p":0.9,` +
		`"reasoning_effort":"high","response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}}}`
	if string(br.Body) != want {
		t.Errorf("got\n%s\nwant\n%s", br.Body, want)
	}
}

func TestResponsesToChatErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"model":"a","input":"hi","previous_response_id":"resp_1"}`, "stateless"},
		{`{"input":"hi"}`, "model: required"},
		{`{"model":"a"}`, "input: required"},
		{`{"model":"a","input":[]}`, "input: must not be empty"},
		{`{"model":"a","input":5}`, "input: must be a string or an array"},
		{`{"model":"a","input":[{"role":"tool","content":"x"}]}`, "input.0.role"},
		{`{"model":"a","input":"x","max_output_tokens":0}`, "max_output_tokens"},
		{`{"model":"a","input":[{"type":"function_call","name":"f"}]}`, "call_id"},
		{`{"model":"a","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, "input_file"},
		{`{"model":"a","input":"x","temperature":"hot"}`, "temperature"},
		{`{"model":"a","input":"x","tools":[{"type":"function"}]}`, "tools.0.name: required"},
		{`{"model":"a","input":"x","tools":[{"type":"function","name":"f"},{"type":"namespace","name":"n","tools":[{"type":"function","name":"g","description":5}]}]}`, "tools.1.tools.0.description: must be a string"},
		{`{"model":"a","input":"x","tools":[{"type":"namespace","name":"n","tools":[{"type":"namespace","name":"m","tools":[{"type":"custom"}]}]}]}`, "tools.0.tools.0.tools.0.name: required"},
		{`{"model":`, "malformed JSON"},
	} {
		_, _, err := ResponsesOnChatRequest([]byte(c.body), nil)
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a RequestError with %q", c.body, err, c.want)
		}
	}
}

func customCall() *ResponsesCall {
	_, call, err := ResponsesOnChatRequest([]byte(`{"model":"a","input":"x","tools":[{"type":"custom","name":"apply_patch"},{"type":"function","name":"f"}]}`), nil)
	if err != nil {
		panic(err)
	}
	return call
}

func TestChatToResponses(t *testing.T) {
	call := customCall()
	for _, c := range []struct{ name, chatBody, want string }{
		{"text", chatResp(`{"role":"assistant","content":"Hello!","reasoning_content":"think"}`, `"stop"`, ""),
			`"status":"completed",.*"output":\[{"type":"reasoning","id":"rs_t_0","content":\[{"type":"reasoning_text","text":"think"}\],"summary":\[\]},{"type":"message","id":"msg_t_1","status":"completed","role":"assistant","content":\[{"type":"output_text","text":"Hello!","annotations":\[\],"logprobs":\[\]}\]}\]`},
		{"tools", chatResp(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c2","type":"function","function":{"name":"apply_patch","arguments":"{\"input\":\"*** Begin Patch\\n\"}"}}]}`, `"tool_calls"`, ""),
			`"output":\[{"type":"function_call","id":"fc_t_0","status":"completed","call_id":"c1","name":"f","arguments":"{\\"a\\":1}"},{"type":"custom_tool_call","id":"ctc_t_1","status":"completed","call_id":"c2","name":"apply_patch","input":"\*\*\* Begin Patch\\n"}\]`},
		{"length", chatResp(`{"role":"assistant","content":"Hel"}`, `"length"`, ""),
			`"status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := ResponsesOnChatResponse([]byte(c.chatBody), "alias", "resp_t", 7, call)
			if err != nil {
				t.Fatal(err)
			}
			if !matches(c.want, string(out)) {
				t.Errorf("got %s\nwant match of %s", out, c.want)
			}
			if !strings.Contains(string(out), `"model":"alias"`) || !strings.Contains(string(out), `"usage":{"input_tokens":`) {
				t.Errorf("model or usage missing: %s", out)
			}
		})
	}
	if _, _, err := ResponsesOnChatResponse([]byte(`[1]`), "a", "resp_x", 0, nil); err == nil {
		t.Error("a non-Chat body was accepted")
	}
}

// runResponsesStream translates a backend stream fed in pieces cut at the
// given offsets, as the server does.
func runResponsesStream(in []byte, cuts []int, call *ResponsesCall) []byte {
	out, _ := feedCut(NewResponsesOnChatStream("alias", "resp_t", 7, call, 42), in, cuts, apierror.ServerError)
	return out
}

// TestResponsesStreamGolden feeds every backend fixture whole and in random
// splits: the events must be the same bytes each time, match
// testdata/responses/stream/NAME.events, and be well formed.
func TestResponsesStreamGolden(t *testing.T) {
	call := customCall()
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range fixtures.BackendStreams() {
		t.Run(name, func(t *testing.T) {
			in := fixture(t, name)
			whole := runResponsesStream(in, nil, call)
			if err := checkResponsesEvents(whole); err != nil {
				t.Fatalf("%v\n%s", err, whole)
			}
			for range 20 {
				if got := runResponsesStream(in, randomCuts(r, len(in)), call); !bytes.Equal(got, whole) {
					t.Fatalf("split feed differs:\n%s\nwhole:\n%s", got, whole)
				}
			}
			golden(t, filepath.Join("testdata", "responses", "stream", strings.TrimSuffix(name, ".sse")+".events"), whole)
		})
	}
}

func TestResponsesStreamCustomAndParallel(t *testing.T) {
	in := chunks(
		textChunk("reasoning_content", "plan"),
		toolChunk(tc(0, "c1", "f", `{"a":`)),
		toolChunk(tc(1, "c2", "apply_patch", `{"input":"*** Begin`)),
		toolChunk(tc(0, "", "", `1}`)),
		toolChunk(tc(1, "", "", ` Patch\n"}`)),
		finishChunk("tool_calls", ""),
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"completion_tokens_details":{"reasoning_tokens":2}}}`,
	)
	out := runResponsesStream(in, nil, customCall())
	if err := checkResponsesEvents(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	events := parseResponsesEvents(t, out)
	var seq []string
	for _, e := range events {
		seq = append(seq, e.Type)
	}
	want := "response.created response.in_progress " +
		"response.output_item.added response.content_part.added response.reasoning_text.delta response.reasoning_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.output_item.added response.custom_tool_call_input.delta response.custom_tool_call_input.done response.output_item.done " +
		"response.completed"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	last := events[len(events)-1].Response
	if len(last.Output) != 3 || *last.Output[2].Input != "*** Begin Patch\n" || *last.Output[1].Arguments != `{"a":1}` {
		t.Errorf("final output: %+v", last.Output)
	}
	if last.Usage.OutputTokensDetails.ReasoningTokens != 2 || last.Usage.InputTokens != 10 {
		t.Errorf("usage %+v", last.Usage)
	}
}

func TestResponsesStreamLifecycle(t *testing.T) {
	s := NewResponsesOnChatStream("a", "resp_t", 0, nil, 3)
	out := s.Ping(nil)
	if !bytes.HasSuffix(out, []byte(": keepalive\n\n")) || !bytes.Contains(out, []byte("response.in_progress")) {
		t.Fatalf("ping: %s", out)
	}
	out, _ = s.Feed(out, []byte("data: "+textChunk("content", "Hi")+"\n\n"))
	out, err := s.Feed(out, []byte(`data: {"error":{"message":"boom","type":"server_error"}}`+"\n\n"))
	var be *BackendError
	if !errors.As(err, &be) || be.Message != "boom" {
		t.Fatalf("err = %v", err)
	}
	out = s.Fail(out, "", be.Message)
	if err := checkResponsesEvents(out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte(`"type":"response.failed"`)) || !bytes.Contains(out, []byte(`"error":{"code":"server_error","message":"boom"}`)) {
		t.Errorf("no response.failed with the error:\n%s", out)
	}
	if more := s.Finish(nil); len(more) != 0 {
		t.Errorf("Finish after Fail wrote %s", more)
	}
}

// responsesEvent is what the checks read of an event.
type responsesEvent struct {
	Name           string                `json:"-"`
	Type           string                `json:"type"`
	SequenceNumber *int                  `json:"sequence_number"`
	OutputIndex    *int                  `json:"output_index"`
	ContentIndex   *int                  `json:"content_index"`
	ItemID         string                `json:"item_id"`
	Item           *responses.OutputItem `json:"item"`
	Response       *responses.Response   `json:"response"`
	Delta          *string               `json:"delta"`
	Text           *string               `json:"text"`
	Arguments      *string               `json:"arguments"`
	Input          *string               `json:"input"`
	Refusal        *string               `json:"refusal"`
}

func parseResponsesEvents(t testing.TB, stream []byte) []responsesEvent {
	t.Helper()
	events, err := splitResponsesEvents(stream)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func splitResponsesEvents(stream []byte) ([]responsesEvent, error) {
	var events []responsesEvent
	for len(stream) > 0 {
		end := bytes.Index(stream, []byte("\n\n"))
		if end < 0 {
			return nil, fmt.Errorf("%q does not end with a blank line", stream)
		}
		block := stream[:end]
		stream = stream[end+2:]
		if bytes.HasPrefix(block, []byte(":")) {
			continue
		}
		head, data, _ := bytes.Cut(block, []byte("\n"))
		name, ok1 := bytes.CutPrefix(head, []byte("event: "))
		payload, ok2 := bytes.CutPrefix(data, []byte("data: "))
		if !ok1 || !ok2 || bytes.ContainsAny(payload, "\r\n") {
			return nil, fmt.Errorf("%q is not an event line and a data line", block)
		}
		var e responsesEvent
		if err := json.Unmarshal(payload, &e); err != nil {
			return nil, fmt.Errorf("event %s: %v: %s", name, err, payload)
		}
		e.Name = string(name)
		events = append(events, e)
	}
	return events, nil
}

// checkResponsesEvents checks the grammar of a Responses stream: event
// name = data type; sequence numbers 0, 1, 2…; created and in_progress
// first; items added at output_index 0, 1, 2… one open at a time, each
// event of an item naming the open one, a message's or reasoning item's
// parts added at content_index 0, 1, 2…, each part's deltas adding up to
// its .done value and to the item's final value; a function_call's arguments a JSON
// object; one terminal event (completed, incomplete or failed) last, whose
// output is the items done.
func checkResponsesEvents(stream []byte) error {
	events, err := splitResponsesEvents(stream)
	if err != nil {
		return err
	}
	if len(events) < 3 || events[0].Type != responses.EventCreated || events[1].Type != responses.EventInProgress {
		return fmt.Errorf("does not start with response.created, response.in_progress")
	}
	open := -1
	added := 0
	var acc strings.Builder // of the open part, or of the open call's input
	var parts []string      // the open item's parts, as their deltas made them
	var done []responses.OutputItem
	for i, e := range events {
		if e.Name != e.Type {
			return fmt.Errorf("event %d: name %q, type %q", i, e.Name, e.Type)
		}
		if e.SequenceNumber == nil || *e.SequenceNumber != i {
			return fmt.Errorf("event %d: sequence_number %v", i, e.SequenceNumber)
		}
		terminal := e.Type == responses.EventCompleted || e.Type == responses.EventIncomplete || e.Type == responses.EventFailed
		if terminal != (i == len(events)-1) {
			return fmt.Errorf("event %d %s: terminal events must end the stream, once", i, e.Type)
		}
		switch e.Type {
		case responses.EventCreated, responses.EventInProgress:
			if i > 1 || e.Response == nil || e.Response.Status != responses.StatusInProgress {
				return fmt.Errorf("event %d: %s misplaced or without an in-progress response", i, e.Type)
			}
		case responses.EventOutputItemAdded:
			if open >= 0 || e.OutputIndex == nil || *e.OutputIndex != added || e.Item == nil || e.Item.ID == "" {
				return fmt.Errorf("event %d: item added at %v while %d open, %d added", i, e.OutputIndex, open, added)
			}
			open = added
			added++
			acc.Reset()
			parts = nil
		case responses.EventContentPartAdded:
			if open < 0 || *e.OutputIndex != open || e.ContentIndex == nil || *e.ContentIndex != len(parts) {
				return fmt.Errorf("event %d: part added at %v/%v while item %d open with %d parts", i, e.OutputIndex, e.ContentIndex, open, len(parts))
			}
			parts = append(parts, "")
			acc.Reset()
		case responses.EventOutputItemDone:
			if open < 0 || *e.OutputIndex != open || e.Item == nil {
				return fmt.Errorf("event %d: output_item.done for %v, open %d", i, e.OutputIndex, open)
			}
			var whole string
			switch e.Item.Type {
			case responses.ItemMessage, responses.ItemReasoning:
				var got []string
				for _, c := range *e.Item.Content {
					if c.Type == responses.PartRefusal {
						got = append(got, c.Refusal)
					} else {
						got = append(got, c.Text)
					}
				}
				if !slices.Equal(got, parts) {
					return fmt.Errorf("event %d: item holds parts %q, deltas made %q", i, got, parts)
				}
				whole = acc.String()
			case responses.ItemFunctionCall:
				whole = *e.Item.Arguments
				if !isJSONObject(whole) {
					return fmt.Errorf("event %d: function_call arguments %q are not a JSON object", i, whole)
				}
			case responses.ItemCustomToolCall:
				whole = *e.Item.Input
			}
			if whole != acc.String() {
				return fmt.Errorf("event %d: item holds %q, deltas added up to %q", i, whole, acc.String())
			}
			done = append(done, *e.Item)
			open = -1
		case responses.EventCompleted, responses.EventIncomplete, responses.EventFailed:
			if open >= 0 && e.Type != responses.EventFailed {
				return fmt.Errorf("event %d: %s with item %d open", i, e.Type, open)
			}
			if e.Response == nil || len(e.Response.Output) != len(done) {
				return fmt.Errorf("event %d: final output has %d items, %d were done", i, len(e.Response.Output), len(done))
			}
		default:
			if open < 0 || e.OutputIndex == nil || *e.OutputIndex != open || e.ItemID == "" {
				return fmt.Errorf("event %d %s: for item %v while %d is open", i, e.Type, e.OutputIndex, open)
			}
			if e.Delta != nil {
				acc.WriteString(*e.Delta)
			}
			if e.ContentIndex != nil {
				if *e.ContentIndex != len(parts)-1 {
					return fmt.Errorf("event %d %s: for part %d while %d is open", i, e.Type, *e.ContentIndex, len(parts)-1)
				}
				parts[len(parts)-1] = acc.String()
			}
			for _, v := range []*string{e.Text, e.Arguments, e.Input, e.Refusal} {
				if v != nil && *v != acc.String() {
					return fmt.Errorf("event %d %s: value %q, deltas %q", i, e.Type, *v, acc.String())
				}
			}
		}
	}
	return nil
}

// responsesSeeds: Responses requests of every shape, valid or not.
var responsesSeeds = []string{
	`{"model":"m","input":"hi"}`,
	`{"model":"m","input":[],"tools":[]}`,
	`{"model":"m\u00e9","input":[{"type":"message","role":"user","content":[]},{"role":"assistant","content":"a\nb","id":"x","status":"completed"}],"instructions":"be \"brief\"","stream":false}`,
	`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","namespace":"n","arguments":"{\"a\":1}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"ok"},{"type":"input_image","image_url":"https://x","detail":"low","file_id":"f"}]},{"type":"custom_tool_call","call_id":"d","name":"p","input":"x"},{"type":"custom_tool_call_output","call_id":"d","output":"done"},{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"content":[{"type":"reasoning_text","text":"r"}],"encrypted_content":"e"}]}`,
	`{"model":"m","input":"x","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":false},{"type":"custom","name":"p","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"namespace","name":"n","description":"ns","tools":[{"type":"function","name":"g"}]},{"type":"web_search","external_web_access":false}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":true,"max_output_tokens":100,"temperature":0.5,"top_p":1,"reasoning":{"effort":"high","summary":"auto"},"text":{"format":{"type":"json_schema","schema":{}},"verbosity":"low"},"previous_response_id":"","user":"u","store":false,"include":["x"],"prompt_cache_key":"k","client_metadata":{"a":"b"}}`,
	`{"model":"m","input":5,"instructions":[1],"user":7,"temperature":"hot","tool_choice":"auto"}`,
	`{"Model":"m","input":[{"role":"user","content":{"a":1},"output":true,"arguments":5,"input":[1],"Content":"y"}]}`,
	`{"model":"m","instructions":"a\/b","input":"x","max_output_tokens":5}`,
	`{"model":"m","input":"x","model":"n"}`,
	`{"model":null,"input":"x"}`,
	`{"model":"m","input":null}`,
	`{"model":"m","input":"x","max_output_tokens":1.5}`,
	`{"model":"m","input":"x","stream":1}`,
	`{"model":"m","input":[{"role":"user","content":null}]}`,
	`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","refusal":5}]}]}`,
	`{"model":"m","input":[{"type":5}]}`,
	`{"model":"m","input":[7]}`,
	`{"model":"m","input":"x","tools":[{"type":"custom","format":{"type":"grammar","type":"text"}}]}`,
	`{"model":"m","input":"x","reasoning":{"effort":null}}`,
	`{"mo\u0064el":"m","input":"x"}`,
	`{"model":"m","input":"x"} x`,
	`[]`, ``, `{`,
}

func FuzzResponsesToChat(f *testing.F) {
	for _, name := range fixtures.CodexRequests() {
		f.Add(codexBody(f, name), false, 32768)
	}
	f.Add([]byte(`{"model":"a","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x"}]},{"type":"custom_tool_call","call_id":"c","name":"p","input":"x"},{"type":"custom_tool_call_output","call_id":"c","output":"ok"}],"tools":[{"type":"custom","name":"p","format":{"type":"grammar","syntax":"lark","definition":"start: x"}},{"type":"namespace","name":"n","tools":[{"type":"function","name":"g"}]}],"tool_choice":"required","text":{"format":{"type":"json_object"}}}`), true, 0)
	for _, s := range responsesSeeds {
		f.Add([]byte(s), true, 0)
	}
	f.Fuzz(func(t *testing.T, body []byte, systemRole bool, maxOut int) {
		tgt := Target{BackendModel: "m", SupportsSystemMessage: systemRole, SupportsReasoningEffort: true, MaxOutputTokens: maxOut}
		br, call, err := ResponsesOnChatRequest(body, resolverFor(tgt))
		var out chat.Request
		// Tool schemas go as the client wrote them, repeated names too.
		if !fuzzOutput(t, br, err, &out, jsontext.AllowDuplicateNames(true)) {
			return
		}
		checkChatRoles(t, &out, systemRole, br.Body)
		if maxOut > 0 && out.MaxTokens != nil && *out.MaxTokens > int64(maxOut) {
			t.Fatalf("max_tokens %v over the limit %d", *out.MaxTokens, maxOut)
		}
		for _, tl := range out.Tools {
			if _, name, _ := call.callName(tl.Function.Name); name == "" {
				t.Fatalf("tool %q maps back to no name", tl.Function.Name)
			}
		}
	})
}

func FuzzResponsesStream(f *testing.F) {
	for _, name := range fixtures.BackendStreams() {
		b := fixture(f, name)
		f.Add(b, uint16(7))
	}
	f.Add(chunks(toolChunk(tc(0, "c1", "apply_patch", `{"input":"x`)), toolChunk(tc(0, "c2", "f", `{}`)), textChunk("content", "t")), uint16(3))
	call := customCall()
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		var cuts []int
		if int(cut) < len(in) {
			cuts = []int{int(cut)}
		}
		out := runResponsesStream(in, cuts, call)
		if err := checkResponsesEvents(out); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	})
}

// isJSONObject reports whether s is one valid JSON object.
func isJSONObject(s string) bool {
	v := jsontext.Value(s)
	return v.IsValid(jsontext.AllowDuplicateNames(true)) && v.Kind() == '{'
}

// matches reports whether s matches the regular expression re.
func matches(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// FuzzChatToResponses: whatever the backend's answer, the response decodes,
// every function_call's arguments are a JSON object and its call_id is
// unique.
func FuzzChatToResponses(f *testing.F) {
	f.Add([]byte(chatResp(`{"role":"assistant","content":"Hi","reasoning_content":"r","refusal":"no","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"c","type":"function","function":{"name":"apply_patch","arguments":"not-json{"}}]}`, `"tool_calls"`, "")))
	f.Add([]byte(chatResp(`{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"[1]"}}]}`, `"length"`, "")))
	call := customCall()
	f.Fuzz(func(t *testing.T, body []byte) {
		out, _, err := ResponsesOnChatResponse(body, "alias", "resp_t", 7, call)
		if err != nil {
			return
		}
		var r responses.Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("output does not decode as a response: %v\n%s", err, out)
		}
		ids := map[string]bool{}
		for _, it := range r.Output {
			if it.Type != responses.ItemFunctionCall && it.Type != responses.ItemCustomToolCall {
				continue
			}
			if it.Type == responses.ItemFunctionCall && !isJSONObject(*it.Arguments) {
				t.Fatalf("function_call arguments are not a JSON object: %s", out)
			}
			if it.CallID == "" || ids[it.CallID] {
				t.Fatalf("call_id %q empty or used twice: %s", it.CallID, out)
			}
			ids[it.CallID] = true
		}
	})
}

// TestResponsesToChatTextKeptQuoted: message texts go to the backend as
// the client quoted them, parts joined inside one JSON string; a text that
// is not a string is refused.
func TestResponsesToChatTextKeptQuoted(t *testing.T) {
	body := `{"model":"a","input":[{"role":"user","content":[{"type":"input_text","text":"say \"hi\"\\"},{"type":"input_text","text":"caf\u00e9 \ud83d\ude00"},{"type":"input_text","text":null}]}]}`
	br, _, err := ResponsesOnChatRequest([]byte(body), resolverFor(Target{BackendModel: "m", SupportsSystemMessage: true}))
	if err != nil {
		t.Fatal(err)
	}
	var out chat.Request
	if err := json.Unmarshal(br.Body, &out); err != nil {
		t.Fatalf("%v: %s", err, br.Body)
	}
	var content string
	if err := json.Unmarshal(out.Messages[0].Content, &content); err != nil || content != "say \"hi\"\\\n\ncafé 😀" {
		t.Fatalf("content %q (%v), body %s", content, err, br.Body)
	}
	_, _, err = ResponsesOnChatRequest([]byte(`{"model":"a","input":[{"role":"user","content":[{"type":"input_text","text":5}]}]}`), resolverFor(Target{BackendModel: "m"}))
	var re *RequestError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "input.0.content.0.text: must be a string") {
		t.Fatalf("a number as text: %v", err)
	}
}

// The response echoes the request's max_output_tokens, whole and
// streamed, and null when the request set none.
func TestResponsesEchoMaxOutputTokens(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"model":"a","input":"x","max_output_tokens":777}`, `"max_output_tokens":777`},
		{`{"model":"a","input":"x"}`, `"max_output_tokens":null`},
	} {
		_, call, err := ResponsesOnChatRequest([]byte(c.body), resolverFor(Target{}))
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := ResponsesOnChatResponse([]byte(chatResp(`{"role":"assistant","content":"Hi"}`, `"stop"`, "")), "a", "resp_t", 7, call)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%s: response %s lacks %s", c.body, out, c.want)
		}
		events := runResponsesStream([]byte("data: "+textChunk("content", "Hi")+"\n\ndata: [DONE]\n\n"), nil, call)
		if n := strings.Count(string(events), c.want); n < 3 {
			t.Errorf("%s: %d snapshots echo %s, want created, in_progress and completed:\n%s", c.body, n, c.want, events)
		}
	}
}

// TestCompactionItemsRefusedBeforeResolve: a compaction or
// compaction_trigger item is a RequestError marked Compaction, given before
// the model is resolved (no backend slot is taken for a request the
// server opens first); other refusals are not marked.
func TestCompactionItemsRefusedBeforeResolve(t *testing.T) {
	for item, want := range map[string]string{
		`{"type":"compaction","encrypted_content":"x"}`: "input.1: a compaction item",
		`{"type":"compaction_trigger"}`:                 "input.1: compaction_trigger must be the last input item",
	} {
		resolved := false
		body := `{"model":"m","input":[{"role":"user","content":"hi"},` + item + `]}`
		_, _, err := ResponsesOnChatRequest([]byte(body), func(alias string) (Target, error) { resolved = resolved || alias != ""; return Target{}, nil })
		if !CompactionRefused(err) || !strings.Contains(err.Error(), want) || resolved {
			t.Errorf("%s: err %v (marked %v), resolved %v", item, err, CompactionRefused(err), resolved)
		}
	}
	_, _, err := ResponsesOnChatRequest([]byte(`{"model":"m","input":[{"type":"item_reference","id":"x"}]}`), nil)
	if err == nil || CompactionRefused(err) {
		t.Errorf("an unknown item: %v, marked %v", err, CompactionRefused(err))
	}
}
