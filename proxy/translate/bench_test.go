package translate

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
)

// Benchmarks of the request path on the captured 49 KB client request
// (fixture 01: 12 tools, a 7 KB system prompt, a 9 KB mid-list system
// turn). Each reports cpu-ns/op, the process CPU time per operation (GC
// included), beside the wall-clock ns/op, which a busy machine inflates.
// For scale, BenchmarkBaselineCopy is the least a proxy does with a body
// (copy it) and BenchmarkBaselineValidate what checking that it is JSON
// costs.

func benchBody(b *testing.B) []byte { return clientBody(b, "01-text-turn.json") }

func runBench(b *testing.B, body []byte, f func([]byte)) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		f(body)
	}
	if c := cpuTime() - start; c > 0 {
		b.ReportMetric(float64(c.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// benchRequest runs runBench over a request translation to target t. The
// translated body is dropped, not given back to the pool, so each
// operation pays for its output buffer (as these benchmarks always have).
func benchRequest(b *testing.B, body []byte, t Target, translate func([]byte, Resolver) (BackendRequest, error)) {
	res := resolverFor(t)
	runBench(b, body, func(body []byte) {
		if _, err := translate(body, res); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkMessagesToChat(b *testing.B) {
	benchRequest(b, benchBody(b), Target{BackendModel: "qwen3-coder", MaxOutputTokens: 32768}, MessagesOnChatRequest)
}

func BenchmarkMessagesToChatSystemRole(b *testing.B) {
	benchRequest(b, benchBody(b), Target{BackendModel: "gpt-oss-20b", SupportsSystemMessage: true, SupportsReasoningEffort: true}, MessagesOnChatRequest)
}

// chatBenchBody is fixture 01 as a Chat request with its system messages.
func chatBenchBody(b *testing.B) []byte {
	br, err := MessagesOnChatRequest(benchBody(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	return br.Body
}

// BenchmarkChatToChat: a backend with a system role; only model changes.
func BenchmarkChatToChat(b *testing.B) {
	benchRequest(b, chatBenchBody(b), Target{BackendModel: "qwen3-coder", SupportsSystemMessage: true, MaxOutputTokens: 32768}, ChatOnChatRequest)
}

// BenchmarkChatToChatFoldSystem: a backend without a system role; the two
// system messages fold into the first user turn.
func BenchmarkChatToChatFoldSystem(b *testing.B) {
	benchRequest(b, chatBenchBody(b), Target{BackendModel: "qwen3-coder", MaxOutputTokens: 32768}, ChatOnChatRequest)
}

func BenchmarkChatToMessages(b *testing.B) {
	body := []byte(chatResp(`{"role":"assistant","content":"Let me look at the file first.","reasoning_content":"The user wants the listing.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Bash","arguments":"{\"command\": \"ls -la\", \"description\": \"List files\"}"}}]}`, `"tool_calls"`, ""))
	runBench(b, body, func(body []byte) {
		if _, err := MessagesOnChatResponse(body, "claude-x"); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkCountTokens(b *testing.B) {
	runBench(b, benchBody(b), func(body []byte) {
		if _, err := CountTokens(body); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkBaselineCopy(b *testing.B) {
	runBench(b, benchBody(b), func(body []byte) { _ = append([]byte(nil), body...) })
}

func BenchmarkBaselineValidate(b *testing.B) {
	runBench(b, benchBody(b), func(body []byte) {
		if !jsontext.Value(body).IsValid(decodeOpts) {
			b.Fatal("invalid")
		}
	})
}

// BenchmarkMessagesToMessages: the vendora/ pass-through of fixture 01
// (model rewritten, billing block and default drop_params removed).
func BenchmarkMessagesToMessages(b *testing.B) {
	res := resolverFor(Target{BackendModel: "qwen3-coder", DropParams: "context_management,betas"})
	runBench(b, benchBody(b), func(body []byte) {
		br, err := MessagesOnMessagesRequest(body, res)
		if err != nil {
			b.Fatal(err)
		}
		bufpool.Put(br.Body)
	})
}
