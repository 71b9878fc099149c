package sse

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

type ev struct {
	Type, Data string
}

// decodeSplit feeds in at the given cut points, collecting events as Next
// hands them out, then ends the input.
func decodeSplit(t testing.TB, d *Decoder, in []byte, cuts []int) []ev {
	var out []ev
	prev := 0
	for _, c := range append(cuts, len(in)) {
		if err := d.Feed(in[prev:c]); err != nil {
			t.Fatalf("Feed: %v", err)
		}
		prev = c
		for e, ok := d.Next(); ok; e, ok = d.Next() {
			out = append(out, ev{e.Type, string(e.Data)})
		}
	}
	for e, ok := d.End(); ok; e, ok = d.End() {
		out = append(out, ev{e.Type, string(e.Data)})
	}
	return out
}

// reference decodes a whole input at once, the plain way the WHATWG rules
// read, with End's treatment of an unterminated event. The tests compare
// the incremental Decoder against it.
func reference(in []byte) []ev {
	in = bytes.TrimPrefix(in, bom)
	var out []ev
	var name, data string
	has := false
	dispatch := func() {
		if has {
			out = append(out, ev{name, data})
		}
		name, data, has = "", "", false
	}
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		line := in
		if i < 0 {
			in = nil
		} else {
			line = in[:i]
			if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
			in = in[i+1:]
		}
		s := string(line)
		switch {
		case s == "":
			dispatch()
		case s[0] == ':':
		default:
			f, v, _ := strings.Cut(s, ":")
			v = strings.TrimPrefix(v, " ")
			switch f {
			case "data":
				if has {
					data += "\n"
				}
				data += v
				has = true
			case "event":
				name = v
			}
		}
	}
	dispatch()
	return out
}

var cases = []struct {
	name string
	in   string
	want []ev
}{
	{"lf", "data: a\n\ndata: b\n\n", []ev{{"", "a"}, {"", "b"}}},
	{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []ev{{"", "a"}, {"", "b"}}},
	{"cr", "data: a\r\rdata: b\r\r", []ev{{"", "a"}, {"", "b"}}},
	{"mixed endings", "data: a\r\n\rdata: b\n\r\n", []ev{{"", "a"}, {"", "b"}}},
	{"multi-line data", "data: {\"a\":\ndata:  1}\n\n", []ev{{"", "{\"a\":\n 1}"}}},
	{"comments", ": keep-alive\n:\ndata: x\n: in between\n\n", []ev{{"", "x"}}},
	{"event name", "event: ping\ndata: {}\n\nevent: a\nevent: b\ndata: 2\n\n", []ev{{"ping", "{}"}, {"b", "2"}}},
	{"name resets", "event: a\ndata: 1\n\ndata: 2\n\n", []ev{{"a", "1"}, {"", "2"}}},
	{"no space after colon", "data:x\n\n", []ev{{"", "x"}}},
	{"only one space removed", "data:  x \n\n", []ev{{"", " x "}}},
	{"empty data is an event", "data\n\ndata:\n\n", []ev{{"", ""}, {"", ""}}},
	{"no data no event", "event: x\n\nid: 3\nretry: 10\n\ndata: y\n\n", []ev{{"", "y"}}},
	{"unknown fields", "foo: bar\ndata: y\nid: 1\n\n", []ev{{"", "y"}}},
	{"colon in value", "data: a:b: c\n\n", []ev{{"", "a:b: c"}}},
	{"bom", "\xEF\xBB\xBFdata: a\n\n", []ev{{"", "a"}}},
	{"bom only at start", "data: a\n\n\xEF\xBB\xBFdata: b\n\n", []ev{{"", "a"}}},
	{"utf-8", "data: é世😀\n\n", []ev{{"", "é世😀"}}},
	{"blank lines between", "\n\n\ndata: a\n\n\n\n", []ev{{"", "a"}}},
	{"unterminated event at end", "data: a\n\ndata: b\n", []ev{{"", "a"}, {"", "b"}}},
	{"unterminated line at end", "data: a\n\ndata: [DONE]", []ev{{"", "a"}, {"", "[DONE]"}}},
	{"partial bom at end", "\xEF\xBB", nil},
	{"empty", "", nil},
}

func TestDecoderCases(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			if got := reference(in); !slices.Equal(got, tc.want) {
				t.Fatalf("reference = %q, want %q", got, tc.want)
			}
			if got := decodeSplit(t, &Decoder{}, in, nil); !slices.Equal(got, tc.want) {
				t.Fatalf("whole: got %q, want %q", got, tc.want)
			}
			var ones []int
			for i := 1; i < len(in); i++ {
				ones = append(ones, i)
			}
			if got := decodeSplit(t, &Decoder{}, in, ones); !slices.Equal(got, tc.want) {
				t.Fatalf("one byte at a time: got %q, want %q", got, tc.want)
			}
			for i := 0; i <= len(in); i++ {
				if got := decodeSplit(t, &Decoder{}, in, []int{i}); !slices.Equal(got, tc.want) {
					t.Fatalf("split at %d: got %q, want %q", i, got, tc.want)
				}
			}
		})
	}
}

func TestDecoderReusedAfterEnd(t *testing.T) {
	var d Decoder
	first := decodeSplit(t, &d, []byte("event: x\ndata: a"), nil)
	second := decodeSplit(t, &d, []byte("data: b\n\n"), nil)
	if want := []ev{{"x", "a"}}; !slices.Equal(first, want) {
		t.Fatalf("first = %q, want %q", first, want)
	}
	if want := []ev{{"", "b"}}; !slices.Equal(second, want) {
		t.Fatalf("second = %q, want %q (End must reset the decoder)", second, want)
	}
}

func TestDecoderDataValidUntilNext(t *testing.T) {
	var d Decoder
	if err := d.Feed([]byte("data: first\n\ndata: second\n\n")); err != nil {
		t.Fatal(err)
	}
	e1, _ := d.Next()
	got := string(e1.Data)
	if err := d.Feed(nil); err != nil {
		t.Fatal(err)
	}
	if got != "first" {
		t.Fatalf("first event = %q", got)
	}
	e2, ok := d.Next()
	if !ok || string(e2.Data) != "second" {
		t.Fatalf("second event = %q, %v", e2.Data, ok)
	}
}

func TestDecoderEventTooLarge(t *testing.T) {
	d := Decoder{MaxEventSize: 64}
	line := []byte("data: " + strings.Repeat("x", 40) + "\n")
	// Complete events never count against the limit, however many are fed.
	for range 10 {
		if err := d.Feed(append(append([]byte{}, line...), '\n')); err != nil {
			t.Fatalf("complete events: %v", err)
		}
		for _, ok := d.Next(); ok; _, ok = d.Next() {
		}
	}
	// One event of many data lines grows past it.
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		if err = d.Feed(line); err == nil {
			for _, ok := d.Next(); ok; _, ok = d.Next() {
			}
		}
	}
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	if err := d.Feed([]byte("\n")); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("the error must stick, got %v", err)
	}
	// A line without an end grows past it too.
	d = Decoder{MaxEventSize: 64}
	err = nil
	for i := 0; i < 10 && err == nil; i++ {
		err = d.Feed([]byte(strings.Repeat("y", 20)))
	}
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("endless line: err = %v, want ErrEventTooLarge", err)
	}
}

func TestCutLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		line string
		n    int
		ok   bool
	}{
		{"abc", "", 0, false},
		{"", "", 0, false},
		{"a\nb", "a", 2, true},
		{"a\r\nb", "a", 3, true},
		{"a\rb\n", "a", 2, true},
		{"a\r", "a", 2, true},
		{"\n", "", 1, true},
	} {
		line, n, ok := CutLine([]byte(tc.in))
		if string(line) != tc.line || n != tc.n || ok != tc.ok {
			t.Errorf("CutLine(%q) = %q, %d, %v; want %q, %d, %v", tc.in, line, n, ok, tc.line, tc.n, tc.ok)
		}
	}
}

func TestDecoderRandomSplits(t *testing.T) {
	var in []byte
	for _, tc := range cases {
		if !strings.Contains(tc.name, "bom") && !strings.Contains(tc.name, "at end") {
			in = append(in, tc.in...)
		}
	}
	want := reference(in)
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		cuts := randomCuts(r, len(in))
		if got := decodeSplit(t, &Decoder{}, in, cuts); !slices.Equal(got, want) {
			t.Fatalf("cuts %v: got %q, want %q", cuts, got, want)
		}
	}
}

func randomCuts(r *rand.Rand, n int) []int {
	if n < 2 {
		return nil
	}
	cuts := make([]int, r.IntN(n))
	for i := range cuts {
		cuts[i] = r.IntN(n + 1)
	}
	slices.Sort(cuts)
	return cuts
}

func FuzzSSE(f *testing.F) {
	for _, tc := range cases {
		f.Add([]byte(tc.in), uint16(len(tc.in)/2), uint16(1))
	}
	f.Add([]byte("data: {\"id\":1}\r\n\r\ndata: [DONE]\r\n\r\n"), uint16(18), uint16(3))
	f.Fuzz(func(t *testing.T, in []byte, cut, step uint16) {
		want := reference(in)
		// One cut point, then a stride: covers a split anywhere and a
		// steady trickle of small reads.
		c := int(cut) % (len(in) + 1)
		cuts := []int{c}
		s := int(step)%7 + 1
		for i := c + s; i < len(in); i += s {
			cuts = append(cuts, i)
		}
		got := decodeSplit(t, &Decoder{}, in, cuts)
		if !slices.Equal(got, want) {
			t.Fatalf("cuts %v:\n got %q\nwant %q", cuts, got, want)
		}
		for _, e := range got {
			if strings.ContainsAny(e.Type, "\r\n") {
				t.Fatalf("event type %q holds a line ending", e.Type)
			}
		}
	})
}

func BenchmarkDecoder(b *testing.B) {
	var in []byte
	for i := range 64 {
		in = fmt.Appendf(in, "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token %d\"}}]}\n\n", i)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var d Decoder
	for b.Loop() {
		for off := 0; off < len(in); off += 512 {
			if err := d.Feed(in[off:min(off+512, len(in))]); err != nil {
				b.Fatal(err)
			}
			for _, ok := d.Next(); ok; _, ok = d.Next() {
			}
		}
	}
}
