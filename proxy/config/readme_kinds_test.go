package config

import (
	"os"
	"strings"
	"testing"
)

// TestREADMERoutingExamplesParse: the routing examples of the README's
// "Routing by request kind" are valid configs.
func TestREADMERoutingExamplesParse(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Routing by request kind")
	if !ok {
		t.Fatal("README has no section Routing by request kind")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := strings.Split(section, "```yaml\n")[1:]
	if len(blocks) != 2 {
		t.Fatalf("%d yaml examples, want the single-GPU one and the pool one", len(blocks))
	}
	for i, blk := range blocks {
		y, _, _ := strings.Cut(blk, "```")
		cfg, err := Parse("README example", []byte(y), env(map[string]string{"BACKEND_API_KEY": "k"}))
		if err != nil {
			t.Errorf("example %d: %v", i, err)
			continue
		}
		if len(cfg.Router.Routes) == 0 {
			t.Errorf("example %d routes nothing", i)
		}
	}
}
