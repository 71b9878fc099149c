package translate

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

var canonicalSamples = []string{
	`"plain"`, `""`, `"a\nb\t\"q\" \\ \b\f\r"`, `"\u0000\u001f\u007f"`, `"\u001F"`, `"\u000a"`, `"\u0008"`,
	`"\/"`, `"\u00e9"`, `"é \u2028 <>&"`, `"\ud83d\ude00"`, `"\u0041"`,
	`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
	`{ "a" : 1 }`, `[1, 2]`, `{"a":[1.50E+2,-0,1e5,true,false,null,{},[]]}`,
	`{"a":1,"a":2}`, `{"a":{"b":1,"c":{"b":2}},"b":3}`, `{"a\u0062":1,"ab":2}`, `{"a\/":1}`,
	`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k1":0}`,
	`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18}`,
	`{"s":"x\\"}`, `{"s":"\\\""}`, `"\\\\"`,
	`{"a":[1,{"b":"\u001f","c":[]}]}`, `{"a":1 }`, `[1 ,2]`, `{"a":"\u000A"}`, `{"a":"\/"}`, `{"a":1,"b":{"a":2},"a":3}`,
	`{"a":[1,2}`, `{"a":tru}`, `{"a":01}`, `[[[[]]]`, `{"a":"\x"}`, `{"a":1,}`,
}

// checkCanonical: appendCanonical writes what jsonv2's formatting writes
// (and refuses what it refuses); for a string, canonicalInner is the
// inside of jsonv2's quoting of the string's text.
func checkCanonical(t *testing.T, v []byte) {
	t.Helper()
	checkCanonValue(t, v)
	if !jsontext.Value(v).IsValid(jsontext.AllowDuplicateNames(true)) {
		return
	}
	got, gotErr := appendCanonical([]byte("x"), v)
	want, wantErr := jsontext.AppendFormat([]byte("x"), v, jsontext.AllowInvalidUTF8(true))
	if (gotErr != nil) != (wantErr != nil) || gotErr == nil && !bytes.Equal(got, want) {
		t.Fatalf("%q: appendCanonical %q (%v), jsonv2 %q (%v)", v, got, gotErr, want, wantErr)
	}
	if v[0] != '"' || v[len(v)-1] != '"' { // strings as the decoders give them: no whitespace around
		return
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := jsontext.AppendQuote(nil, s)
	if in := canonicalInner(v); !bytes.Equal(in, q[1:len(q)-1]) {
		t.Fatalf("%q: canonicalInner %q, jsonv2 quotes %q", v, in, q)
	}
	if canonicalString(v) != bytes.Equal(v, q) {
		t.Fatalf("%q: canonicalString says %v, jsonv2 quotes %q", v, canonicalString(v), q)
	}
	if u := unquoted(v); !bytes.Equal(u, s) {
		t.Fatalf("%q: unquoted %q, want %q", v, u, s)
	}
}

// checkCanonValue: the scanner's one pass (canonValue) reads v as value
// does (same end, same error), and calls canonical only what
// appendCanonical copies as it is; a string scanned without setting odd
// is canonical.
func checkCanonValue(t *testing.T, v []byte) {
	t.Helper()
	ref := scanner{b: v}
	wantV, wantErr := ref.value()
	s := scanner{b: v}
	s.ws()
	gotV, canonical, gotErr := s.canonValue()
	if !bytes.Equal(gotV, wantV) || s.i != ref.i || s.depth != ref.depth || s.odd != ref.odd ||
		(gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: canonValue read %q to %d (depth %d, odd %v, %v); value %q to %d (depth %d, odd %v, %v)",
			v, gotV, s.i, s.depth, s.odd, gotErr, wantV, ref.i, ref.depth, ref.odd, wantErr)
	}
	if wantErr != nil {
		if canonical {
			t.Fatalf("%q: canonical but invalid", v)
		}
		return
	}
	if canonical {
		if out, err := appendCanonical(nil, wantV); err != nil || !bytes.Equal(out, wantV) {
			t.Fatalf("%q: canonValue says canonical, appendCanonical writes %q (%v)", v, out, err)
		}
	}
	if len(wantV) > 0 && wantV[0] == '"' && !ref.odd && !canonicalString(wantV) {
		t.Fatalf("%q: scanned without an odd escape, but not canonical", wantV)
	}
}

func TestCanonicalMatchesJSONv2(t *testing.T) {
	for _, s := range canonicalSamples {
		checkCanonical(t, []byte(s))
	}
	for _, name := range []string{"01-text-turn.json", "04-apply-patch-turn.json"} {
		checkCanonical(t, codexBody(t, name))
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) { checkCanonical(t, v) })
}
