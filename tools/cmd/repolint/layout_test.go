package main

import (
	"slices"
	"strings"
	"testing"
)

// TestLayoutRules: each rule of docs/architecture.md refuses the import
// that breaks it, and lets the ones it allows through.
func TestLayoutRules(t *testing.T) {
	base := imports{
		"proxy/messages":        {"errors"},
		"proxy/chat":            {"bytes"},
		"proxy/responses":       nil,
		"proxy/sse":             nil,
		"proxy/upstream":        {"net/http"},
		"proxy/websearch":       {"net/http"},
		"proxy/textcall":        {"strings"},
		"proxy/internal/tick":   {"time"},
		"proxy/internal/pgtest": {"os/exec"},
		"proxy/translate":       {"proxy/chat", "proxy/messages", "proxy/internal/tick", "proxy/textcall", "crypto/rand"},
		"proxy/config":          nil,
		"proxy/kind":            {"net/http"},
		"proxy/balance":         {"proxy/config", "proxy/kind", "proxy/load"},
		"proxy/load":            {"net/http"},
		"proxy/server":          {"proxy/translate", "proxy/balance", "proxy/upstream"},
		"proxy/cmd/proxy":       {"proxy/server"},
		"tools/cmd/bench":       {"proxy/server"},
		"notifier/hook":         {"encoding/json"},
	}
	if f := checkLayout(base); len(f) != 0 {
		t.Fatalf("findings on a layout that keeps the rules:\n%s", strings.Join(f, "\n"))
	}
	for _, c := range []struct {
		pkg, imp, want string
	}{
		{"proxy/messages", "proxy/chat", "proxy/messages imports proxy/chat: a wire format (or upstream) imports no package"},
		{"proxy/responses", "proxy/messages", "proxy/responses imports proxy/messages: a wire format"},
		{"proxy/upstream", "proxy/balance", "proxy/upstream imports proxy/balance"},
		{"proxy/translate", "net/http", "proxy/translate imports net/http: it is pure"},
		{"proxy/translate", "time", "proxy/translate imports time: it is pure"},
		{"proxy/textcall", "os", "proxy/textcall imports os: it is pure"},
		{"proxy/translate", "proxy/upstream", "proxy/translate imports proxy/upstream: it may import only"},
		{"proxy/translate", "proxy/config", "proxy/translate imports proxy/config: it may import only"},
		{"proxy/balance", "proxy/translate", "proxy/balance imports proxy/translate: proxy/balance must not import"},
		{"proxy/balance", "proxy/chat", "proxy/balance imports proxy/chat"},
		{"proxy/kind", "proxy/server", "proxy/kind imports proxy/server, which is for proxy/cmd/..., tools/cmd/..."},
		{"proxy/config", "proxy/internal/pgtest", "proxy/config imports proxy/internal/pgtest, which is for tests only"},
		{"notifier/hook", "proxy/config", "notifier/hook imports proxy/config: notifier/... must not import"},
		{"proxy/config", "tools/cmd/bench", "proxy/config imports tools/cmd/bench: proxy/... must not import"},
	} {
		pkgs := imports{}
		for k, v := range base {
			pkgs[k] = slices.Clone(v)
		}
		pkgs[c.pkg] = append(pkgs[c.pkg], c.imp)
		f := checkLayout(pkgs)
		if len(f) == 0 || !strings.Contains(strings.Join(f, "\n"), c.want) {
			t.Errorf("%s importing %s: findings %q, want one with %q", c.pkg, c.imp, f, c.want)
		}
	}
}

// TestRepositoryLayout: the repository's own packages, read with go list,
// keep the rules (make lint checks the same), and the list holds the
// packages the rules name.
func TestRepositoryLayout(t *testing.T) {
	pkgs, err := workspaceImports("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"proxy/translate", "proxy/balance", "proxy/messages", "proxy/server", "notifier/hook", "tools/cmd/repolint"} {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("go list gave no package %s", p)
		}
	}
	if !slices.Contains(pkgs["proxy/server"], "proxy/translate") || !slices.Contains(pkgs["proxy/translate"], "github.com/go-json-experiment/json") {
		t.Errorf("imports not read as folders and paths: server %v, translate %v", pkgs["proxy/server"], pkgs["proxy/translate"])
	}
	if f := checkLayout(pkgs); len(f) != 0 {
		t.Errorf("the repository breaks its layout rules:\n%s", strings.Join(f, "\n"))
	}
}
