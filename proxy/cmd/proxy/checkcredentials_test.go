package main

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestCheckShowsNoCredentials: `proxy check` on a backend whose api_base
// holds a user and password, served and unreachable: neither the text
// nor the JSON report shows them.
func TestCheckShowsNoCredentials(t *testing.T) {
	served := serveBackend(t, stub.New(stub.Options{Model: "qwen3-coder", APIKey: "sk-b"}))
	for _, base := range []string{
		strings.Replace(served, "http://", "http://check-user:check-s3cret-pw@", 1),
		"http://check-user:check-s3cret-pw@127.0.0.1:1/v1",
	} {
		_, text, rep := runCheck(t, "--config", checkConfig(t, base, "qwen3-coder", "sk-b"))
		for _, leak := range []string{"check-s3cret-pw", "check-user"} {
			if strings.Contains(text, leak) {
				t.Errorf("%s: %q in the text:\n%s", base, leak, text)
			}
			for _, b := range rep.Backends {
				if strings.Contains(b.APIBase, leak) {
					t.Errorf("%s: %q in the report's api_base %s", base, leak, b.APIBase)
				}
				for _, r := range b.Results {
					if strings.Contains(r.Detail+r.Fix, leak) {
						t.Errorf("%s: %q in %s: %s %s", base, leak, r.Check, r.Detail, r.Fix)
					}
				}
			}
		}
		if !strings.Contains(text, "127.0.0.1") {
			t.Errorf("%s: the backend's host is not shown:\n%s", base, text)
		}
	}
}
