package kind_test

import (
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/kind"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// BenchmarkOf: the origin alone (what a config without content routes
// pays) and with the body's structure read, on Claude Code's main turn.
func BenchmarkOf(b *testing.B) {
	c, err := fixtures.KindCapture("claude-code-main.json")
	if err != nil {
		b.Fatal(err)
	}
	r := kind.Request{Header: c.Header(), Model: translate.RequestModel(c.Body), Body: c.Body}
	for _, bc := range []struct {
		name  string
		rules kind.Rules
	}{{"origin", kind.Rules{}}, {"content", rules}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.Body)))
			for b.Loop() {
				kind.Of(r, bc.rules)
			}
		})
	}
}
