package overflow

import (
	"strconv"
	"strings"
)

// The list of exact wordings (patterns) will always trail the servers: a
// message the patterns miss is still an overflow when it speaks of the
// context (its length, window, size, limit; the maximum context; n_ctx)
// and of that context being exceeded (exceeds, longer than, too long, does
// not fit, overflow, reduce the length, larger or greater than). Its
// numbers are read from what it says of them: the number after the
// context phrase is the maximum (n_ctx's first, then "context length is 8192", "maximum
// context of 8192", "context size (8192 tokens)", "n_ctx: 8192", "context
// length only supports 8192 tokens"); "by N tokens" is an excess; of the
// other "N tokens", one said of the output or completion is the output
// asked for, one said of the input or prompt the prompt, and the largest
// the request's count.
var (
	contextPhrase  = re(`context[ _-]?(?:length|window|size|limit)|max(?:imum)? context|\bn_ctx\b`)
	exceededPhrase = re(`exceed|longer than|too long|too large|not fit|n't fit|overflow|reduce the length|larger than|greater than|over the (?:context|limit|maximum)`)
	nCtxNumber     = re(`\bn_ctx\s*[:=]\s*(\d+)`)
	maximumNumber  = re(`(?:context[ _-]?(?:length|window|size|limit)?|\bn_ctx)[^0-9.;,]{0,30}?(?:\bis|\bof|supports|:|=|\()\s*(?:only\s+|about\s+)?(\d+)`)
	excessNumber   = re(`\bby (\d+) tokens`)
	tokensNumber   = re(`(\d+)\s+((?:input|prompt|output|completion)\s+)?tokens`)
)

// byMeaning reads text as an overflow when it speaks of one.
func byMeaning(text string) (Overflow, bool) {
	if !contextPhrase.MatchString(text) || !exceededPhrase.MatchString(text) {
		return Overflow{}, false
	}
	var o Overflow
	maxAt := -1
	m := nCtxNumber.FindStringSubmatchIndex(text)
	if m == nil {
		m = maximumNumber.FindStringSubmatchIndex(text)
	}
	if m != nil {
		o.Maximum, _ = strconv.Atoi(text[m[2]:m[3]])
		maxAt = m[2]
	}
	excessAt := -1
	if m := excessNumber.FindStringSubmatchIndex(text); m != nil {
		o.Excess, _ = strconv.Atoi(text[m[2]:m[3]])
		excessAt = m[2]
	}
	input := 0
	for _, m := range tokensNumber.FindAllStringSubmatchIndex(text, -1) {
		if m[2] == maxAt || m[2] == excessAt {
			continue
		}
		n, _ := strconv.Atoi(text[m[2]:m[3]])
		label := ""
		if m[4] >= 0 {
			label = strings.ToLower(strings.TrimSpace(text[m[4]:m[5]]))
		}
		switch label {
		case "output", "completion":
			o.Output = n
		case "input", "prompt":
			input = max(input, n)
		}
		if label != "output" && label != "completion" {
			o.Tokens = max(o.Tokens, n)
		}
	}
	if o.Output > 0 && input > 0 && o.Tokens <= input {
		// The prompt and the output it asked for, counted together.
		o.Tokens = input + o.Output
	}
	return o, true
}
