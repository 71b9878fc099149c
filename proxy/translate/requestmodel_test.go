package translate

import (
	"math/rand/v2"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// modelByDecoder is what RequestModel and the pass-through's model were
// before scannedString: jsonv2's decoding of the model member's value,
// "" when it is not a string or does not decode.
func modelByDecoder(v []byte) string {
	var s string
	if jsontext.Value(v).Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// requestModelCases are model values as they appear in a body: plain,
// escaped, unicode, surrogates, not strings.
var requestModelCases = []string{
	`"claude-opus-5-5"`, `""`, `"a"`, `"qwen/Qwen3-Coder-30B-A3B"`, `"ünïcödé 模型"`,
	`"with \"quotes\""`, `"back\\slash"`, `"\u0063laude"`, `"tab\there"`, `"\ud83d\ude00 emoji"`,
	`"\ud800 lone"`, `"slash\/"`, `null`, `5`, `true`, `{"a":1}`, `["m"]`,
}

// TestRequestModelAsDecoder: the model RequestModel and the pass-through
// (requestModel) read is jsonv2's decoding of the value, for plain,
// escaped and unicode strings and for values that are not strings.
func TestRequestModelAsDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := append([]string(nil), requestModelCases...)
	alphabet := []string{"a", "Z", "-", "/", ".", " ", "é", "模", `\"`, `\\`, `\n`, `\u00e9`, `\ud83d\ude00`, "\u2028"}
	for range 2000 {
		v := `"`
		for range r.IntN(12) {
			v += alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, v+`"`)
	}
	for _, v := range cases {
		checkRequestModel(t, v)
	}
}

func checkRequestModel(t *testing.T, v string) {
	t.Helper()
	want := modelByDecoder([]byte(v))
	body := []byte(`{"max_tokens":5,"model":` + v + `,"messages":[]}`)
	if got := RequestModel(body); got != want {
		t.Errorf("RequestModel with model %s = %q, jsonv2 decodes %q", v, got, want)
	}
	top, err := scanObject(body, false, nil)
	if err != nil {
		if jsontext.Value(body).IsValid() {
			t.Errorf("model %s: the scanner refused a valid body: %v", v, err)
		}
		return
	}
	got, _, err := requestModel(top)
	if got != want || (err == nil) != (want != "") {
		t.Errorf("requestModel with model %s = %q, %v; jsonv2 decodes %q", v, got, err, want)
	}
}

func FuzzRequestModel(f *testing.F) {
	for _, v := range requestModelCases {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !jsontext.Value(v).IsValid() {
			return // a body the scanner refuses: no model either way
		}
		checkRequestModel(t, v)
	})
}
