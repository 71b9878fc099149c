package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

const (
	liteLLMMasterKey = "sk-litellm-master-31c2"
	liteLLMOpenAIKey = "sk-openai-stub-8d0e"
	liteLLMAnthKey   = "sk-ant-stub-4f71"
)

// fixedCreated serves backend with every "created" of its answers set to
// 0: the stub stamps the second it answered, and the two proxies are
// asked a second apart at most; with it, both proxies get the same bytes
// from the backend by construction.
func fixedCreated(backend http.Handler) http.Handler {
	created := regexp.MustCompile(`"created":\d+`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		backend.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(created.ReplaceAll(rec.Body.Bytes(), []byte(`"created":0`)))
	})
}

// startDocsProxy starts the proxy on testdata/name with the stubs' addresses.
func startDocsProxy(t *testing.T, name, chatURL, messagesURL, openURL string) *proxyProc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.NewReplacer("{{CHAT}}", chatURL, "{{MESSAGES}}", messagesURL, "{{OPEN}}", openURL).Replace(string(data))
	p := spawnProxy(t, []string{"OPENAI_API_KEY=" + liteLLMOpenAIKey, "ANTHROPIC_API_KEY=" + liteLLMAnthKey, "LITELLM_MASTER_KEY=" + liteLLMMasterKey},
		"--config", writeFile(t, name, cfg), "--host", "127.0.0.1", "--port", "0")
	p.url = "http://" + p.waitLog(t, `msg="proxy listening" addr=(\S+)`)
	return p
}

type answer struct {
	status      int
	contentType string
	body        string
}

func ask(t *testing.T, url, path, body string) answer {
	t.Helper()
	req, err := http.NewRequest("POST", url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+liteLLMMasterKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

// randomMessageID is the one part of an answer made up per request: the
// Messages id the proxy gives a translated Chat answer (msg_ and 24
// random characters). The test replaces it, and nothing else.
var randomMessageID = regexp.MustCompile(`"id":"msg_[0-9A-Za-z]{24}"`)

// TestLiteLLMDocsConfigServesBothEndpointsAsTheSpecsWords: a config from
// LiteLLM's documentation starts the proxy, which serves
// /v1/chat/completions and /v1/messages for each of its entries (an
// OpenAI-compatible backend and a Messages one, keys from the
// environment, the master key required); the same config in the spec's
// words answers the same requests with the same bytes, once the random
// Messages ids are set aside.
func TestLiteLLMDocsConfigServesBothEndpointsAsTheSpecsWords(t *testing.T) {
	chat := httptest.NewServer(fixedCreated(stub.New(stub.Options{APIKey: liteLLMOpenAIKey, Events: 3})))
	t.Cleanup(chat.Close)
	messagesStub := stub.New(stub.Options{Protocol: stub.ProtocolMessages, Events: 3})
	messages := httptest.NewServer(fixedCreated(messagesStub))
	t.Cleanup(messages.Close)
	open := httptest.NewServer(fixedCreated(stub.New(stub.Options{Events: 3}))) // api_key: none
	t.Cleanup(open.Close)
	lite := startDocsProxy(t, "litellm-docs.yaml", chat.URL, messages.URL, open.URL)
	spec := startDocsProxy(t, "litellm-docs-spec.yaml", chat.URL, messages.URL, open.URL)

	requests := 0
	for _, model := range []string{"gpt-4o", "claude-3-5-sonnet", "vllm-models"} {
		for _, stream := range []string{"false", "true"} {
			for _, endpoint := range []string{"/v1/chat/completions", "/v1/messages"} {
				body := `{"model":"` + model + `","max_tokens":32,"stream":` + stream + `,"messages":[{"role":"user","content":"say hi"}]}`
				a, b := ask(t, lite.url, endpoint, body), ask(t, spec.url, endpoint, body)
				requests++
				if a.status != http.StatusOK {
					t.Errorf("%s %s stream %s: LiteLLM's spelling answered %d: %s", endpoint, model, stream, a.status, a.body)
					continue
				}
				if !strings.Contains(a.body, `"model":"`+model+`"`) {
					t.Errorf("%s %s: the answer does not name the alias: %s", endpoint, model, a.body)
				}
				na, nb := randomMessageID.ReplaceAllString(a.body, `"id":"msg_ID"`), randomMessageID.ReplaceAllString(b.body, `"id":"msg_ID"`)
				if a.status != b.status || a.contentType != b.contentType || na != nb {
					t.Errorf("%s %s stream %s: the two spellings differ:\nLiteLLM's %d %s\n%s\nspec's %d %s\n%s", endpoint, model, stream, a.status, a.contentType, a.body, b.status, b.contentType, b.body)
				}
			}
		}
	}
	// The chat stub refuses any key but OPENAI_API_KEY's; the Messages
	// stub takes any, so look.
	var sawAnthKey bool
	for _, r := range messagesStub.Requests() {
		sawAnthKey = sawAnthKey || strings.Contains(r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"), liteLLMAnthKey)
	}
	if !sawAnthKey {
		t.Error("the Messages backend never got ANTHROPIC_API_KEY")
	}
	// Without the master key: refused, in both spellings alike.
	for _, p := range []*proxyProc{lite, spec} {
		resp, err := http.Post(p.url+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(`{"model":"gpt-4o","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no key: %s, want 401", resp.Status)
		}
	}
	if !t.Failed() {
		t.Logf("%d requests, each answered alike by both spellings", requests)
	}
}

// TestLiteLLMDocsQuickStartRefusals: what Dragoman does not implement of
// the Quick Start's entries is refused by name, at start-up.
func TestLiteLLMDocsQuickStartRefusals(t *testing.T) {
	for _, tt := range []struct{ extra, want string }{
		{"      rpm: 1440\n", `unknown key "rpm" in model_list[0].litellm_params (rpm is a LiteLLM setting that Dragoman does not implement)`},
		{"    model_info: \n      version: 2\n", `unknown key "model_info" in model_list[0] (model_info is a LiteLLM setting`},
	} {
		cfg := "model_list:\n  - model_name: vllm-models\n    litellm_params:\n      model: openai/facebook/opt-125m\n      api_base: http://0.0.0.0:4000/v1\n      api_key: none\n" + tt.extra
		var stderr bytes.Buffer
		code := run([]string{"--config", writeFile(t, "quick.yaml", cfg), "--no-auth"}, &stderr, func(string) (string, bool) { return "", false })
		if code == 0 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("exit %d, stderr %q; want non-zero and %q", code, stderr.String(), tt.want)
		}
	}
}
