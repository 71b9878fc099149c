package stub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	return postJSON(t, url+"/v1/chat/completions", body)
}

func postJSON(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestTextAnswerAndRecord(t *testing.T) {
	s := New(Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp := post(t, srv.URL, `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"ping"}]}`)
	defer resp.Body.Close()
	var out struct {
		Model   string
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Model != "m" || out.Choices[0].Message.Content != "Hello from stub-backend. You said: ping" || out.Choices[0].FinishReason != "stop" || out.Usage.PromptTokens != 1 {
		t.Errorf("answer = %+v", out)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Done.IsZero() || reqs[0].Cancelled {
		t.Errorf("record = %+v", reqs)
	}
}

func TestMaxTokensCuts(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	resp := post(t, srv.URL, `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"content":"Hello "`) || !strings.Contains(string(b), `"finish_reason":"length"`) {
		t.Errorf("max_tokens 1 answer: %s", b)
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	resp := post(t, srv.URL, `{"model":"m","stream":true,"messages":[{"role":"user","content":"stub:parallel"}],
		"tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object","properties":{"file_path":{"type":"string"}}}}}]}`)
	defer resp.Body.Close()
	args := map[int]string{}
	ids := map[int]string{}
	sc := bufio.NewScanner(resp.Body)
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int
						ID       string
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("bad chunk %s: %v", line, err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				args[tc.Index] += tc.Function.Arguments
				if tc.ID != "" {
					ids[tc.Index] = tc.ID
				}
			}
		}
	}
	if !done {
		t.Error("no [DONE]")
	}
	if args[0] != `{"file_path": "stub-file_path"}` || args[1] != `{"file_path": "stub2-file_path"}` || ids[0] != "call_stub_1" || ids[1] != "call_stub_2" {
		t.Errorf("calls: ids %v args %v", ids, args)
	}
}

func TestLoadingAnswers503(t *testing.T) {
	srv := httptest.NewServer(New(Options{Loading: time.Hour}))
	defer srv.Close()
	resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "Loading model") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

func TestLoadingRequestsAnswer503ThenAnswer(t *testing.T) {
	srv := httptest.NewServer(New(Options{LoadingRequests: 2}))
	defer srv.Close()
	for i, want := range []int{503, 503, 200, 200} {
		resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == 503) != strings.Contains(string(b), "Loading model") {
			t.Errorf("request %d: %d %s, want %d", i, resp.StatusCode, b, want)
		}
	}
}

// TestColdStartHoldsFirstRequests: the first request waits out the cold
// start; once it has, a request waits no more (coldWait says so, rather
// than a wall-clock bound on the warm request a loaded machine may miss).
func TestColdStartHoldsFirstRequests(t *testing.T) {
	s := New(Options{ColdStart: 300 * time.Millisecond})
	srv := httptest.NewServer(s)
	defer srv.Close()
	start := time.Now()
	post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`).Body.Close()
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("cold request answered after %s", d)
	}
	if w := s.coldWait(time.Now()); w > 0 {
		t.Errorf("a request after the cold start would still wait %s", w)
	}
	resp := post(t, srv.URL, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("warm request: %d", resp.StatusCode)
	}
}

func TestCancelledRequestIsRecorded(t *testing.T) {
	s := New(Options{FirstTokenDelay: 5 * time.Second})
	srv := httptest.NewServer(s)
	defer srv.Close()
	// Cancel once the stub has recorded the request: a fixed 100 ms could
	// end before a loaded machine delivered it, and then nothing is
	// recorded at all.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for len(s.Requests()) == 0 && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("request was not cut")
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if r := s.Requests(); len(r) == 1 && r[0].Cancelled && !r[0].Done.IsZero() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("cancellation not recorded: %+v", s.Requests())
}

// "stub:shell CMD" calls the client's shell tool with CMD, in the
// arguments each client's tool takes; a client without one gets its
// first tool.
func TestShellCallFitsTheClientsTool(t *testing.T) {
	srv := httptest.NewServer(New(Options{}))
	defer srv.Close()
	for tool, want := range map[string]string{
		"exec_command":  `{"cmd":"echo hi"}`,
		"shell_command": `{"command":"echo hi"}`,
		"shell":         `{"command":["bash","-lc","echo hi"]}`,
		"Bash":          `{"command":"echo hi"}`,
		"Read":          `{"file_path":"stub-file_path"}`,
	} {
		resp := post(t, srv.URL, `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"stub:shell echo hi"}],
			"tools":[{"type":"function","function":{"name":"`+tool+`","parameters":{"type":"object","properties":{"file_path":{"type":"string"}}}}}]}`)
		var out struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		err := json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Choices) != 1 || len(out.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("%s: answer %+v", tool, out)
		}
		f := out.Choices[0].Message.ToolCalls[0].Function
		var args bytes.Buffer
		if err := json.Compact(&args, []byte(f.Arguments)); err != nil || f.Name != tool || args.String() != want {
			t.Errorf("%s: called %s with %s, want %s", tool, f.Name, f.Arguments, want)
		}
	}
}
