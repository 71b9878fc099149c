package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
)

// Tool calls a backend writes as text (issue 38), seen from the client:
// every front (Messages, Responses, Chat) on both backend protocols
// (vendorb/ Chat, vendora/ Messages), streamed and not.

// textFront is a client format: its path, a request offering tools (or
// not) with a user text, and how its answer reads.
type textFront struct {
	name, path string
	request    func(prompt string, stream, tools bool) string
	// followUp is the request of the turn after a recovered call: the
	// history with the call and its result.
	followUp func(prompt string, stream bool, c textClientCall) string
}

// textClientCall is a call the client got.
type textClientCall struct{ ID, Name, Args string }

// textAnswer is what a client made of an answer.
type textAnswer struct {
	Text, Reasoning string
	Calls           []textClientCall
	Stop            string // stop_reason, finish_reason, or the Responses status
}

const textBashTool = `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`

var textFronts = []textFront{
	{name: "messages", path: "/v1/messages",
		request: func(prompt string, stream, tools bool) string {
			t := ""
			if tools {
				t = `,"tools":[{"name":"Bash","description":"Run a command","input_schema":` + textBashTool + `}]`
			}
			return fmt.Sprintf(`{"model":"text-model","max_tokens":200,"stream":%v,"messages":[{"role":"user","content":%q}]%s}`, stream, prompt, t)
		},
		followUp: func(prompt string, stream bool, c textClientCall) string {
			return fmt.Sprintf(`{"model":"text-model","max_tokens":200,"stream":%v,"tools":[{"name":"Bash","input_schema":%s}],"messages":[{"role":"user","content":%q},`+
				`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":%q,"input":%s}]},`+
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"hi"}]}]}`, stream, textBashTool, prompt, c.ID, c.Name, c.Args, c.ID)
		}},
	{name: "responses", path: "/v1/responses",
		request: func(prompt string, stream, tools bool) string {
			t := ""
			if tools {
				t = `,"tools":[{"type":"function","name":"Bash","description":"Run a command","parameters":` + textBashTool + `}]`
			}
			return fmt.Sprintf(`{"model":"text-model","stream":%v,"input":%q%s}`, stream, prompt, t)
		},
		followUp: func(prompt string, stream bool, c textClientCall) string {
			args, _ := json.Marshal(c.Args)
			return fmt.Sprintf(`{"model":"text-model","stream":%v,"tools":[{"type":"function","name":"Bash","parameters":%s}],"input":[{"role":"user","content":%q},`+
				`{"type":"function_call","call_id":%q,"name":%q,"arguments":%s},{"type":"function_call_output","call_id":%q,"output":"hi"}]}`, stream, textBashTool, prompt, c.ID, c.Name, args, c.ID)
		}},
	{name: "chat", path: "/v1/chat/completions",
		request: func(prompt string, stream, tools bool) string {
			t := ""
			if tools {
				t = `,"tools":[{"type":"function","function":{"name":"Bash","description":"Run a command","parameters":` + textBashTool + `}}]`
			}
			return fmt.Sprintf(`{"model":"text-model","max_tokens":200,"stream":%v,"messages":[{"role":"user","content":%q}]%s}`, stream, prompt, t)
		},
		followUp: func(prompt string, stream bool, c textClientCall) string {
			args, _ := json.Marshal(c.Args)
			return fmt.Sprintf(`{"model":"text-model","max_tokens":200,"stream":%v,"tools":[{"type":"function","function":{"name":"Bash","parameters":%s}}],"messages":[{"role":"user","content":%q},`+
				`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}]},{"role":"tool","tool_call_id":%q,"content":"hi"}]}`, stream, textBashTool, prompt, c.ID, c.Name, args, c.ID)
		}},
}

// textHarness is the proxy with one alias, text-model, on the stub (Chat,
// or Messages for native), with extra proxy_params.
func textHarness(t *testing.T, native bool, extra string) *harness {
	prefix := "vendorb/"
	if native {
		prefix = "vendora/"
	}
	o := harnessOptions{native: native, routesYAML: "model_list:\n  - model_name: text-model\n    proxy_params:\n      model: " + prefix + "qwen3-coder\n      api_base: {base}\n      api_key: os.environ/TEST_BACKEND_KEY\n" + extra}
	return newHarness(t, o)
}

// readAnswer reads a client's answer in its front's format, checking a
// Messages stream's grammar.
func readAnswer(t *testing.T, front string, stream bool, body []byte) textAnswer {
	t.Helper()
	var a textAnswer
	if !stream {
		switch front {
		case "messages":
			var m struct {
				Content []struct {
					Type, Text, Thinking, ID, Name string
					Input                          json.RawMessage
				}
				StopReason string `json:"stop_reason"`
			}
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					a.Text += b.Text
				case "thinking":
					a.Reasoning += b.Thinking
				case "tool_use":
					a.Calls = append(a.Calls, textClientCall{b.ID, b.Name, string(b.Input)})
				}
			}
			a.Stop = m.StopReason
		case "responses":
			var r struct {
				Status string
				Output []json.RawMessage
			}
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			a = responsesOutput(t, r.Output)
			a.Stop = r.Status
		case "chat":
			var c struct {
				Choices []struct {
					Message struct {
						Content          *string
						ReasoningContent string `json:"reasoning_content"`
						ToolCalls        []struct {
							ID       string
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
				t.Fatalf("%v: %s", err, body)
			}
			m := c.Choices[0].Message
			if m.Content != nil {
				a.Text = *m.Content
			}
			a.Reasoning = m.ReasoningContent
			for _, tc := range m.ToolCalls {
				a.Calls = append(a.Calls, textClientCall{tc.ID, tc.Function.Name, tc.Function.Arguments})
			}
			a.Stop = c.Choices[0].FinishReason
		}
		return a
	}
	switch front {
	case "messages":
		if err := ssecheck.Check(body); err != nil {
			t.Fatalf("the Messages stream breaks its grammar: %v\n%s", err, body)
		}
		evs, _ := ssecheck.Parse(body)
		args := map[int]*textClientCall{}
		var order []int
		for _, ev := range evs {
			var e struct {
				Index        int
				ContentBlock struct{ Type, ID, Name string } `json:"content_block"`
				Delta        struct {
					Type, Text, Thinking string
					PartialJSON          string `json:"partial_json"`
					StopReason           string `json:"stop_reason"`
				}
			}
			json.Unmarshal(ev.Data, &e)
			switch ev.Name {
			case "content_block_start":
				if e.ContentBlock.Type == "tool_use" {
					args[e.Index] = &textClientCall{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name}
					order = append(order, e.Index)
				}
			case "content_block_delta":
				switch e.Delta.Type {
				case "text_delta":
					a.Text += e.Delta.Text
				case "thinking_delta":
					a.Reasoning += e.Delta.Thinking
				case "input_json_delta":
					args[e.Index].Args += e.Delta.PartialJSON
				}
			case "message_delta":
				a.Stop = e.Delta.StopReason
			}
		}
		for _, i := range order {
			a.Calls = append(a.Calls, *args[i])
		}
	case "responses":
		var final []byte
		for _, ev := range sseData(body) {
			var e struct {
				Type     string
				Response json.RawMessage
			}
			json.Unmarshal(ev, &e)
			if e.Type == "response.completed" || e.Type == "response.incomplete" || e.Type == "response.failed" {
				final = e.Response
			}
		}
		if final == nil {
			t.Fatalf("no response.completed:\n%s", body)
		}
		return readAnswer(t, "responses", false, final)
	case "chat":
		calls := map[int]*textClientCall{}
		var order []int
		for _, ev := range sseData(body) {
			if string(ev) == "[DONE]" {
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Content          string
						ReasoningContent string `json:"reasoning_content"`
						ToolCalls        []struct {
							Index    int
							ID       string
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
					FinishReason *string `json:"finish_reason"`
				}
			}
			if err := json.Unmarshal(ev, &c); err != nil {
				t.Fatalf("a chunk is not JSON: %v: %s", err, ev)
			}
			for _, ch := range c.Choices {
				a.Text += ch.Delta.Content
				a.Reasoning += ch.Delta.ReasoningContent
				for _, tc := range ch.Delta.ToolCalls {
					cl, ok := calls[tc.Index]
					if !ok {
						if tc.ID == "" || tc.Function.Name == "" {
							t.Errorf("tool call %d starts without its id and name: %s", tc.Index, ev)
						}
						cl = &textClientCall{ID: tc.ID, Name: tc.Function.Name}
						calls[tc.Index] = cl
						order = append(order, tc.Index)
					}
					cl.Args += tc.Function.Arguments
				}
				if ch.FinishReason != nil {
					a.Stop = *ch.FinishReason
				}
			}
		}
		for _, i := range order {
			a.Calls = append(a.Calls, *calls[i])
		}
	}
	return a
}

func responsesOutput(t *testing.T, output []json.RawMessage) textAnswer {
	var a textAnswer
	for _, raw := range output {
		var it struct {
			Type, CallID, Name, Arguments string `json:",omitempty"`
			Content                       []struct{ Type, Text string }
			Summary                       []struct{ Text string }
		}
		var named struct {
			CallID string `json:"call_id"`
		}
		json.Unmarshal(raw, &it)
		json.Unmarshal(raw, &named)
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				a.Text += c.Text
			}
		case "reasoning":
			for _, c := range it.Content {
				a.Reasoning += c.Text
			}
			for _, s := range it.Summary {
				if len(it.Content) == 0 {
					a.Reasoning += s.Text
				}
			}
		case "function_call":
			a.Calls = append(a.Calls, textClientCall{named.CallID, it.Name, it.Arguments})
		}
	}
	return a
}

// sseData returns the data of each event of a stream.
func sseData(body []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			out = append(out, bytes.Clone(bytes.TrimSpace(d)))
		}
	}
	return out
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

var toolStop = map[string]string{"messages": "tool_use", "responses": "completed", "chat": "tool_calls"}

// TestTextCallsEveryFront: the stub writes its Bash call as text (Hermes,
// then Qwen3-Coder XML without the wrapper); every front on both backend
// protocols, streamed and not, gets a real call with a fresh id, and the
// sentence before it as text. Sent back in the history, the call reaches
// the backend as a structured call, which then answers the result.
func TestTextCallsEveryFront(t *testing.T) {
	for _, native := range []bool{false, true} {
		h := textHarness(t, native, "")
		seen := map[string]bool{}
		for _, format := range []string{"hermes", "qwen3_coder"} {
			for _, f := range textFronts {
				for _, stream := range []bool{false, true} {
					name := fmt.Sprintf("native=%v/%s/%s/stream=%v", native, format, f.name, stream)
					t.Run(name, func(t *testing.T) {
						prompt := "stub:text-calls=" + format + " stub:shell echo hi"
						resp, body := h.do(http.MethodPost, f.path, f.request(prompt, stream, true), nil, false)
						if resp.StatusCode != 200 {
							t.Fatalf("status %d: %s", resp.StatusCode, body)
						}
						a := readAnswer(t, f.name, stream, body)
						if len(a.Calls) != 1 || a.Calls[0].Name != "Bash" || !jsonEqual(a.Calls[0].Args, `{"command":"echo hi"}`) {
							t.Fatalf("calls = %+v, want one Bash call {\"command\":\"echo hi\"}\n%s", a.Calls, body)
						}
						if a.Stop != toolStop[f.name] {
							t.Errorf("stop = %q, want %q", a.Stop, toolStop[f.name])
						}
						if !strings.Contains(a.Text, "I will call the tool.") || strings.Contains(a.Text, "tool_call") || strings.Contains(a.Text, "function=") {
							t.Errorf("text = %q, want the sentence before the call, without the call", a.Text)
						}
						id := a.Calls[0].ID
						if id == "" || seen[id] {
							t.Errorf("call id %q: want a fresh one", id)
						}
						seen[id] = true

						h.backend.Reset()
						resp, body = h.do(http.MethodPost, f.path, f.followUp(prompt, stream, a.Calls[0]), nil, false)
						if resp.StatusCode != 200 {
							t.Fatalf("follow-up status %d: %s", resp.StatusCode, body)
						}
						b := readAnswer(t, f.name, stream, body)
						if len(b.Calls) != 0 || !strings.Contains(b.Text, "Got the tool result: hi") {
							t.Errorf("follow-up answer = %+v, want the plain answer to the result", b)
						}
						reqs := h.backend.Requests()
						if len(reqs) != 1 {
							t.Fatalf("backend saw %d requests", len(reqs))
						}
						var got struct {
							Messages []struct {
								Role      string
								Content   json.RawMessage
								ToolCalls []struct {
									ID       string
									Function struct{ Name string }
								} `json:"tool_calls"`
							}
						}
						json.Unmarshal(reqs[0].Body, &got)
						structured := false
						for _, m := range got.Messages {
							if m.Role != "assistant" {
								continue
							}
							if len(m.ToolCalls) == 1 && m.ToolCalls[0].ID == id && m.ToolCalls[0].Function.Name == "Bash" {
								structured = true // a Chat backend
							}
							var blocks []struct{ Type, ID, Name string }
							json.Unmarshal(m.Content, &blocks)
							for _, bl := range blocks {
								if bl.Type == "tool_use" && bl.ID == id && bl.Name == "Bash" {
									structured = true // a Messages backend
								}
							}
						}
						if !structured {
							t.Errorf("the backend did not get call %s as a structured call: %s", id, reqs[0].Body)
						}
					})
				}
			}
		}
	}
}

// textBackend answers every request, on both protocols, with content
// written as text; a stream cuts it into pieces of step bytes.
type textBackend struct {
	mu      sync.Mutex
	content string
	step    int
}

func (b *textBackend) set(content string) {
	b.mu.Lock()
	b.content = content
	b.mu.Unlock()
}

func (b *textBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	b.mu.Lock()
	content, step := b.content, max(b.step, 1)
	b.mu.Unlock()
	messagesAPI := strings.HasSuffix(r.URL.Path, "/messages")
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		if messagesAPI {
			fmt.Fprintf(w, `{"id":"msg_t","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":5}}`, q(content))
		} else {
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`, q(content))
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	var pieces []string
	for i := 0; i < len(content); i += step {
		pieces = append(pieces, content[i:min(i+step, len(content))])
	}
	if messagesAPI {
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_t\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for _, p := range pieces {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", q(p))
		}
		fmt.Fprint(w, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		return
	}
	fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n")
	for _, p := range pieces {
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":null}]}\n\n", q(p))
	}
	fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5,\"total_tokens\":8}}\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// textBackendHarness is the proxy with text-model on a textBackend.
func textBackendHarness(t *testing.T, native bool, extra string) (*harness, *textBackend) {
	tb := &textBackend{step: 3}
	url := serveBackend(t, tb)
	prefix := "vendorb/"
	if native {
		prefix = "vendora/"
	}
	h := newHarness(t, harnessOptions{routesYAML: "model_list:\n  - model_name: text-model\n    proxy_params:\n      model: " + prefix + "m\n      api_base: " + url + "\n      api_key: os.environ/TEST_BACKEND_KEY\n" + extra})
	return h, tb
}

// TestTextCallsStayText: what is not a call the client may take (no
// tools offered; a tool not offered; a fenced example followed by prose;
// a call inside <think>; arguments that do not parse; tool_calls_in_text
// off) reaches every client as the text it was, byte for byte.
func TestTextCallsStayText(t *testing.T) {
	cases := []struct {
		name, content string
		tools         bool
		extra         string
	}{
		{"no tools offered", "Sure.\n<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>", false, ""},
		{"a tool not offered", "Sure.\n<tool_call>\n{\"name\": \"Write\", \"arguments\": {\"path\": \"x\"}}\n</tool_call>", true, ""},
		{"fenced example then prose", "For example:\n```json\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n```\nThat is how a call looks.", true, ""},
		{"arguments that do not parse", "<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"</tool_call>", true, ""},
		{"off", "<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>", true, "      tool_calls_in_text: off\n"},
	}
	for _, native := range []bool{false, true} {
		for _, c := range cases {
			h, tb := textBackendHarness(t, native, c.extra)
			tb.set(c.content)
			for _, f := range textFronts {
				for _, stream := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/native=%v/%s/stream=%v", c.name, native, f.name, stream), func(t *testing.T) {
						resp, body := h.do(http.MethodPost, f.path, f.request("hi", stream, c.tools), nil, false)
						if resp.StatusCode != 200 {
							t.Fatalf("status %d: %s\n%s", resp.StatusCode, body, h.logs.String())
						}
						a := readAnswer(t, f.name, stream, body)
						if len(a.Calls) != 0 || a.Text != c.content || a.Reasoning != "" {
							t.Errorf("answer = %+v, want the text unaltered: %q", a, c.content)
						}
					})
				}
			}
		}
	}
}

// TestTextCallsInsideThinkStayReasoning: a call written inside a leading
// <think> is reasoning, never a call: every client gets it as reasoning.
func TestTextCallsInsideThinkStayReasoning(t *testing.T) {
	inner := "Maybe <tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call> would do."
	for _, native := range []bool{false, true} {
		h, tb := textBackendHarness(t, native, "")
		tb.set("<think>" + inner + "</think>I will not call it.")
		for _, f := range textFronts {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("native=%v/%s/stream=%v", native, f.name, stream), func(t *testing.T) {
					resp, body := h.do(http.MethodPost, f.path, f.request("hi", stream, true), nil, false)
					if resp.StatusCode != 200 {
						t.Fatalf("status %d: %s", resp.StatusCode, body)
					}
					a := readAnswer(t, f.name, stream, body)
					if len(a.Calls) != 0 || !strings.Contains(a.Reasoning, "Maybe <tool_call>") || strings.Contains(a.Text, "<tool_call>") || !strings.Contains(a.Text, "I will not call it.") {
						t.Errorf("answer = %+v, want the call as reasoning and the rest as text", a)
					}
				})
			}
		}
	}
}

// TestTextCallsCounted: each recovered call counts in
// dragoman_text_tool_calls_total by alias and family.
func TestTextCallsCounted(t *testing.T) {
	tb := &textBackend{step: 5}
	url := serveBackend(t, tb)
	h := newHarness(t, harnessOptions{metrics: true, routesYAML: "model_list:\n  - model_name: text-model\n    proxy_params:\n      model: vendorb/m\n      api_base: " + url + "\n      api_key: os.environ/TEST_BACKEND_KEY\n"})
	tb.set("<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>")
	for _, stream := range []bool{false, true} {
		resp, body := h.do(http.MethodPost, "/v1/messages", textFronts[0].request("hi", stream, true), nil, false)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	tb.set("<function=Bash>\n<parameter=command>\nls\n</parameter>\n</function>")
	h.do(http.MethodPost, "/v1/chat/completions", textFronts[2].request("hi", true, true), nil, false)
	scrape := h.scrape()
	for _, want := range []string{
		`dragoman_text_tool_calls_total{alias="text-model",format="hermes"} 2`,
		`dragoman_text_tool_calls_total{alias="text-model",format="qwen3_coder"} 1`,
		`dragoman_text_tool_calls_total{alias="text-model",format="mistral"} 0`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(scrape, "text_tool_calls"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
