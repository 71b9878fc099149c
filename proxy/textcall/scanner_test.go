package textcall

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// longestMarker is the most a Scanner may hold back of text that opens no
// call: a marker's length less one byte, and a cut UTF-8 character.
func longestMarker() int {
	n := 0
	for _, r := range recognizers {
		for _, m := range r.markers {
			n = max(n, len(m.text))
		}
	}
	for _, o := range autoOpeners {
		n = max(n, len(o.open), len(o.end))
	}
	return n + utf8.UTFMax
}

var weatherTools = []Tool{{Name: "get_weather"}}

// TestTextStreamsAsItArrives: prose full of marker-like bytes (<, [, {, `,
// f, the full-width bar) is given out as it is fed, never more than a
// marker's length behind, and whole at Close.
func TestTextStreamsAsItArrives(t *testing.T) {
	prose := "Use a <b> tag, [links](x), {braces}, `code`, ```go fences```, " +
		"functions, ｜bars｜ and <tool_ but no call.\n"
	o := &Options{Families: All, Tools: weatherTools}
	sc := NewScanner(o)
	var got strings.Builder
	fed := 0
	limit := longestMarker()
	for i := 1; i <= len(prose); i++ {
		for _, e := range sc.Feed(nil, prose[i-1:i]) {
			if e.Kind != EventText {
				t.Fatalf("event %+v", e)
			}
			got.WriteString(e.Text)
		}
		fed = i
		if held := fed - got.Len(); held > limit {
			t.Fatalf("after %d bytes, %d held back (limit %d)", fed, held, limit)
		}
	}
	for _, e := range sc.Close(nil) {
		got.WriteString(e.Text)
	}
	if got.String() != prose {
		t.Fatalf("text %q, want %q", got.String(), prose)
	}
}

// TestProseBeforeCallComesFirst: the sentence before a call reaches the
// client before the call is certain, that is before Close.
func TestProseBeforeCallComesFirst(t *testing.T) {
	o := &Options{Families: All, Tools: weatherTools}
	sc := NewScanner(o)
	evs := sc.Feed(nil, "Let me look that up.\n")
	evs = sc.Feed(evs, `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`)
	if len(evs) != 1 || evs[0].Kind != EventText || evs[0].Text != "Let me look that up.\n" {
		t.Fatalf("before Close: %+v", evs)
	}
	evs = sc.Close(nil)
	if len(evs) != 1 || evs[0].Kind != EventCall || evs[0].Call.Name != "get_weather" || evs[0].Call.Family != Hermes {
		t.Fatalf("at Close: %+v", evs)
	}
}

// TestExampleReleasedBeforeClose: once prose follows a complete block, the
// held text is given out without waiting for Close.
func TestExampleReleasedBeforeClose(t *testing.T) {
	o := &Options{Families: All, Tools: weatherTools}
	sc := NewScanner(o)
	call := `<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>`
	var text strings.Builder
	for _, d := range []string{"For example ", call, " is a call, and this sentence goes on for a while so the held text doubles."} {
		for _, e := range sc.Feed(nil, d) {
			text.WriteString(e.Text)
		}
	}
	if !strings.Contains(text.String(), call) {
		t.Fatalf("before Close only %q was given out", text.String())
	}
}

// TestMarkerSplitInsideRune: DeepSeek's marker cut inside its full-width
// bar, and a text character cut in two, at every byte.
func TestMarkerSplitInsideRune(t *testing.T) {
	content := "Voilà ½ — " + dsWide.callsBegin + dsWide.callBegin + "get_weather" + dsWide.sep +
		`{"city": "Zürich"}` + dsWide.callEnd + dsWide.callsEnd
	o := &Options{Families: All, Tools: weatherTools}
	want := []Event{{Kind: EventText, Text: "Voilà ½ — "}, {Kind: EventCall, Call: Call{Name: "get_weather", Arguments: `{"city":"Zürich"}`, Family: DeepSeek}}}
	for cut := 1; cut < len(content); cut++ {
		evs := feed(o, content, []int{cut})
		for _, e := range evs {
			if !utf8.ValidString(e.Text) {
				t.Fatalf("cut at %d: event %q splits a character", cut, e.Text)
			}
		}
		if got := merged(evs); !reflect.DeepEqual(got, want) {
			t.Fatalf("cut at %d: %+v", cut, got)
		}
	}
}

// TestOpenInPromptWithoutClose: with open_in_prompt and no </think>, the
// whole answer is reasoning (the template opened it; nothing closed it).
func TestOpenInPromptWithoutClose(t *testing.T) {
	r := Parse("still thinking", &Options{Reasoning: ReasoningOpenInPrompt})
	if r.Reasoning != "still thinking" || r.Text != "" {
		t.Fatalf("%+v", r)
	}
	r = Parse("<think>a</think>b", &Options{Reasoning: ReasoningOff})
	if r.Text != "<think>a</think>b" || r.Reasoning != "" {
		t.Fatalf("off: %+v", r)
	}
	r = Parse("Answer first. <think>not reasoning</think>", &Options{})
	if r.Text != "Answer first. <think>not reasoning</think>" {
		t.Fatalf("a <think> not at the start: %+v", r)
	}
}

// TestFamiliesSubset: a family left out of the Set is not recognized.
func TestFamiliesSubset(t *testing.T) {
	content := `<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>`
	if r := Parse(content, &Options{Families: 1 << Mistral, Tools: weatherTools}); len(r.Calls) != 0 || r.Text != content {
		t.Fatalf("mistral only: %+v", r)
	}
	if r := Parse(content, &Options{Families: 1 << Hermes, Tools: weatherTools}); len(r.Calls) != 1 {
		t.Fatalf("hermes only: %+v", r)
	}
}

func TestFamilyNames(t *testing.T) {
	for f := range numFamilies {
		if g, ok := FamilyByName(f.String()); !ok || g != f {
			t.Errorf("%v: FamilyByName(%q) = %v, %v", f, f.String(), g, ok)
		}
	}
	if _, ok := FamilyByName("nope"); ok {
		t.Error("nope is a family")
	}
	if len(FamilyNames()) != int(numFamilies) || Family(200).String() != "unknown" {
		t.Error("FamilyNames or String")
	}
}

// FuzzScannerSplits: any content cut at any byte boundaries gives the
// same events, adjacent text merged, as the content fed whole, and Parse
// agrees; what is not recovered comes back byte for byte.
func FuzzScannerSplits(f *testing.F) {
	for _, fx := range loadFixtures(f) {
		f.Add(fx.content, uint64(0x9e3779b97f4a7c15), byte(0))
		f.Add(fx.content, uint64(len(fx.content)*7919), byte(1))
	}
	for i, p := range pieces {
		f.Add("Well, "+p+pieces[(i*7)%len(pieces)], uint64(i)*0x2545f4914f6cdd1d, byte(i))
	}
	tools := []Tool{{Name: "get_weather"}, {Name: "search"}, {Name: "bash"}, {Name: "add"},
		{Name: "calculate", Parameters: []byte(`{"properties":{"x":{"type":"number"},"items":{"type":"array"}}}`)}}
	f.Fuzz(func(t *testing.T, content string, cuts uint64, mode byte) {
		o := &Options{Families: All, Reasoning: Reasoning(mode % 3), Tools: tools}
		if mode&4 != 0 {
			o.Tools = nil
		}
		want := merged(whole(o, content))
		var offs []int
		for i, c := 1, cuts; i < len(content); i++ {
			if c&1 != 0 {
				offs = append(offs, i)
			}
			c = c>>1 | c<<63
			if i%64 == 0 {
				c *= 0x9e3779b97f4a7c15
			}
		}
		split := feed(o, content, offs)
		if got := merged(split); !reflect.DeepEqual(got, want) {
			t.Fatalf("cut at %v:\n%+v\nwhole:\n%+v", offs, got, want)
		}
		if got := merged(feedPassing(o, content, offs)); !reflect.DeepEqual(got, want) {
			t.Fatalf("cut at %v, the deltas Passes passed not fed:\n%+v\nwhole:\n%+v", offs, got, want)
		}
		if utf8.ValidString(content) {
			for _, e := range split {
				if !utf8.ValidString(e.Text) {
					t.Fatalf("cut at %v: event %q splits a character", offs, e.Text)
				}
			}
		}
		r := Parse(content, o)
		var text, reasoning strings.Builder
		calls := 0
		for _, e := range want {
			switch e.Kind {
			case EventText:
				text.WriteString(e.Text)
			case EventReasoning:
				reasoning.WriteString(e.Text)
			case EventCall:
				calls++
				if !utf8.ValidString(e.Call.Arguments) && utf8.ValidString(content) || !strings.HasPrefix(e.Call.Arguments, "{") {
					t.Fatalf("arguments %q", e.Call.Arguments)
				}
			}
		}
		if r.Text != text.String() || r.Reasoning != reasoning.String() || len(r.Calls) != calls {
			t.Fatalf("Parse %+v disagrees with the events %+v", r, want)
		}
		if calls == 0 && o.Reasoning == ReasoningOff && r.Text != content {
			t.Fatalf("nothing recovered, yet text %q != content %q", r.Text, content)
		}
		if len(o.Tools) == 0 && calls != 0 {
			t.Fatalf("a call with no tools offered")
		}
	})
}

// feedPassing is feed, except that a delta Passes passes is given out as
// text without feeding it, as translate's Chat filter does.
func feedPassing(o *Options, content string, cuts []int) []Event {
	sc := NewScanner(o)
	var evs []Event
	prev := 0
	for _, c := range append(cuts, len(content)) {
		d := content[prev:c]
		if sc.Passes([]byte(d)) {
			if d != "" {
				evs = append(evs, Event{Kind: EventText, Text: d})
			}
		} else {
			evs = sc.Feed(evs, d)
		}
		prev = c
	}
	return sc.Close(evs)
}

func TestPasses(t *testing.T) {
	o := &Options{Families: All, Tools: []Tool{{Name: "bash"}}}
	sc := NewScanner(o)
	if sc.Passes([]byte("Hello")) {
		t.Error("Passes at the answer's start, where a whole-answer family may begin")
	}
	sc.Feed(nil, "Hello")
	for _, c := range []struct {
		text string
		want bool
	}{
		{" world, from the stub.", true},
		{"", true},
		{" a <", false},         // may begin a marker the next delta ends
		{" <tool_call>", false}, // a marker
		{" fun", false},         // f, u: may be functools
		{" of f and <b", true},  // first bytes no marker goes on with
		{" caf\xc3", false},     // a cut character
		{" café", true},
	} {
		if got := sc.Passes([]byte(c.text)); got != c.want {
			t.Errorf("Passes(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	sc.Feed(nil, " <")
	if sc.Passes([]byte(" plain")) {
		t.Error("Passes while the scanner holds a tail")
	}
}

// BenchmarkProse is the cost per answer of 54 KB of plain prose, fed in
// deltas of a token's size (4 bytes) and of a batch of tokens (64 bytes),
// with every family tried and with none (the same Scanner with Families
// 0; proxy_params.tool_calls_in_text: off skips the Scanner altogether).
func BenchmarkProse(b *testing.B) {
	unit := "The quick brown fox jumps over the lazy dog; <b>bold</b>, [a link](x), {a: 1}, `code` for a friend. "
	prose := strings.Repeat(unit, 54*1024/len(unit))
	for _, c := range []struct {
		name  string
		fams  Set
		delta int
	}{{"all/4", All, 4}, {"none/4", 0, 4}, {"all/64", All, 64}, {"none/64", 0, 64}} {
		b.Run(c.name, func(b *testing.B) {
			o := &Options{Families: c.fams, Tools: weatherTools}
			b.SetBytes(int64(len(prose)))
			b.ReportAllocs()
			evs := make([]Event, 0, 4)
			for b.Loop() {
				sc := NewScanner(o)
				for i := 0; i < len(prose); i += c.delta {
					evs = sc.Feed(evs[:0], prose[i:min(i+c.delta, len(prose))])
				}
				evs = sc.Close(evs[:0])
			}
		})
	}
}

// TestSharedOptions: one Options (as a translate.Target carries it) serves
// answers scanned at once; the schema types are read per Scanner.
func TestSharedOptions(t *testing.T) {
	o := &Options{Families: All, Tools: []Tool{{Name: "calc", Parameters: []byte(`{"properties":{"x":{"type":"number"}}}`)}}}
	content := "<function=calc>\n<parameter=x>\n2\n</parameter>\n</function>"
	done := make(chan Result)
	for range 8 {
		go func() { done <- Parse(content, o) }()
	}
	for range 8 {
		if r := <-done; len(r.Calls) != 1 || r.Calls[0].Arguments != `{"x":2}` {
			t.Errorf("%+v", r)
		}
	}
}

func TestSetOf(t *testing.T) {
	if s, bad := SetOf("hermes", "qwen3_coder"); bad != "" || s != 1<<Hermes|1<<Qwen3Coder {
		t.Errorf("SetOf = %v, %q", s, bad)
	}
	if _, bad := SetOf("hermes", "qwen"); bad != "qwen" {
		t.Errorf("SetOf(qwen) bad = %q", bad)
	}
}

// TestManyMarkers: an answer full of calls that never close, each parsed
// to the answer's end before it is given up, costs linear time
// (maxReleases), and is text.
func TestManyMarkers(t *testing.T) {
	content := strings.Repeat("<function=get_weather>\n<parameter=x>\n", 20000)
	o := &Options{Families: All, Tools: weatherTools}
	if r := Parse(content, o); r.Text != content || len(r.Calls) != 0 {
		t.Fatalf("calls %+v", r.Calls)
	}
	cuts := make([]int, 0, len(content)/7)
	for i := 7; i < len(content); i += 7 {
		cuts = append(cuts, i)
	}
	if got, want := merged(feed(o, content, cuts)), merged(whole(o, content)); !reflect.DeepEqual(got, want) {
		t.Fatal("split differs")
	}
}

// TestTagWithNewlineIsNoTag: a parameter tag whose name runs over a line
// (or holds a '<') is no tag, in the whole answer as in a stream that has
// not yet seen its '>': the text stays text either way.
func TestTagWithNewlineIsNoTag(t *testing.T) {
	o := &Options{Families: All, Tools: []Tool{{Name: "Read"}}}
	for _, content := range []string{
		"<function=Read>\n<parameter=pat\nme>\n/tmp/x\n</parameter>\n</function>",
		"<function=Read>\n<parameter=pa<th>\n/tmp/x\n</parameter>\n</function>",
	} {
		r := Parse(content, o)
		if len(r.Calls) != 0 || r.Text != content {
			t.Errorf("%q: %d calls, text %q; want the text as it is", content, len(r.Calls), r.Text)
		}
		s := NewScanner(o)
		var evs []Event
		for i := range len(content) {
			evs = s.Feed(evs, content[i:i+1])
		}
		evs = s.Close(evs)
		var text strings.Builder
		for _, ev := range evs {
			if ev.Kind != EventText {
				t.Fatalf("%q fed a byte at a time: a %v event", content, ev.Kind)
			}
			text.WriteString(ev.Text)
		}
		if text.String() != content {
			t.Errorf("%q fed a byte at a time gives %q", content, text.String())
		}
	}
	ok := Parse("<function=Read>\n<parameter=path>\n/tmp/x\n</parameter>\n</function>", o)
	if len(ok.Calls) != 1 || ok.Calls[0].Arguments != `{"path":"/tmp/x"}` {
		t.Fatalf("a well-formed call: %+v, want Read {\"path\":\"/tmp/x\"}", ok.Calls)
	}
}
