package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsRoutingExamplesParse: the examples of docs/routing.md ("Routing
// by request kind") are valid configs that route something.
func TestDocsRoutingExamplesParse(t *testing.T) {
	b, err := os.ReadFile("../../docs/routing.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(b), "```yaml\n")[1:]
	if len(blocks) != 2 {
		t.Fatalf("%d yaml examples, want the single-GPU one and the pool one", len(blocks))
	}
	for i, blk := range blocks {
		y, _, _ := strings.Cut(blk, "```")
		cfg, err := Parse("docs/routing.md example", []byte(y), env(map[string]string{"BACKEND_API_KEY": "k"}))
		if err != nil {
			t.Errorf("example %d: %v", i, err)
			continue
		}
		if len(cfg.Router.Routes) == 0 {
			t.Errorf("example %d routes nothing", i)
		}
	}
}

// TestDocsConfigExamplesParse: every whole config the README and docs/
// show (a yaml block that opens with model_list:) loads.
func TestDocsConfigExamplesParse(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, page := range append([]string{"../../README.md"}, pages...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, blk := range strings.Split(string(b), "```yaml\n")[1:] {
			y, _, _ := strings.Cut(blk, "```")
			if !strings.HasPrefix(y, "model_list:") {
				continue // a part of a config, shown beside its explanation
			}
			found++
			if _, err := Parse(page, []byte(y), env(map[string]string{"BACKEND_API_KEY": "k", "PROXY_API_KEY": "p",
				"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "LITELLM_MASTER_KEY": "m"})); err != nil {
				t.Errorf("%s, yaml block %d: %v", page, i, err)
			}
		}
	}
	if found < 5 {
		t.Errorf("only %d whole configs found in the docs: is the pattern right?", found)
	}
}
