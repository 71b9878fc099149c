package textcall

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A fixture is one recorded answer under testdata/<family>/, with a
// header that names its source, the tools offered and what Parse must
// recover, then a line "---" and the answer's content (the rest of the
// file less its last newline). Header lines:
//
//	source: repository path test   (where the model output was recorded)
//	tool: NAME [SCHEMA]            (one a tool offered; none: no tools)
//	families: all | off | a,b      (default all)
//	reasoning: auto | off | open_in_prompt (default auto)
//	call: NAME ARGUMENTS           (each call expected, in order)
//	family: NAME                   (the family the calls are in)
//	text: "JSON string"            (the text expected; default: the whole
//	                                content when no call is expected)
//	reasoning_text: "JSON string"  (the reasoning expected; default none)
type fixture struct {
	path      string
	opts      Options
	calls     []Call
	family    string
	text      *string
	reasoning string
	content   string
}

func loadFixtures(t testing.TB) []fixture {
	paths, err := filepath.Glob("testdata/*/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var out []fixture
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parseFixture(p, string(b))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, f)
	}
	return out
}

func parseFixture(path, s string) (fixture, error) {
	f := fixture{path: path, opts: Options{Families: All}}
	head, content, ok := strings.Cut(s, "\n---\n")
	if !ok {
		return f, fmt.Errorf("no --- line")
	}
	f.content = strings.TrimSuffix(content, "\n")
	source := false
	for _, line := range strings.Split(head, "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "source":
			source = v != ""
		case "tool":
			name, schema, _ := strings.Cut(v, " ")
			tool := Tool{Name: name}
			if schema != "" {
				if !json.Valid([]byte(schema)) {
					return f, fmt.Errorf("tool %s: schema not JSON", name)
				}
				tool.Parameters = []byte(schema)
			}
			f.opts.Tools = append(f.opts.Tools, tool)
		case "families":
			f.opts.Families = 0
			if v == "all" {
				f.opts.Families = All
			} else if v != "off" {
				for _, n := range strings.Split(v, ",") {
					fam, ok := FamilyByName(strings.TrimSpace(n))
					if !ok {
						return f, fmt.Errorf("family %q", n)
					}
					f.opts.Families |= 1 << fam
				}
			}
		case "reasoning":
			switch v {
			case "auto":
				f.opts.Reasoning = ReasoningAuto
			case "off":
				f.opts.Reasoning = ReasoningOff
			case "open_in_prompt":
				f.opts.Reasoning = ReasoningOpenInPrompt
			default:
				return f, fmt.Errorf("reasoning %q", v)
			}
		case "call":
			name, args, _ := strings.Cut(v, " ")
			if !json.Valid([]byte(args)) {
				return f, fmt.Errorf("call %s: arguments not JSON", name)
			}
			f.calls = append(f.calls, Call{Name: name, Arguments: args})
		case "family":
			f.family = v
		case "text":
			var txt string
			if err := json.Unmarshal([]byte(v), &txt); err != nil {
				return f, fmt.Errorf("text: %v", err)
			}
			f.text = &txt
		case "reasoning_text":
			if err := json.Unmarshal([]byte(v), &f.reasoning); err != nil {
				return f, fmt.Errorf("reasoning_text: %v", err)
			}
		case "", "note":
		default:
			return f, fmt.Errorf("header %q", k)
		}
	}
	if !source {
		return f, fmt.Errorf("no source")
	}
	if f.text == nil && len(f.calls) == 0 {
		f.text = &f.content
	}
	return f, nil
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// merged is evs with adjacent text (and reasoning) events joined: what
// any split of an answer must give alike.
func merged(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if n := len(out); n > 0 && e.Kind != EventCall && out[n-1].Kind == e.Kind {
			out[n-1].Text += e.Text
			continue
		}
		if e.Kind != EventCall && e.Text == "" {
			continue
		}
		out = append(out, e)
	}
	return out
}

// feed runs content through a Scanner in the pieces cut at the offsets.
func feed(o *Options, content string, cuts []int) []Event {
	sc := NewScanner(o)
	var evs []Event
	prev := 0
	for _, c := range cuts {
		evs = sc.Feed(evs, content[prev:c])
		prev = c
	}
	evs = sc.Feed(evs, content[prev:])
	return sc.Close(evs)
}

func whole(o *Options, content string) []Event { return feed(o, content, nil) }

func TestGolden(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(f.path, "testdata/"), ".txt"), func(t *testing.T) {
			r := Parse(f.content, &f.opts)
			if len(r.Calls) != len(f.calls) {
				t.Fatalf("calls %+v, want %+v", r.Calls, f.calls)
			}
			for i, c := range r.Calls {
				if c.Name != f.calls[i].Name || !sameJSON(c.Arguments, f.calls[i].Arguments) {
					t.Errorf("call %d = %s %s, want %s %s", i, c.Name, c.Arguments, f.calls[i].Name, f.calls[i].Arguments)
				}
				if !json.Valid([]byte(c.Arguments)) || !strings.HasPrefix(c.Arguments, "{") {
					t.Errorf("call %d arguments %q: not a JSON object", i, c.Arguments)
				}
				if f.family != "" && c.Family.String() != f.family {
					t.Errorf("call %d family %s, want %s", i, c.Family, f.family)
				}
			}
			if f.text != nil && r.Text != *f.text {
				t.Errorf("text %q, want %q", r.Text, *f.text)
			}
			if r.Reasoning != f.reasoning {
				t.Errorf("reasoning %q, want %q", r.Reasoning, f.reasoning)
			}
			want := merged(whole(&f.opts, f.content))
			cuts := make([]int, 0, len(f.content))
			for i := 1; i < len(f.content); i++ {
				cuts = append(cuts, i)
			}
			if got := merged(feed(&f.opts, f.content, cuts)); !reflect.DeepEqual(got, want) {
				t.Errorf("byte by byte:\n%+v\nwhole:\n%+v", got, want)
			}
			rnd := rand.New(rand.NewPCG(1, uint64(len(f.content))))
			for range 50 {
				cuts = cuts[:0]
				for i := 1; i < len(f.content); i++ {
					if rnd.IntN(8) == 0 {
						cuts = append(cuts, i)
					}
				}
				if got := merged(feed(&f.opts, f.content, cuts)); !reflect.DeepEqual(got, want) {
					t.Fatalf("cut at %v:\n%+v\nwhole:\n%+v", cuts, got, want)
				}
			}
		})
	}
}
