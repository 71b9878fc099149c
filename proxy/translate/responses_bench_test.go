package translate

import (
	"strconv"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
)

// BenchmarkResponsesToChat translates the recorded Codex request (43 KB),
// for a backend with a system role and one without.
func BenchmarkResponsesToChat(b *testing.B) {
	for _, system := range []bool{true, false} {
		name := "nosystem"
		if system {
			name = "system"
		}
		b.Run(name, func(b *testing.B) {
			resolve := resolverFor(Target{BackendModel: "m", SupportsSystemMessage: system})
			runBench(b, codexBody(b, "01-text-turn.json"), func(body []byte) {
				br, _, err := ResponsesOnChatRequest(body, resolve)
				if err != nil {
					b.Fatal(err)
				}
				bufpool.Put(br.Body)
			})
		})
	}
}

// stubStream is the stream the bench's stub backend sends for a text
// answer at --events 64: a role chunk, 64 content chunks, the finish, the
// usage and [DONE], one event per read as the stub flushes each.
func stubStream() [][]byte {
	chunk := func(delta, finish string) []byte {
		return []byte(`data: {"choices":[{"delta":` + delta + `,"finish_reason":` + finish + `,"index":0}],"created":0,"id":"chatcmpl-stub","model":"m","object":"chat.completion.chunk"}` + "\n\n")
	}
	reads := [][]byte{chunk(`{"content":"","role":"assistant"}`, "null")}
	for i := range 64 {
		reads = append(reads, chunk(`{"content":"word`+strconv.Itoa(i)+` "}`, "null"))
	}
	reads = append(reads, chunk(`{}`, `"stop"`),
		[]byte(`data: {"choices":[],"created":0,"id":"chatcmpl-stub","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":80,"prompt_tokens":10000,"total_tokens":10080}}`+"\n\n"),
		[]byte("data: [DONE]\n\n"))
	return reads
}

// BenchmarkResponsesStream translates the stub's stream of 64 text
// chunks, fed one read at a time as the relay feeds it.
func BenchmarkResponsesStream(b *testing.B) {
	reads := stubStream()
	b.ReportAllocs()
	var dst []byte
	start := cpuTime()
	for b.Loop() {
		s := NewResponsesOnChatStream("coder", "resp_0123456789abcdef", 42, nil, 10000)
		for _, p := range reads {
			dst, _ = s.Feed(dst[:0], p)
		}
		dst = s.Finish(dst[:0])
	}
	if c := cpuTime() - start; c > 0 {
		b.ReportMetric(float64(c.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkResponsesStreamReads translates the same stream as the relay
// does when the backend's chunks come faster than it reads: 4 KB reads,
// each into a pooled buffer of twice its size (the server's outRoom),
// the first events into one of 4 KB.
func BenchmarkResponsesStreamReads(b *testing.B) {
	var all []byte
	for _, p := range stubStream() {
		all = append(all, p...)
	}
	var reads [][]byte
	for rest := all; len(rest) > 0; {
		n := min(4<<10, len(rest))
		reads, rest = append(reads, rest[:n]), rest[n:]
	}
	b.ReportAllocs()
	for b.Loop() {
		s := NewResponsesOnChatStream("coder", "resp_0123456789abcdef", 42, nil, 10000)
		bufpool.Put(s.Start(bufpool.Get(4 << 10)))
		for _, p := range reads {
			out, _ := s.Feed(bufpool.Get(max(4<<10, 2*len(p))), p)
			bufpool.Put(out)
		}
		bufpool.Put(s.Finish(bufpool.Get(4 << 10)))
	}
}

// BenchmarkResponsesStreamReasoning translates a stream of long
// reasoning (45 KB) and a short text, as the relay does (a pooled buffer
// of twice each read): what end makes room for counts a closed lane's
// content once, not four times.
func BenchmarkResponsesStreamReasoning(b *testing.B) {
	chunk := func(delta, finish string) []byte {
		return []byte(`data: {"choices":[{"delta":` + delta + `,"finish_reason":` + finish + `,"index":0}],"created":0,"id":"chatcmpl-stub","model":"m","object":"chat.completion.chunk"}` + "\n\n")
	}
	reads := [][]byte{
		chunk(`{"reasoning_content":"`+strings.Repeat("thinking ", 5000)+`"}`, "null"),
		chunk(`{"content":"hello"}`, "null"),
		chunk(`{}`, `"stop"`),
		[]byte("data: [DONE]\n\n"),
	}
	b.ReportAllocs()
	for b.Loop() {
		s := NewResponsesOnChatStream("coder", "resp_0123456789abcdef", 42, nil, 10000)
		for _, p := range reads {
			out, _ := s.Feed(bufpool.Get(max(4<<10, 2*len(p))), p)
			bufpool.Put(out)
		}
	}
}
