package translate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// The stream filters of text_calls.go seen from the client: an answer
// cut into content deltas anywhere, and its bytes read in pieces cut
// anywhere, gives the client the same events as the answer sent whole:
// the same text, reasoning, calls and stop, in a stream valid in its
// grammar.

var textFuzzOptions = &textcall.Options{Families: textcall.All, Tools: []textcall.Tool{
	{Name: "Bash", Parameters: []byte(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
	{Name: "Read", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"number"}}}`)},
}}

var textFuzzSeeds = []string{
	"Hello, plain text with no call at all.",
	"I will run it.\n\n<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"echo '</tool_call>'\"}}\n</tool_call>",
	"<function=Read>\n<parameter=path>\n/tmp/x\n</parameter>\n<parameter=limit>\n10\n</parameter>\n</function>",
	"<think>Should I <tool_call>?</think>Yes.\n<tool_call>{\"name\":\"Bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}</tool_call>",
	"[TOOL_CALLS]Bash[ARGS]{\"command\": \"ls\"}",
	"```json\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"}}\n```\nand more prose",
	"héllo 😀 <tool_call>{\"name\":\"Write\",\"arguments\":{}}</tool_call>",
	"<tool_call>\n{\"name\": \"Bash\", \"arguments\": {\"command\": \"ls\"",
}

// deltaCuts cuts content into deltas as cuts does, on character
// boundaries (a JSON string holds whole characters; the reads, cut
// anywhere, split them).
func deltaCuts(s string, steps []byte) []string {
	var out []string
	for _, p := range cuts(s, steps) {
		if n := len(out); n > 0 && !utf8.ValidString(out[n-1]) {
			out[n-1] += p
			continue
		}
		out = append(out, p)
	}
	return out
}

// cuts splits s at the offsets the fuzzer's bytes pick (each byte a
// step of 1 to 256; none: whole).
func cuts(s string, steps []byte) []string {
	if len(steps) == 0 {
		return []string{s}
	}
	var out []string
	for i := 0; len(s) > 0; i++ {
		n := min(int(steps[i%len(steps)])+1, len(s))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// textClientView is what a client makes of an answer.
type textClientView struct {
	Text, Reasoning string
	Calls           []string // id name args
	Stop            string
}

func chatStreamOf(deltas []string) string {
	var b strings.Builder
	b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for _, d := range deltas {
		q, _ := json.Marshal(d)
		fmt.Fprintf(&b, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`+"\n\n", q)
	}
	b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}` + "\n\ndata: [DONE]\n\n")
	return b.String()
}

func messagesStreamOf(deltas []string) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for _, d := range deltas {
		q, _ := json.Marshal(d)
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%s}}\n\n", q)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n")
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

// viaChatToMessages runs a Chat backend stream through the filter and
// the Messages translator, fed in pieces.
func viaChatToMessages(t *testing.T, backend string, reads []byte) []byte {
	f := NewChatTextCalls(textFuzzOptions, "call_t_")
	st := NewMessagesOnChatStream("alias", "msg_t", 1)
	var out []byte
	for _, p := range cuts(backend, reads) {
		filtered, err := f.Feed(nil, []byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if out, err = st.Feed(out, filtered); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = st.Feed(out, f.Close(nil))
	return st.Finish(out)
}

// viaNative runs a Messages backend stream through the filter and the
// native relay, fed in pieces.
func viaNative(t *testing.T, backend string, reads []byte) []byte {
	f := NewMessagesTextCalls(textFuzzOptions, "toolu_t_")
	ns := NewMessagesOnMessagesStream("alias")
	var out []byte
	for _, p := range cuts(backend, reads) {
		filtered, err := f.Feed(nil, []byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if out, err = ns.Feed(out, filtered); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = ns.Feed(out, f.Close(nil))
	return out
}

// viaReverse runs a Messages backend stream through the filter and the
// Chat translator, fed in pieces.
func viaReverse(t *testing.T, backend string, reads []byte) []byte {
	f := NewMessagesTextCalls(textFuzzOptions, "toolu_t_")
	rs := NewChatOnMessagesStream("alias", 1, false)
	var out []byte
	for _, p := range cuts(backend, reads) {
		filtered, err := f.Feed(nil, []byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if out, err = rs.Feed(out, filtered); err != nil {
			t.Fatal(err)
		}
	}
	out, _ = rs.Feed(out, f.Close(nil))
	out, _ = rs.Finish(out)
	return out
}

func messagesView(t *testing.T, stream []byte) textClientView {
	t.Helper()
	if err := ssecheck.Check(stream); err != nil {
		t.Fatalf("the Messages stream breaks its grammar: %v\n%s", err, stream)
	}
	evs, _ := ssecheck.Parse(stream)
	var v textClientView
	calls := map[int]*[3]string{}
	var order []int
	for _, ev := range evs {
		var e struct {
			Index        int `json:"index"`
			ContentBlock struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				Thinking    string `json:"thinking"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
		}
		json.Unmarshal(ev.Data, &e)
		switch {
		case ev.Name == "content_block_start" && e.ContentBlock.Type == "tool_use":
			calls[e.Index] = &[3]string{e.ContentBlock.ID, e.ContentBlock.Name}
			order = append(order, e.Index)
		case e.Delta.Type == "text_delta":
			v.Text += e.Delta.Text
		case e.Delta.Type == "thinking_delta":
			v.Reasoning += e.Delta.Thinking
		case e.Delta.Type == "input_json_delta":
			calls[e.Index][2] += e.Delta.PartialJSON
		case ev.Name == "message_delta":
			v.Stop = e.Delta.StopReason
		}
	}
	for _, i := range order {
		v.Calls = append(v.Calls, strings.Join(calls[i][:], " "))
	}
	return v
}

func chatView(t *testing.T, stream []byte) textClientView {
	t.Helper()
	var v textClientView
	calls := map[int]*[3]string{}
	var order []int
	for _, line := range strings.Split(string(stream), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("a chunk is not JSON: %v: %s", err, data)
		}
		for _, ch := range c.Choices {
			v.Text += ch.Delta.Content
			v.Reasoning += ch.Delta.ReasoningContent
			for _, tc := range ch.Delta.ToolCalls {
				cl, ok := calls[tc.Index]
				if !ok {
					cl = &[3]string{tc.ID, tc.Function.Name}
					calls[tc.Index] = cl
					order = append(order, tc.Index)
				}
				cl[2] += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				v.Stop = *ch.FinishReason
			}
		}
	}
	for _, i := range order {
		v.Calls = append(v.Calls, strings.Join(calls[i][:], " "))
	}
	return v
}

func sameView(a, b textClientView) bool {
	return a.Text == b.Text && a.Reasoning == b.Reasoning && a.Stop == b.Stop && strings.Join(a.Calls, "\n") == strings.Join(b.Calls, "\n")
}

// FuzzTextCallsSplit: any backend answer, cut into content deltas at any
// byte and read in pieces cut at any byte, gives each client the same
// events as unsplit: Chat backend → Messages client, Messages backend →
// Messages client (native) and → Chat client.
func FuzzTextCallsSplit(f *testing.F) {
	for i, s := range textFuzzSeeds {
		f.Add(s, []byte{byte(i), 3}, []byte{7, 1})
	}
	f.Fuzz(func(t *testing.T, content string, deltaSteps, readSteps []byte) {
		whole := []string{content}
		if !utf8.ValidString(content) {
			return // a backend's JSON strings hold valid text
		}
		split := deltaCuts(content, deltaSteps)
		for _, p := range []struct {
			name    string
			backend func([]string) string
			run     func(*testing.T, string, []byte) []byte
			view    func(*testing.T, []byte) textClientView
		}{
			{"chat→messages", chatStreamOf, viaChatToMessages, messagesView},
			{"messages→messages", messagesStreamOf, viaNative, messagesView},
			{"messages→chat", messagesStreamOf, viaReverse, chatView},
		} {
			want := p.view(t, p.run(t, p.backend(whole), nil))
			got := p.view(t, p.run(t, p.backend(split), readSteps))
			if !sameView(want, got) {
				t.Fatalf("%s: split %q, read in steps %v:\n got %+v\nwant %+v", p.name, split, readSteps, got, want)
			}
			if len(want.Calls) == 0 && want.Reasoning == "" && want.Text != content {
				t.Fatalf("%s: nothing recovered, yet the text is %q, not %q", p.name, want.Text, content)
			}
		}
	})
}

// TestTextCallsSplitSeeds runs the seeds split at every byte and read a
// byte at a time, and checks what the recognizing ones become.
func TestTextCallsSplitSeeds(t *testing.T) {
	for _, s := range textFuzzSeeds {
		for step := 1; step <= 4; step++ {
			steps := []byte{byte(step - 1)}
			for _, p := range []struct {
				backend func([]string) string
				run     func(*testing.T, string, []byte) []byte
				view    func(*testing.T, []byte) textClientView
			}{{chatStreamOf, viaChatToMessages, messagesView}, {messagesStreamOf, viaNative, messagesView}, {messagesStreamOf, viaReverse, chatView}} {
				want := p.view(t, p.run(t, p.backend([]string{s}), nil))
				got := p.view(t, p.run(t, p.backend(deltaCuts(s, steps)), []byte{0}))
				if !sameView(want, got) {
					t.Fatalf("%q step %d:\n got %+v\nwant %+v", s, step, got, want)
				}
			}
		}
	}
	// The Hermes call of the second seed: one call, the marker inside its
	// argument not cutting it, the sentence before it as text.
	v := messagesView(t, viaChatToMessages(t, chatStreamOf(deltaCuts(textFuzzSeeds[1], []byte{2})), []byte{4}))
	if len(v.Calls) != 1 || v.Calls[0] != `call_t_1 Bash {"command":"echo '</tool_call>'"}` || v.Stop != "tool_use" || strings.TrimSpace(v.Text) != "I will run it." {
		t.Errorf("hermes seed: %+v", v)
	}
	c := chatView(t, viaReverse(t, messagesStreamOf(deltaCuts(textFuzzSeeds[2], []byte{1})), []byte{2}))
	if len(c.Calls) != 1 || c.Calls[0] != `toolu_t_1 Read {"path":"/tmp/x","limit":10}` || c.Stop != "tool_calls" {
		t.Errorf("qwen3-coder seed through a Messages backend to a Chat client: %+v", c)
	}
}

func TestCompactSchema(t *testing.T) {
	got := string(compactSchema([]byte(`{"type":"object","description":"long words","properties":{"n":{"type":"integer","description":"a count"},"o":{"anyOf":[{"type":"null"},{"type":"object"}],"title":"x"}},"required":["n"]}`)))
	want1 := `{"properties":{"n":{"type":"integer"},"o":{"anyOf":[{"type":"null"},{"type":"object"}]}}}`
	want2 := `{"properties":{"o":{"anyOf":[{"type":"null"},{"type":"object"}]},"n":{"type":"integer"}}}`
	if got != want1 && got != want2 {
		t.Errorf("compactSchema = %s, want %s", got, want1)
	}
	if compactSchema([]byte(`{"type":"object"}`)) != nil || compactSchema(nil) != nil {
		t.Error("a schema without properties should compact to nil")
	}
	// What textcall types with it: a number parameter becomes a number.
	o := &textcall.Options{Families: textcall.All, Tools: offeredTools(Target{TextCalls: textcall.All}, []textcall.Tool{{Name: "Read", Parameters: []byte(`{"type":"object","properties":{"limit":{"type":"number","description":"d"}}}`)}},
		func(t *textcall.Tool) (string, jsontext.Value) { return t.Name, t.Parameters })}
	r := textcall.Parse("<function=Read>\n<parameter=limit>\n10\n</parameter>\n</function>", o)
	if len(r.Calls) != 1 || r.Calls[0].Arguments != `{"limit":10}` {
		t.Errorf("calls = %+v, want Read {\"limit\":10}", r.Calls)
	}
}

// FuzzQuickSpots: where the fast reading of a chunk says it found the
// content and finish, they are those the decoding one finds.
func FuzzQuickSpots(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi <"},"finish_reason":null}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a\"content\":\"b"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"x","content":null}}]}`,
		`{"choices":[{"index":1,"delta":{"content":"x"}},{"index":0,"delta":{"content":"y"}}]}`,
		`{"choices":[{"index":0,"delta":{"content" : "spaced"},"finish_reason" : "length"}]}`,
		// Non-stream answers (ChatTextResponse reads them the same way).
		`{"id":"chatcmpl-stub","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"word0 word1\n<tool_call>"},"finish_reason":"stop"}],"usage":{"completion_tokens":80,"prompt_tokens":10,"total_tokens":90}}`,
		`{"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"ok","reasoning_content":"think"}}],"usage":{"prompt_tokens_details":{"cached_tokens":3}}}`,
		`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"index":0,"logprobs":{"content":[]},"message":{"content":"x"},"finish_reason":"stop"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, chunk string) {
		q, ok := quickSpots([]byte(chunk))
		if !ok {
			return
		}
		d, dok := chunkSpots([]byte(chunk))
		if !dok {
			if q.cStart >= 0 || q.fStart >= 0 {
				t.Fatalf("quickSpots found content or finish in what is not a chunk: %q %+v", chunk, q)
			}
			return
		}
		if q.cStart != d.cStart || q.cEnd != d.cEnd || q.content != d.content || q.fStart != d.fStart || q.fEnd != d.fEnd || q.finish != d.finish {
			t.Fatalf("%q:\nquick  %+v\ndecode %+v", chunk, q, d)
		}
	})
}

// FuzzQuickTextDelta: where the fast reading of a Messages event finds a
// text_delta, decoding the event finds the same index and text.
func FuzzQuickTextDelta(f *testing.F) {
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi <"}}`,
		`{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"a\n\"b\""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"text":"x","type":"text_delta"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		index, text, ok := quickTextDelta([]byte(data))
		if !ok {
			return
		}
		var be blockEvent
		if !jsontext.Value(data).IsValid() || json.Unmarshal([]byte(data), &be, decodeOpts) != nil {
			t.Fatalf("quickTextDelta read %q, which is not an event", data)
		}
		if be.Delta == nil || be.Delta.Type != "text_delta" || be.Index != index || be.Delta.Text != text {
			t.Fatalf("%q: quick %d %q, decoded %+v %+v", data, index, text, be, be.Delta)
		}
	})
}

// FuzzPlainChunk: where a chunk has the shape of the latest plain one (its
// bytes before and after the text the same), quickScan reads it as the
// same chunk of another text: plain, no finish_reason, the text between.
func FuzzPlainChunk(f *testing.F) {
	for _, s := range [][2]string{
		{`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi "},"finish_reason":null}]}`, "there"},
		{`{"choices":[{"index":0,"delta":{"content":"a"}}]}`, `b","finish_reason":"stop`},
		{`{"choices":[{"index":0,"delta":{"content":""}}]}`, "é"},
		{`{"choices":[{"delta":{"content":"x"},"index":0}]}`, "\\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, first, text string) {
		sp, ok := quickScan([]byte(first))
		if !ok || !sp.plain || sp.fStart >= 0 {
			return
		}
		var c plainChunk
		c.learn([]byte(first), sp.cStart+1, sp.cEnd-1)
		next := first[:sp.cStart+1] + text + first[sp.cEnd-1:]
		got, ok := c.text([]byte(next))
		if !ok {
			return
		}
		q, qok := quickScan([]byte(next))
		if !qok || !q.plain || q.fStart >= 0 || q.cStart != sp.cStart || string(got) != text || next[q.cStart+1:q.cEnd-1] != text {
			t.Fatalf("%q after %q: fast path %q, quickScan %+v (ok %v)", next, first, got, q, qok)
		}
	})
}

// TestQuickTextDelta: the fast reading takes a text_delta as servers
// write it, and leaves to the decoder an event that is not one, or
// names a member twice.
func TestQuickTextDelta(t *testing.T) {
	for _, c := range []struct {
		data string
		ok   bool
	}{
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, true},
		{`{"index":3,"delta":{"text":"a\nb","type":"text_delta"},"type":"content_block_delta"}`, true},
		{`{"type":"content_block_start","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, false},
		{`{"index":0,"delta":{"type":"text_delta","text":"Hi"}}`, false},
		{`{"type":"contex","type":"content_block_delta","index":0,"delta":{"text":"x","type":"text_delta"}}`, false},
		{`{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"text_delta","text":"Hi"}}`, false},
	} {
		if _, _, ok := quickTextDelta([]byte(c.data)); ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.data, ok, c.ok)
		}
	}
}
