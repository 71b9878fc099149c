package translate

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// BenchmarkEstimateTokens prices the strings of fixture 01's body
// (unquoted, about what its prompt estimate reads) with EstimateTokens and
// with the byte-by-byte reference it must agree with; its MB/s is the
// estimator's own speed, without the decode BenchmarkCountTokens includes
// (BenchmarkDecodeTokenCount is that decode alone).
func BenchmarkEstimateTokens(b *testing.B) {
	var texts []string
	n := 0
	d := jsontext.NewDecoder(bytes.NewReader(benchBody(b)))
	for {
		tok, err := d.ReadToken()
		if err != nil {
			break
		}
		if tok.Kind() == '"' {
			texts = append(texts, tok.String())
			n += len(tok.String())
		}
	}
	for _, c := range []struct {
		name string
		f    func(string) int
	}{{"fast", EstimateTokens}, {"reference", referenceEstimateTokens}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(n))
			start := cpuTime()
			for b.Loop() {
				for _, s := range texts {
					c.f(s)
				}
			}
			if c := cpuTime() - start; c > 0 {
				b.ReportMetric(float64(c.Nanoseconds())/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(c.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/byte")
			}
		})
	}
}

// BenchmarkDecodeTokenCount is the decode of BenchmarkCountTokens alone.
func BenchmarkDecodeTokenCount(b *testing.B) {
	runBench(b, benchBody(b), func(body []byte) {
		if _, err := DecodeTokenCount(body); err != nil {
			b.Fatal(err)
		}
	})
}
