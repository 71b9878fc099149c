package overflow

import (
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// TestMeaningReadsTheRecordedWordings: the exact patterns are test data
// for the reading by meaning. Each recorded wording that speaks of the
// context is an overflow without its pattern, with the same numbers
// where it names them by their role.
func TestMeaningReadsTheRecordedWordings(t *testing.T) {
	all, err := fixtures.OverflowErrors()
	if err != nil {
		t.Fatal(err)
	}
	// Wordings that do not speak of the context: the Messages format's
	// own, which its pattern reads.
	noContext := map[string]bool{"messages-api.txt": true}
	for _, f := range all {
		t.Run(f.Name, func(t *testing.T) {
			text := chat.ParseError(f.Body)
			got, ok := byMeaning(text)
			if noContext[f.Name] {
				if ok {
					t.Errorf("%q read by meaning: %+v", text, got)
				}
				return
			}
			if !ok {
				t.Fatalf("not read by meaning: %q", text)
			}
			want, _ := byWording(text)
			if want.Maximum > 0 && got.Maximum != want.Maximum {
				t.Errorf("maximum %d, want %d (%q)", got.Maximum, want.Maximum, text)
			}
			if want.Excess > 0 && got.Excess != want.Excess {
				t.Errorf("excess %d, want %d", got.Excess, want.Excess)
			}
		})
	}
}

func TestMeaningNewWordings(t *testing.T) {
	for _, c := range []struct {
		text                    string
		tokens, maximum, output int
	}{
		{"Input length of 9000 tokens exceeds the maximum context of 8192", 9000, 8192, 0},
		{"Prompt of 9000 tokens is longer than the context window (8192 tokens).", 9000, 8192, 0},
		{"context size exceeded: n_ctx = 4096, requested 5000 tokens", 5000, 4096, 0},
		{"Your prompt (7000 input tokens) and 2000 output tokens do not fit in the context length of 8192 tokens", 9000, 8192, 2000},
		{"The context window overflowed; reduce the length of the conversation", 0, 0, 0},
		{"request too long for the model's context limit", 0, 0, 0},
	} {
		o, ok := DetectText(c.text)
		if !ok {
			t.Errorf("not an overflow: %q", c.text)
			continue
		}
		if o.Tokens != c.tokens || o.Maximum != c.maximum || o.Output != c.output {
			t.Errorf("%q: %+v, want tokens %d maximum %d output %d", c.text, o, c.tokens, c.maximum, c.output)
		}
	}
}

// TestMeaningNeedsBothHalves: text about tokens, limits or the context
// alone is no overflow.
func TestMeaningNeedsBothHalves(t *testing.T) {
	for _, text := range []string{
		"max_tokens must be at most 8192",
		"too many tokens per minute: limit 30000, requested 40000 tokens",
		"invalid value for context_length: must be a positive integer",
		"context_management is not supported by this model",
		"the tool schema exceeds the grammar's repetition limit",
		"Jinja Exception: System message must be at the beginning",
	} {
		if o, ok := DetectText(text); ok {
			t.Errorf("%q taken for an overflow: %+v", text, o)
		}
	}
}

func TestPromptFits(t *testing.T) {
	for _, c := range []struct {
		file   string
		prompt int
		fits   bool
	}{
		{"vllm-2026.txt", 16296, true},
		{"vllm-max-tokens.txt", 2778, true},
		{"sglang-total.txt", 32000, true},
		{"vllm-input.txt", 0, false},
		{"llamacpp-b10061.txt", 0, false},
	} {
		f := readFixture(t, c.file)
		o, _ := Detect(f.Status, f.Body)
		if prompt, fits := o.PromptFits(); prompt != c.prompt || fits != c.fits {
			t.Errorf("%s: %d %v, want %d %v (%+v)", c.file, prompt, fits, c.prompt, c.fits, o)
		}
	}
}
