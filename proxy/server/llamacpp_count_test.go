package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// llamaMore is the llamaServer stand-in with what else llama-server
// b10061 answers (../shared/recorded/llama-server-b10061/): POST
// /tokenize, which reads {"content"} and answers {"tokens":[]} to vLLM's
// {"model","prompt"} (count-tokens-tokenize-field.txt); its native POST
// /v1/messages/count_tokens when countTokens is set (count-tokens.txt);
// and, for a request whose last user text says "peg-native", a stream
// that breaks off after some text with its server_error event
// (midstream-500-parse-error.txt), or that error as a 500 when not
// streamed.
type llamaMore struct {
	*llamaServer
	countTokens bool
	tokenizes   atomic.Int32
	last        atomic.Value // the last text /tokenize got
}

func (lm *llamaMore) lastTokenized() (string, bool) {
	s, ok := lm.last.Load().(string)
	return s, ok
}

const pegNative = "The model produced output that does not match the expected peg-native format"

func newLlamaMore(t *testing.T, countTokens bool) (*llamaMore, string) {
	t.Helper()
	lm := &llamaMore{llamaServer: &llamaServer{t: t}, countTokens: countTokens}
	srv := httptest.NewServer(lm)
	t.Cleanup(srv.Close)
	lm.url = srv.URL
	return lm, srv.URL
}

// llamaTokens is the stand-in tokenizer: a token per word and per
// punctuation character.
func llamaTokens(text string) int {
	n := 0
	inWord := false
	for _, r := range text {
		switch {
		case r == ' ' || r == '\n' || r == '\t':
			inWord = false
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			if !inWord {
				n++
			}
			inWord = true
		default:
			n++
			inWord = false
		}
	}
	return n
}

func (lm *llamaMore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/tokenize":
		lm.tokenizes.Add(1)
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		content, _ := req["content"].(string)
		lm.last.Store(content)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		tokens := make([]int, llamaTokens(content))
		for i := range tokens {
			tokens[i] = 1000 + i
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": tokens})
		return
	case "/v1/messages/count_tokens":
		if !lm.countTokens {
			break
		}
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		n := 0
		for _, m := range req.Messages {
			n += llamaTokens(m.Content) + 7 // the template's tokens of a turn
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `{"input_tokens":%d}`, n)
		return
	case "/v1/chat/completions", "/v1/messages":
		raw, _ := io.ReadAll(r.Body)
		if strings.Contains(string(raw), "peg-native") {
			lm.brokenStream(w, r.URL.Path == "/v1/messages", strings.Contains(string(raw), `"stream":true`))
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(raw)))
	}
	lm.llamaServer.ServeHTTP(w, r)
}

func (lm *llamaMore) brokenStream(w http.ResponseWriter, messages, stream bool) {
	w.Header().Set("Server", "llama.cpp")
	errBody := `{"code":500,"message":"` + pegNative + `","type":"server_error"}`
	if !stream {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(500)
		io.WriteString(w, `{"error":`+errBody+`}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	words := []string{" Push", " reconnect", " stares", " classrooms"}
	if messages {
		fmt.Fprintf(w, "event: message_start\ndata: %s\n\n", `{"type":"message_start","message":{"id":"chatcmpl-V9BZelMDP8dNJOdqXvRSSPkdraYD54OP","type":"message","role":"assistant","content":[],"model":"models/tiny-random-llama.gguf","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":0}}}`)
		fmt.Fprintf(w, "event: content_block_start\ndata: %s\n\n", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		for _, word := range words {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", word)
		}
		fmt.Fprintf(w, "event: error\ndata: %s\n\n", errBody)
		return
	}
	for _, word := range words {
		fmt.Fprintf(w, "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":{\"content\":%q}}],\"created\":1796153151,\"id\":\"chatcmpl-ckvBU7ngGXfOsVClOElUizB0hVCDLsYT\",\"model\":\"models/tiny-random-llama.gguf\",\"object\":\"chat.completion.chunk\"}\n\n", word)
	}
	fmt.Fprintf(w, "data: {\"error\":%s}\n\n", errBody)
}

// TestLlamaMidStreamErrorInEachFrontsShape: llama-server's mid-stream
// server_error reaches a Messages client as a Messages error event (with
// error.type, which the SDK needs), a Chat client as a Chat error chunk
// and a Responses client as response.failed, each with the server's
// message, from a translated (vendorb/) and a native (vendora/) alias.
func TestLlamaMidStreamErrorInEachFrontsShape(t *testing.T) {
	_, url := newLlamaMore(t, false)
	h := newHarness(t, harnessOptions{routesYAML: llamaRoutes(url)})
	for _, alias := range []string{"llama-b", "llama-a"} {
		// Messages: the last event is a Messages error event.
		resp := h.post("/v1/messages", `{"model":"`+alias+`","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"write peg-native"}]}`)
		b := drain(t, resp)
		events := strings.Split(strings.TrimSpace(b), "\n\n")
		last := events[len(events)-1]
		data, _ := strings.CutPrefix(last, "event: error\ndata: ")
		var me struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(data), &me) != nil || me.Type != "error" || me.Error.Type != "api_error" || !strings.Contains(me.Error.Message, pegNative) {
			t.Errorf("%s messages: %d, last event %q", alias, resp.StatusCode, last)
		}
		if !strings.Contains(b, `"text":" classrooms"`) {
			t.Errorf("%s messages: the text before the error is lost:\n%s", alias, b)
		}

		// Chat: the last chunk is a Chat error with the server's message.
		resp = h.post("/v1/chat/completions", `{"model":"`+alias+`","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"write peg-native"}]}`)
		b = drain(t, resp)
		chunks := strings.Split(strings.TrimSpace(b), "\n\n")
		lastChunk, _ := strings.CutPrefix(chunks[len(chunks)-1], "data: ")
		var ce errorMessage
		if json.Unmarshal([]byte(lastChunk), &ce) != nil || !strings.Contains(ce.Error.Message, pegNative) {
			t.Errorf("%s chat: last chunk %q", alias, chunks[len(chunks)-1])
		}
		if !strings.Contains(b, " classrooms") {
			t.Errorf("%s chat: the text before the error is lost:\n%s", alias, b)
		}

		// Responses: response.failed with the server's message.
		resp = h.post("/v1/responses", `{"model":"`+alias+`","max_output_tokens":64,"stream":true,"input":"write peg-native"}`)
		b = drain(t, resp)
		i := strings.LastIndex(b, "event: response.failed\ndata: ")
		var rf struct {
			Response struct {
				Status string `json:"status"`
				Error  struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"response"`
		}
		if i < 0 || json.Unmarshal([]byte(strings.TrimSpace(b[i+len("event: response.failed\ndata: "):])), &rf) != nil ||
			rf.Response.Status != "failed" || !strings.Contains(rf.Response.Error.Message, pegNative) {
			t.Errorf("%s responses: %s", alias, b)
		}

		// Not streamed: the 500 in each front's shape, the message kept.
		for _, c := range []struct{ path, body string }{
			{"/v1/messages", `{"model":"` + alias + `","max_tokens":64,"messages":[{"role":"user","content":"write peg-native"}]}`},
			{"/v1/chat/completions", `{"model":"` + alias + `","max_tokens":64,"messages":[{"role":"user","content":"write peg-native"}]}`},
			{"/v1/responses", `{"model":"` + alias + `","max_output_tokens":64,"input":"write peg-native"}`},
		} {
			resp := h.post(c.path, c.body)
			raw := drain(t, resp)
			var e errorMessage
			json.Unmarshal([]byte(raw), &e)
			if status := resp.StatusCode; status < 500 || !strings.Contains(e.Error.Message, pegNative) || e.Error.Type == "" {
				t.Errorf("%s %s: %d %s", alias, c.path, status, raw)
			}
		}
	}
}

// errorMessage is the message and type of an error in any front's shape
// (its code may be a number: the Chat front passes a Chat backend's error
// through).
type errorMessage struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestLlamaCountTokens: count_tokens on a vendorb/ alias of llama-server
// equals llama-server's own count. Without its native count_tokens, the
// proxy asks /tokenize with the field llama-server reads ({"content"},
// once discovery knows the server; vLLM's {"model","prompt"} gets
// {"tokens":[]}, which is no count and does not make the proxy give up on
// the tokenizer), and its answer equals /tokenize's count of the prompt's
// text; a session's next turn has only its new messages tokenized. With
// the native count_tokens, its answer.
func TestLlamaCountTokens(t *testing.T) {
	body := func(turns int) string {
		msgs := []string{}
		for i := 0; i < turns; i++ {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d: how many tokens is this sentence? word word word"}`, i),
				fmt.Sprintf(`{"role":"assistant","content":"answer %d, in a few words."}`, i))
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"question %d: how many tokens is this sentence? word word word"}`, turns))
		return `{"model":"llama-b","system":"You are terse.","messages":[` + strings.Join(msgs, ",") +
			`],"tools":[{"name":"get_weather","description":"get weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
	}
	count := func(h *harness, b string) (int, string) {
		resp, out := h.do(http.MethodPost, "/v1/messages/count_tokens", b, nil, false)
		var c struct {
			InputTokens int `json:"input_tokens"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(out, &c) != nil {
			t.Fatalf("count_tokens: %d %s", resp.StatusCode, out)
		}
		return c.InputTokens, resp.Header.Get("Dragoman-Token-Count")
	}

	lm, url := newLlamaMore(t, false)
	h := newHarness(t, harnessOptions{routesYAML: llamaRoutes(url)})
	if _, source := count(h, body(1)); source != "estimate" {
		t.Errorf("before discovery: %s, want the estimate (vLLM's body gets no tokens from llama-server)", source)
	}
	h.server.Discover(t.Context())
	for turns := 1; turns <= 3; turns++ {
		b := body(turns)
		text, err := translate.BackendTokenizeText([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		asked := lm.tokenizes.Load()
		n, source := count(h, b)
		if source != "backend" || n != llamaTokens(text) {
			t.Errorf("%d turns: %d (%s), want /tokenize's count %d", turns, n, source, llamaTokens(text))
		}
		if got := lm.tokenizes.Load() - asked; got != 1 {
			t.Errorf("%d turns: /tokenize asked %d times", turns, got)
		}
	}
	if last, ok := lm.lastTokenized(); !ok || strings.Contains(last, "question 0") || !strings.Contains(last, "question 3") {
		t.Errorf("the third turn tokenized %q: want only what the second did not have", last)
	}

	_, url = newLlamaMore(t, true)
	h = newHarness(t, harnessOptions{routesYAML: llamaRoutes(url)})
	h.server.Discover(t.Context())
	if n, source := count(h, body(1)); source != "backend" || n != 2*llamaTokens("question 0: how many tokens is this sentence? word word word")+llamaTokens("answer 0, in a few words.")+3*7 {
		t.Errorf("with llama-server's count_tokens: %d (%s)", n, source)
	}
}
