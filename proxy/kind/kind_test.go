package kind_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/kind"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

var rules = kind.Rules{BackgroundModels: []string{"claude-haiku-*", "gpt-*-mini"}, LongContextTokens: 60000, Content: true}

func set(ks ...kind.Kind) kind.Set {
	var s kind.Set
	for _, k := range ks {
		s |= kind.Set(1) << k
	}
	return s
}

func describe(s kind.Set) string {
	var out []string
	for _, k := range kind.All() {
		if s.Has(k) {
			out = append(out, k.String())
		}
	}
	return strings.Join(out, "+")
}

// TestRecordedRequestKinds: the kind of each request Claude Code 2.1.330
// and Codex 0.169.0 sent (fixtures/kinds), and of the older captures.
func TestRecordedRequestKinds(t *testing.T) {
	cases := map[string]kind.Set{
		"claude-code-main.json":                set(kind.Main, kind.Thinking),
		"claude-code-main-after-agent.json":    set(kind.Main, kind.Thinking),
		"claude-code-subagent.json":            set(kind.Subagent, kind.Thinking),
		"claude-code-title-haiku.json":         set(kind.Background),
		"claude-code-title-default-model.json": set(kind.Main),
		"codex-turn.json":                      set(kind.Main, kind.Thinking),
	}
	names := fixtures.KindRequests()
	if len(names) != len(cases) {
		t.Fatalf("fixtures/kinds holds %v; the table has %d cases", names, len(cases))
	}
	for _, name := range names {
		want, ok := cases[name]
		if !ok {
			t.Errorf("%s: no expected kind in the table", name)
			continue
		}
		c, err := fixtures.KindCapture(name)
		if err != nil {
			t.Fatal(err)
		}
		got := kind.Of(kind.Request{Header: c.Header(), Model: translate.RequestModel(c.Body), Body: c.Body}, rules)
		if got != want {
			t.Errorf("%s: kinds %s, want %s", name, describe(got), describe(want))
		}
		// Without the content rules only the origin is read.
		origin := kind.Of(kind.Request{Header: c.Header(), Model: translate.RequestModel(c.Body), Body: c.Body}, kind.Rules{BackgroundModels: rules.BackgroundModels})
		if origin != set(want.Origin()) {
			t.Errorf("%s: origin only %s, want %s", name, describe(origin), want.Origin())
		}
	}
}

func TestKindsOfConstructedRequests(t *testing.T) {
	long := `"` + strings.Repeat("word ", 60000) + `"`
	cases := []struct {
		name   string
		header http.Header
		body   string
		want   kind.Set
	}{
		{"warmer", http.Header{"User-Agent": {"dragoman-warmer"}}, `{"model":"m","messages":[]}`, set(kind.Warmer)},
		{"background glob", nil, `{"model":"gpt-5-mini","input":"hi"}`, set(kind.Background)},
		{"subagent billing only", nil, `{"model":"m","system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.330.db5; cc_is_subagent=true;"}],"messages":[]}`, set(kind.Subagent)},
		{"billing marker quoted in text is not one", nil, `{"model":"m","messages":[{"role":"user","content":"see \"x-anthropic-billing-header: cc_is_subagent=true\""}]}`, set(kind.Main)},
		{"codex spawned agent", http.Header{"X-Codex-Turn-Metadata": {`{"agent_name":"/root/explorer","thread_source":"subagent"}`}}, `{"model":"m","input":[]}`, set(kind.Subagent)},
		{"codex user thread", http.Header{"X-Codex-Turn-Metadata": {`{"agent_name":"/root","thread_source":"user"}`}}, `{"model":"m","input":[]}`, set(kind.Main)},
		{"messages image", nil, `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}`, set(kind.Main, kind.Image)},
		{"image in tool result", nil, `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}]}]}`, set(kind.Main, kind.Image)},
		{"responses image", nil, `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}`, set(kind.Main, kind.Image)},
		{"chat image", nil, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, set(kind.Main, kind.Image)},
		{"thinking disabled", nil, `{"model":"m","thinking":{"type":"disabled"},"messages":[]}`, set(kind.Main)},
		{"chat reasoning", nil, `{"model":"m","reasoning_effort":"high","messages":[]}`, set(kind.Main, kind.Thinking)},
		{"web search only tool", nil, `{"model":"m","tools":[{"type":"web_search_20250305","name":"web_search","max_uses":8}],"messages":[]}`, set(kind.Main, kind.WebSearch)},
		{"web search beside others", nil, `{"model":"m","tools":[{"type":"web_search"},{"type":"function","name":"f"}],"input":[]}`, set(kind.Main)},
		{"web search forced", nil, `{"model":"m","tools":[{"type":"web_search"},{"type":"function","name":"f"}],"tool_choice":{"type":"web_search"},"input":[]}`, set(kind.Main, kind.WebSearch)},
		{"web search forced by name", nil, `{"model":"m","tools":[{"type":"web_search_20250305","name":"ws"},{"name":"f","input_schema":{}}],"tool_choice":{"type":"tool","name":"ws"},"messages":[]}`, set(kind.Main, kind.WebSearch)},
		{"long context", nil, `{"model":"m","messages":[{"role":"user","content":` + long + `}]}`, set(kind.Main, kind.LongContext)},
		{"image payload is not long context", nil, `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":` + long + `}}]}]}`, set(kind.Main, kind.Image)},
		{"not JSON", nil, `{"model":`, set(kind.Main)},
	}
	for _, c := range cases {
		h := c.header
		if h == nil {
			h = http.Header{}
		}
		got := kind.Of(kind.Request{Header: h, Model: translate.RequestModel([]byte(c.body)), Body: []byte(c.body)}, rules)
		if got != c.want {
			t.Errorf("%s: kinds %s, want %s", c.name, describe(got), describe(c.want))
		}
	}
}

func TestPriorityOrder(t *testing.T) {
	if !(set(kind.Main).Priority() < set(kind.Subagent).Priority() &&
		set(kind.Subagent).Priority() < set(kind.Background).Priority() &&
		set(kind.Background).Priority() < set(kind.Warmer).Priority()) {
		t.Fatal("priorities are not main < subagent < background < warmer")
	}
	if set(kind.Main, kind.Image, kind.LongContext).Priority() != kind.PriorityMain {
		t.Fatal("a content kind changed a main turn's priority")
	}
	for _, k := range kind.All() {
		if p, ok := kind.Parse(k.String()); !ok || p != k {
			t.Errorf("Parse(%q) = %v, %v", k.String(), p, ok)
		}
	}
}

// TestOlderCapturesAreMainTurns: the coding-client captures of earlier
// sessions are main turns.
func TestOlderCapturesAreMainTurns(t *testing.T) {
	for _, name := range fixtures.ClientRequests() {
		c, err := fixtures.ClientCapture(name)
		if err != nil {
			t.Fatal(err)
		}
		got := kind.Of(kind.Request{Header: c.Header(), Model: translate.RequestModel(c.Body), Body: c.Body}, rules)
		if got.Origin() != kind.Main {
			t.Errorf("%s: origin %s, want main", name, got.Origin())
		}
	}
}

// TestBillingFoundPastTheConversation: the billing block after a long
// conversation (Claude Code sends system after messages) is found, and one
// whose name is not preceded by a quote is not one.
func TestBillingFoundPastTheConversation(t *testing.T) {
	turn := `{"role":"user","content":"a \"quoted\" word, x-anthropic-billing-header: cc_is_subagent=true said as text"},`
	body := `{"model":"m","messages":[` + strings.Repeat(turn, 2000) + `{"role":"user","content":"go"}],"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.330.db5; cc_is_subagent=true;"}]}`
	if got := kind.Of(kind.Request{Body: []byte(body)}, kind.Rules{}); !got.Has(kind.Subagent) {
		t.Errorf("the billing block after %d KB of messages: kinds %s, not subagent", len(body)>>10, describe(got))
	}
	noQuote := strings.Replace(body, `"text":"x-anthropic-billing-header: cc_version`, `"text":"(x-anthropic-billing-header: cc_version`, 1)
	if got := kind.Of(kind.Request{Body: []byte(noQuote)}, kind.Rules{}); got.Has(kind.Subagent) {
		t.Errorf("a billing name inside a text, not at its start, made it a subagent: %s", describe(got))
	}
}

func BenchmarkBillingPastTheConversation(b *testing.B) {
	turn := `{"role":"user","content":"a \"quoted\" word in a long conversation of a coding session, with some JSON {\"k\":\"v\"} in it"},`
	body := []byte(`{"model":"m","messages":[` + strings.Repeat(turn, 8000) + `{"role":"user","content":"go"}],"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.330.db5; cc_is_subagent=true;"}]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		kind.Of(kind.Request{Body: body}, kind.Rules{})
	}
}
