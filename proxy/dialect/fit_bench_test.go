package dialect_test

import (
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/dialect"
	"github.com/dragoman-dev/dragoman/proxy/discover"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// BenchmarkFit: the coding client's 54 KB request, translated to Chat,
// fitted for llama.cpp: without a memo (every schema read), and with the
// client's memo (the schemas read on its first request only).
func BenchmarkFit(b *testing.B) {
	c, err := fixtures.ClientCapture("03-tool-result-turn.json")
	if err != nil {
		b.Fatal(err)
	}
	br, err := translate.MessagesOnChatRequest([]byte(c.Body), nil)
	if err != nil {
		b.Fatal(err)
	}
	body := append([]byte(nil), br.Body...)
	for _, v := range []struct {
		name string
		m    *memo.Memo
	}{{"no-memo", nil}, {"memo", memo.New()}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				dialect.Fit(v.m, discover.LlamaCpp, dialect.Chat, body)
			}
		})
	}
}
