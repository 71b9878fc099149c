package translate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
)

// toolsBody is fixture 01 with its tools repeated under new names (Bash_12,
// …) up to n.
func toolsBody(b *testing.B, n int) []byte {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(benchBody(b), &m); err != nil {
		b.Fatal(err)
	}
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		b.Fatal(err)
	}
	base := len(tools)
	for i := base; i < n; i++ {
		t := map[string]json.RawMessage{}
		for k, v := range tools[i%base] {
			t[k] = v
		}
		var name string
		json.Unmarshal(t["name"], &name)
		t["name"], _ = json.Marshal(name + "_" + strconv.Itoa(i))
		tools = append(tools, t)
	}
	m["tools"], _ = json.Marshal(tools)
	out, _ := json.Marshal(m)
	return bytes.Clone(out)
}

func benchTools(b *testing.B, n int) {
	res := resolverFor(Target{BackendModel: "qwen3-coder", MaxOutputTokens: 32768})
	runBench(b, toolsBody(b, n), func(body []byte) {
		br, err := MessagesOnChatRequest(body, res)
		if err != nil {
			b.Fatal(err)
		}
		bufpool.Put(br.Body)
	})
}

// The per-tool cost of the translation (issue 18: ≤ 2 µs per extra tool
// through the proxy): fixture 01 with 12 and with 150 tools of the
// client's own size.
func BenchmarkMessagesToChatTools12(b *testing.B)  { benchTools(b, 12) }
func BenchmarkMessagesToChatTools150(b *testing.B) { benchTools(b, 150) }
