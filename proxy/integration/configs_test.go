package integration

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// Every config under deploy/ loads with the proxy's own loader, and routes
// every model name the coding client was seen asking for. (No Docker needed.)
func TestDeployConfigs(t *testing.T) {
	var clientModels []string
	for _, name := range fixtures.ClientRequests() {
		f, err := fixtures.ClientCapture(name)
		if err != nil {
			t.Fatalf("fixture %s: %v", name, err)
		}
		var body struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(f.Body, &body); err != nil {
			t.Fatalf("fixture %s: %v", name, err)
		}
		if body.Model != "" && !slices.Contains(clientModels, body.Model) {
			clientModels = append(clientModels, body.Model)
		}
	}
	if len(clientModels) == 0 {
		t.Fatal("no model names in the coding-client fixtures")
	}

	files, err := filepath.Glob(filepath.Join("..", "..", "deploy", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob(filepath.Join("..", "..", "deploy", "examples", "*.yaml"))
	files = append(files, examples...)
	if len(files) < 5 {
		t.Fatalf("deploy configs: %v, want config.yaml, config.local.yaml and three examples", files)
	}
	env := func(name string) (string, bool) { return "set-by-test-" + strings.ToLower(name), true }
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := config.Load(f, env)
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.PassThrough {
				t.Errorf("enable_vendora_pass_through is not true: the coding client's /v1/messages would be off")
			}
			if cfg.MasterKey != "set-by-test-proxy_api_key" {
				t.Errorf("master_key resolves to %q, want os.environ/PROXY_API_KEY", cfg.MasterKey)
			}
			for _, m := range append(clientModels, "local-model") {
				r, ok := cfg.Lookup(m)
				if !ok {
					t.Errorf("no alias %q (the coding client asks for it): aliases %v", m, cfg.Aliases())
					continue
				}
				// supports_system_message shapes the Chat request; a vendora/
				// backend takes the Messages request as the client sent it.
				if r.SupportsSystemMessage && r.Protocol == config.ProtocolChat {
					t.Errorf("%s: supports_system_message true, want false as in the spec", m)
				}
				if r.Timeout != 300*time.Second || r.StreamTimeout != 300*time.Second {
					t.Errorf("%s: timeout %v stream_timeout %v, want 300 s each as in the spec", m, r.Timeout, r.StreamTimeout)
				}
			}
			if filepath.Base(f) == "config.yaml" {
				for _, r := range cfg.Routes {
					if r.BackendModel != "stub-model" || r.APIBase != "http://backend:8000/v1" || r.APIKey != "set-by-test-backend_api_key" {
						t.Errorf("%s: backend %q at %q key %q, want stub-model at http://backend:8000/v1 with os.environ/BACKEND_API_KEY", r.Alias, r.BackendModel, r.APIBase, r.APIKey)
					}
				}
			}
		})
	}
}
