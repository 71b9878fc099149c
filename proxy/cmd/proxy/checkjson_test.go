package main

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/doctor"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestCheckJSONWindowFields: --json gives each backend's window and where
// it comes from as fields of their own (context_window, window_source):
// the backend's word, or the config's when it sets one.
func TestCheckJSONWindowFields(t *testing.T) {
	url := serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder", ContextWindow: 65536, APIKey: "sk-b", StrictModel: true}))
	for _, c := range []struct {
		name, extra string
		window      float64
		source      string
	}{
		{"discovered", "", 65536, "GET /v1/models max_model_len"},
		{"configured", "      context_window: 40000\n", 40000, "proxy_params.context_window"},
	} {
		cfg := writeFile(t, "config.yaml", "model_list:\n  - model_name: claude-opus-5-5\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: "+url+"\n      api_key: sk-b\n"+c.extra)
		var out, errOut bytes.Buffer
		check([]string{"--config", cfg, "--json"}, &out, &errOut, os.LookupEnv)
		var rep struct {
			Backends []map[string]any `json:"backends"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Backends) != 1 {
			t.Fatalf("%s: %v\n%s%s", c.name, err, out.String(), errOut.String())
		}
		b := rep.Backends[0]
		if b["context_window"] != c.window || b["window_source"] != c.source {
			t.Errorf("%s: context_window %v, window_source %v; want %v, %q\n%s", c.name, b["context_window"], b["window_source"], c.window, c.source, out.String())
		}
	}
}

// TestCheckReadsAMessagesAnswerSpacedOut: a server whose native Messages
// endpoint writes its JSON with spaces ("type": "message") is read as
// one, and vendora/ is suggested.
func TestCheckReadsAMessagesAnswerSpacedOut(t *testing.T) {
	backend := stub.New(stub.Options{Model: "qwen3-coder", ContextWindow: 65536, APIKey: "sk-b", StrictModel: true})
	url := serveBackend(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{\n  \"id\": \"msg_1\",\n  \"type\": \"message\",\n  \"role\": \"assistant\",\n  \"content\": [{\"type\": \"text\", \"text\": \"hi\"}]\n}\n"))
			return
		}
		backend.ServeHTTP(w, r)
	}))
	_, text, rep := runCheck(t, "--config", checkConfig(t, url, "qwen3-coder", "sk-b"))
	r := result(rep, doctor.CheckMessages)
	if !strings.HasPrefix(r.Detail, "present") || !strings.Contains(r.Fix, "vendora/qwen3-coder") {
		t.Errorf("native Messages: %+v, want present with vendora/ suggested\n%s", r, text)
	}
}
