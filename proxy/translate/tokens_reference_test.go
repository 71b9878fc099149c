package translate

import (
	"unicode"
	"unicode/utf8"
)

// The byte-by-byte EstimateTokens as it was before the table-driven one
// (tokens.go), kept verbatim but for its names as the oracle that pins the
// fast one to the same integer for every input: FuzzEstimateTokensAgrees
// and TestEstimateTokensAgreesOnFixtures compare the two. It shares the
// price tables and constants with tokens.go, so a change of prices moves
// both. Do not optimize it.

// referenceEstimateTokens estimates how many tokens s is under a cl100k-style BPE
// tokenizer.
func referenceEstimateTokens(s string) int {
	c := 0 // hundredths of a token
	i := 0
	lead := leadNone
	for i < len(s) {
		ch := s[i]
		switch {
		case referenceIsASCIILetter(ch) || ch >= utf8.RuneSelf && referenceStartsLetter(s[i:]):
			j, cost := referenceScanWord(s, i, lead)
			c += cost
			i = j
		case '0' <= ch && ch <= '9':
			j := i + 1
			for j < len(s) && '0' <= s[j] && s[j] <= '9' {
				j++
			}
			c += 100 * ((j - i + 2) / 3)
			i = j
		case ch == ' ' || ch == '\t':
			j := i + 1
			tabs := 0
			if ch == '\t' {
				tabs = 1
			}
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				if s[j] == '\t' {
					tabs++
				}
				j++
			}
			switch {
			case j < len(s) && (s[j] == '\n' || s[j] == '\r'):
				// joins the newline run that follows
			case j < len(s) && (referenceIsPunct(s[j]) || referenceIsASCIILetter(s[j]) || s[j] >= utf8.RuneSelf && referenceStartsLetter(s[j:])):
				// the last space leads the next word or punctuation run
				if j-i > 1 {
					lastTab := 0
					if s[j-1] == '\t' {
						lastTab = 1
					}
					c += referenceBlankRunCost(j-i-1-(tabs-lastTab), tabs-lastTab)
				}
				if referenceIsPunct(s[j]) {
					j = referencePunctRunAt(s, j, true, &c)
				} else {
					j, c = referenceScanWordAdd(s, j, leadSpace, c)
				}
			default:
				c += referenceBlankRunCost(j-i-tabs, tabs)
			}
			i = j
		case ch == '\n' || ch == '\r':
			j := i + 1
			for j < len(s) && (s[j] == '\n' || s[j] == '\r') {
				j++
			}
			c += 100 * ((j - i + newlinesPerToken - 1) / newlinesPerToken)
			i = j
		case ch < utf8.RuneSelf:
			if ch > ' ' && i+1 < len(s) && (referenceIsASCIILetter(s[i+1]) || s[i+1] >= utf8.RuneSelf && referenceStartsLetter(s[i+1:])) {
				i, c = referenceScanWordAdd(s, i+1, leadPunct, c)
				continue
			}
			i = referencePunctRunAt(s, i, false, &c)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case unicode.IsSpace(r), unicode.IsDigit(r):
				c += 100
			case size == 4: // emoji and rare symbols: several byte tokens
				c += 250
			default:
				c += 100
			}
			i += size
		}
		_ = lead
	}
	return (c + 50) / 100
}

// referenceBlankRunCost prices a run of spaces and tabs (at least one token).
func referenceBlankRunCost(spaces, tabs int) int {
	return 100 * max(1, (spaces+spacesPerToken-1)/spacesPerToken+(tabs+tabsPerToken-1)/tabsPerToken)
}

func referenceScanWordAdd(s string, i, lead, c int) (int, int) {
	j, cost := referenceScanWord(s, i, lead)
	return j, c + cost
}

// referencePunctRunAt prices the ASCII punctuation run at s[i:] (and the newlines
// right after it, which join it) and returns its end.
func referencePunctRunAt(s string, i int, afterSpace bool, c *int) int {
	j := i + 1
	same := true
	for j < len(s) && referenceIsPunct(s[j]) {
		same = same && s[j] == s[i]
		j++
	}
	n := j - i
	switch {
	case n >= len(punctRun) && same:
		*c += 100 * ((n + repeatsPerToken - 1) / repeatsPerToken)
	case n >= len(punctRun):
		*c += 40 * n
	case afterSpace:
		*c += punctAfterSpace[n]
	default:
		*c += punctRun[n]
	}
	for j < len(s) && (s[j] == '\n' || s[j] == '\r') {
		j++
	}
	return j
}

func referenceIsASCIILetter(c byte) bool { return (c|0x20)-'a' < 26 }

func referenceIsPunct(c byte) bool {
	return c > ' ' && c < utf8.RuneSelf && !referenceIsASCIILetter(c) && !('0' <= c && c <= '9')
}

func referenceStartsLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}

// referenceScanWord scans the letter run at s[i:] and returns its end and its cost
// in hundredths of a token: the table price of its ASCII letters, plus
// about half a token per accented Latin or other non-Latin letter and a
// token and a third per CJK character.
func referenceScanWord(s string, i, lead int) (end, cost int) {
	n := 0
	extra := 0
	for i < len(s) {
		c := s[i]
		if referenceIsASCIILetter(c) {
			n++
			i++
			continue
		}
		if c < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.Is(unicode.Mn, r):
			extra += 30
		case !unicode.IsLetter(r):
			return i, referenceWordCost(n, lead) + extra
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			extra += 130
		case r < 0x250: // accented Latin letters split a word
			extra += 50
		default: // Greek, Cyrillic and other alphabets
			extra += 50
		}
		i += size
	}
	return i, referenceWordCost(n, lead) + extra
}

func referenceWordCost(n, lead int) int {
	if n == 0 {
		return 0
	}
	var table *[16]int
	switch lead {
	case leadSpace:
		table = &wordAfterSpace
	case leadPunct:
		table = &wordAfterPunct
	default:
		table = &wordAlone
	}
	if n < len(table) {
		return table[n]
	}
	return table[15] + longWordLetter[lead]*(n-15)
}
