package balance

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/config"
)

// TestNamesUniqueAndNoCredentials: backends whose api_base differ only by
// credentials (or scheme) get names of their own; a snapshot shows no
// credentials, in the api_base or the last error.
func TestNamesUniqueAndNoCredentials(t *testing.T) {
	cfg := &config.Config{Routes: []config.Route{
		{Alias: "a", APIBase: "http://u1:secret-one@h:8000/v1", BackendModel: "m"},
		{Alias: "b", APIBase: "http://u2:secret-two@h:8000/v1", BackendModel: "m"},
		{Alias: "c", APIBase: "https://h:8000/v1", BackendModel: "m"},
	}}
	bl := New(cfg, Options{})
	names := map[string]bool{}
	for _, b := range bl.Backends() {
		if names[b.Name] || strings.Contains(b.Name, "secret") || strings.Contains(b.Name, "u1") {
			t.Errorf("name %q (have %v)", b.Name, names)
		}
		names[b.Name] = true
	}
	bl.Backends()[0].lastErr = `Post "http://u1:***@h:8000/v1/chat/completions": dial tcp: refused (secret-one)`
	for _, s := range bl.Snapshot() {
		if strings.Contains(s.APIBase+s.LastError, "secret") || strings.Contains(s.APIBase+s.LastError, "u1") || !strings.Contains(s.APIBase, "h:8000") {
			t.Errorf("snapshot %s: %s %s", s.Name, s.APIBase, s.LastError)
		}
	}
}
