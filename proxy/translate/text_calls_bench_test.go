package translate

import (
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// BenchmarkChatTextCalls: the filter of a 64-chunk Chat stream of plain
// text (what the bench's stub answers), the cost tool_calls_in_text: auto
// adds to a stream whose request offered tools.
func BenchmarkChatTextCalls(b *testing.B) {
	words := strings.Fields(strings.Repeat("Hello from the stub backend, a plain answer without any call. ", 12))
	var deltas []string
	for i := 0; i < 64; i++ {
		deltas = append(deltas, words[i%len(words)]+" ")
	}
	stream := []byte(chatStreamOf(deltas))
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		f := NewChatTextCalls(textFuzzOptions, "call_x_")
		out, _ := f.Feed(nil, stream)
		f.Close(out)
	}
}

// BenchmarkChatTextCallsWithStream: the same stream through the filter and
// the Messages translator, against the translator alone (off).
func BenchmarkChatTextCallsWithStream(b *testing.B) {
	words := strings.Fields(strings.Repeat("Hello from the stub backend, a plain answer without any call. ", 12))
	var deltas []string
	for i := 0; i < 64; i++ {
		deltas = append(deltas, words[i%len(words)]+" ")
	}
	stream := []byte(chatStreamOf(deltas))
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "auto"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st := NewMessagesOnChatStream("alias", "msg_1", 10)
				in := stream
				var f *ChatTextCalls
				if on {
					f = NewChatTextCalls(textFuzzOptions, "call_x_")
					in, _ = f.Feed(nil, stream)
				}
				out, _ := st.Feed(nil, in)
				if on {
					out, _ = st.Feed(out, f.Close(nil))
				}
				st.Finish(out)
			}
		})
	}
}

// BenchmarkOfferedTools: what tool_calls_in_text: auto adds to the
// translation of the coding client's 54 KB request (its 12 tools' names
// and compact parameter types), against off.
func BenchmarkOfferedTools(b *testing.B) {
	c, err := fixtures.ClientCapture("01-text-turn.json")
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(c.Body)
	for _, set := range []textcall.Set{0, textcall.All} {
		name := "off"
		if set != 0 {
			name = "auto"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				br, err := MessagesOnChatRequest(body, func(string) (Target, error) {
					return Target{BackendModel: "m", TextCalls: set, SupportsSystemMessage: true}, nil
				})
				if err != nil {
					b.Fatal(err)
				}
				bufpool.Put(br.Body)
			}
		})
	}
}
