package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/doctor"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// checkConfig writes a config of one alias to baseURL with model and key.
func checkConfig(t *testing.T, baseURL, model, key string) string {
	t.Helper()
	return writeFile(t, "config.yaml", "model_list:\n  - model_name: claude-opus-5-5\n    proxy_params:\n      model: vendorb/"+model+
		"\n      api_base: "+baseURL+"\n      api_key: "+key+"\n")
}

func runCheck(t *testing.T, args ...string) (int, string, doctor.Report) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := check(args, &out, &errOut, os.LookupEnv)
	var rep doctor.Report
	var jout bytes.Buffer
	if code != 2 {
		check(append(args, "--json"), &jout, &errOut, os.LookupEnv)
		if err := json.Unmarshal(jout.Bytes(), &rep); err != nil {
			t.Fatalf("--json: %v\n%s", err, jout.String())
		}
	}
	return code, out.String() + errOut.String(), rep
}

func result(rep doctor.Report, check string) doctor.Result {
	for _, b := range rep.Backends {
		for _, r := range b.Results {
			if r.Check == check {
				return r
			}
		}
	}
	return doctor.Result{}
}

func TestCheckHealthyStub(t *testing.T) {
	url := serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder", ContextWindow: 65536, APIKey: "sk-b", StrictModel: true}))
	code, text, rep := runCheck(t, "--config", checkConfig(t, url, "qwen3-coder", "sk-b"))
	if code != 0 || !rep.OK || rep.Failures != 0 || rep.Warnings != 0 {
		t.Fatalf("exit %d\n%s", code, text)
	}
	for _, c := range []struct{ check, detail string }{
		{doctor.CheckReachable, "vLLM answers GET /v1/models"},
		{doctor.CheckKey, "accepted"},
		{doctor.CheckModel, "served"},
		{doctor.CheckWindow, "65536 tokens (GET /v1/models max_model_len)"},
		{doctor.CheckToolCall, "called the named tool get_weather("},
		{doctor.CheckSchemas, "the coding client's 12 tools compile"},
		{doctor.CheckReasoning, "none seen"},
		{doctor.CheckMessages, "absent"},
	} {
		if r := result(rep, c.check); r.Status != doctor.OK || !strings.Contains(r.Detail, c.detail) {
			t.Errorf("%s: %+v, want ok %q", c.check, r, c.detail)
		}
	}
	if r := result(rep, doctor.CheckLatency); r.Status != doctor.OK {
		t.Errorf("first token: %+v", r)
	}
	if !strings.Contains(text, "all checks passed") || !strings.Contains(text, "claude-opus-5-5 -> qwen3-coder at "+url+" (vLLM)") {
		t.Errorf("table:\n%s", text)
	}
	t.Logf("\n%s", text)
}

func TestCheckFailuresCarryTheirFix(t *testing.T) {
	down := httptest.NewServer(nil)
	downURL := down.URL + "/v1"
	down.Close()
	for _, c := range []struct {
		name        string
		url         string
		model, key  string
		check       string
		detail, fix string
		failures    int
	}{
		{"wrong key", serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder", APIKey: "sk-right"})), "qwen3-coder", "sk-wrong",
			doctor.CheckKey, "the backend refused the key (401)", "set proxy_params.api_key", 1},
		{"unknown backend model", serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder", StrictModel: true})), "qwen3-coder-typo", "k",
			// The checks after it still run: the backend's own answers (404
			// to the completions) say more than "skipped".
			doctor.CheckModel, `does not serve "qwen3-coder-typo"; it serves: qwen3-coder`, "vendorb/<one of: qwen3-coder>", 3},
		{"backend down", downURL, "qwen3-coder", "k",
			doctor.CheckReachable, "cannot reach " + downURL + ": connection refused", "start the backend, or correct proxy_params.api_base", 1},
		{"model never calls tools", serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder", NoTools: true, ContextWindow: 65536})), "qwen3-coder", "k",
			doctor.CheckToolCall, "asked to call get_weather, the model answered with text instead", "serve the model with tool calling on", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, text, rep := runCheck(t, "--config", checkConfig(t, c.url, c.model, c.key))
			want := c.failures
			if code != 1 || rep.OK || rep.Failures != want {
				t.Errorf("exit %d, %d failures, want exit 1 and %d\n%s", code, rep.Failures, want, text)
			}
			r := result(rep, c.check)
			if r.Status != doctor.Fail || !strings.Contains(r.Detail, c.detail) || !strings.Contains(r.Fix, c.fix) {
				t.Errorf("%s: %+v\nwant FAIL %q, fix %q", c.check, r, c.detail, c.fix)
			}
			if !strings.Contains(text, "FAIL") || !strings.Contains(text, "fix: ") || !strings.Contains(text, fmt.Sprintf("%d failure(s)", want)) {
				t.Errorf("table:\n%s", text)
			}
			t.Logf("\n%s", text)
		})
	}
}

func TestCheckConfigAndFlags(t *testing.T) {
	path := writeFile(t, "c.yaml", "model_list:\n  - model_name: a\n    proxy_params: {model: vendorb/m, api_base: 'http://127.0.0.1:1/v1', api_key: os.environ/CHECK_UNSET_KEY}\n")
	code, text, rep := runCheck(t, "--config", path)
	if code != 1 || rep.OK || !strings.Contains(text, "CHECK_UNSET_KEY") || !strings.Contains(text, "export CHECK_UNSET_KEY") {
		t.Errorf("unset key variable: exit %d\n%s", code, text)
	}
	if r := result(rep, "config"); r.Status != doctor.Fail {
		t.Errorf("JSON report of a config failure: %+v", rep)
	}
	if code, _, _ := runCheck(t, "--config", path, "extra"); code != 2 {
		t.Errorf("stray argument: exit %d, want 2", code)
	}
	if code, _, _ := runCheck(t, "--bogus"); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
}

func TestCheckNeverPrintsTheBackendKey(t *testing.T) {
	const key = "sk-backend-echoed-secret"
	echo := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":{"message":"bad header ` + r.Header.Get("Authorization") + `"}}`))
	}))
	code, text, _ := runCheck(t, "--config", checkConfig(t, echo, "m", key))
	if code != 1 || strings.Contains(text, key) || !strings.Contains(text, "[redacted]") {
		t.Errorf("exit %d\n%s", code, text)
	}
}

func clientResult(rep doctor.Report, check string) doctor.Result {
	for _, r := range rep.Clients {
		if r.Check == check {
			return r
		}
	}
	return doctor.Result{}
}

// TestCheckWebSearch: proxy check says web search is off and how to turn
// it on; on, it probes the provider (the stub answers as SearXNG) and
// fails with the fix when the provider does not answer; it always says
// what Claude Code's WebFetch needs behind a gateway.
func TestCheckWebSearch(t *testing.T) {
	url := serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder"}))
	off := checkConfig(t, url, "qwen3-coder", "sk-b")
	code, text, rep := runCheck(t, "--config", off)
	r := clientResult(rep, doctor.CheckWebSearch)
	if code != 0 || r.Status != doctor.Info || !strings.Contains(r.Detail, "off") || !strings.Contains(r.Fix, "search_settings") {
		t.Errorf("off: exit %d, %+v\n%s", code, r, text)
	}
	if !strings.Contains(text, "web_search") || !strings.Contains(text, "note: add search_settings") {
		t.Errorf("the table does not say how to turn web search on:\n%s", text)
	}
	if f := clientResult(rep, doctor.CheckWebFetch); f.Status != doctor.Info || !strings.Contains(f.Fix, `"skipWebFetchPreflight": true`) {
		t.Errorf("web_fetch = %+v", f)
	}
	root := strings.TrimSuffix(url, "/v1")
	on, _ := os.ReadFile(off)
	_, _, rep = runCheck(t, "--config", writeFile(t, "on.yaml", string(on)+"search_settings:\n  provider: searxng\n  api_base: "+root+"\n"))
	if r := clientResult(rep, doctor.CheckWebSearch); r.Status != doctor.OK || !strings.Contains(r.Detail, "2 result(s)") {
		t.Errorf("on: %+v", r)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	code, _, rep = runCheck(t, "--config", writeFile(t, "down.yaml", string(on)+"search_settings:\n  provider: searxng\n  api_base: "+down.URL+"\n"))
	if r := clientResult(rep, doctor.CheckWebSearch); code != 1 || r.Status != doctor.Fail || !strings.Contains(r.Fix, "format=json") {
		t.Errorf("down: exit %d, %+v", code, r)
	}
}

// TestCheckSaysWhereTheHookIsRegistered: the clients section reads the
// files of the home it runs in: an old ~/.client registration is a
// warning with the fix, Codex's notify is found in $CODEX_HOME.
func TestCheckSaysWhereTheHookIsRegistered(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", filepath.Join(home, "codex"))
	old := filepath.Join(home, ".client", "settings.json")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(old, []byte(`{"hooks":{"Stop":[{"matcher":"*","hooks":[{"type":"command","command":"`+home+`/.client/hooks/notify-chat"}]}]}}`), 0o644)
	os.MkdirAll(filepath.Join(home, "codex"), 0o755)
	os.WriteFile(filepath.Join(home, "codex", "config.toml"), []byte(`notify = ["`+home+`/codex/hooks/notify-chat"]`+"\n"), 0o644)
	url := serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder"}))
	code, text, rep := runCheck(t, "--config", checkConfig(t, url, "qwen3-coder", "sk-b"))
	if r := clientResult(rep, doctor.CheckHookClaude); r.Status != doctor.Warn || !strings.Contains(r.Detail, old) {
		t.Errorf("claude: %+v", r)
	}
	if r := clientResult(rep, doctor.CheckHookCodex); r.Status != doctor.OK {
		t.Errorf("codex: %+v", r)
	}
	if code != 0 || !strings.Contains(text, "notify_hook_claude") || !strings.Contains(text, "fix: run bin/notify-chat install") {
		t.Errorf("exit %d\n%s", code, text)
	}
}
