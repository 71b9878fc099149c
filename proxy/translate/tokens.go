package translate

import (
	"bytes"
	"math"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// Token estimates.
//
// Without the backend's tokenizer the proxy estimates. EstimateTokens
// follows the way byte-pair tokenizers of the cl100k/o200k family cut text:
// it splits the text into the pre-tokens their split pattern makes (a run
// of letters with the one space or punctuation character before it, runs of
// up to three digits, punctuation runs with an optional leading space and
// trailing newlines, whitespace runs) and prices each pre-token by its kind
// and length with the mean token count that kind and length has under
// cl100k_base, measured on a mixed corpus (English prose, Markdown, Go,
// Python, JavaScript, JSON schemas): short words cost one token, longer and
// rarer ones more; non-Latin letters cost about a token per one or two
// characters. It lands within about 10% of cl100k_base on English and code
// (TestEstimateTokensReference).
//
// Every path that needs the size of a prompt adds what the backend will
// see to one promptEstimate: count_tokens (TokenCount.Estimate) and the
// InputTokens of each translation (MessagesOnChatRequest, ResponsesOnChatRequest,
// ChatOnChatRequest, MessagesOnChatResponse), so that the same text is the same count
// wherever it comes from.

const (
	messageOverhead = 4    // role and separators of a chat message
	toolOverhead    = 8    // wrapping of one tool definition
	imageTokens     = 1500 // an image of unknown size (about 1 MP under most vision encoders)
)

// Mean cost in hundredths of a token of a letter run of n ASCII letters
// (index n, 1–15) led by a space, by nothing, or by one punctuation
// character; longer runs cost per letter.
var (
	wordAfterSpace = [16]int{0, 100, 100, 101, 102, 103, 105, 108, 118, 129, 136, 156, 173, 190, 220, 264}
	wordAlone      = [16]int{0, 100, 100, 103, 104, 108, 118, 130, 160, 170, 190, 200, 240, 250, 260, 290}
	wordAfterPunct = [16]int{0, 101, 113, 116, 118, 125, 130, 150, 170, 195, 215, 225, 270, 285, 290, 300}
	longWordLetter = [3]int{19, 18, 20} // per letter past 15, same order
	// punctuation runs of n characters (1–7), without and with a leading
	// space; longer runs cost 40 a character.
	punctRun        = [8]int{0, 100, 100, 118, 146, 196, 300, 300}
	punctAfterSpace = [8]int{0, 100, 101, 115, 178, 233, 288, 300}
)

const (
	leadSpace = iota
	leadNone
	leadPunct
)

// Byte classes: EstimateTokens looks each byte up once in byteClass to
// know which run it starts or continues, instead of a chain of
// comparisons; only bytes of classHigh are decoded as UTF-8. The first
// four are the bytes a word can start at (alone, or led by the byte).
const (
	classLetter  = iota // A–Z, a–z
	classSpace          // ' '
	classTab            // '\t' (classSpace+1: blankRun counts tabs by it)
	classPunct          // the other printable ASCII characters, and DEL
	classDigit          // 0–9
	classNewline        // '\n', '\r'
	classControl        // the other ASCII controls
	classHigh           // 0x80–0xFF: a byte of a multi-byte character, or not UTF-8
)

var byteClass = func() (t [256]uint8) {
	for b := range t {
		switch {
		case b >= utf8.RuneSelf:
			t[b] = classHigh
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z':
			t[b] = classLetter
		case '0' <= b && b <= '9':
			t[b] = classDigit
		case b == ' ':
			t[b] = classSpace
		case b == '\t':
			t[b] = classTab
		case b == '\n', b == '\r':
			t[b] = classNewline
		case b > ' ':
			t[b] = classPunct
		default:
			t[b] = classControl
		}
	}
	return t
}()

// shortWordPrice[k][m] is the price of the pre-token that starts with a
// byte of class k (a letter, space, tab or punctuation character) and goes
// on with m ASCII letters (m < 16): a word of m+1 letters, or one of m
// letters led by a space or by punctuation; -1 where it is none (a space
// or punctuation character with no letter after it).
var shortWordPrice = func() (t [classPunct + 1][16]int) {
	for m := range 16 {
		t[classLetter][m] = wordCost(m+1, leadNone)
		t[classSpace][m] = wordCost(m, leadSpace)
		t[classTab][m] = wordCost(m, leadSpace)
		t[classPunct][m] = wordCost(m, leadPunct)
	}
	t[classSpace][0], t[classTab][0], t[classPunct][0] = -1, -1, -1
	return t
}()

// EstimateTokens estimates how many tokens s is under a cl100k-style BPE
// tokenizer. It reads s once, a pre-token at a time.
//
// Most pre-tokens are a short ASCII word, alone or led by a space or a
// punctuation character: shortWords prices runs of those from a mask of
// the bytes after s[i] that are no ASCII letters (gaps), which the loop
// draws from masks of two 64-byte blocks of s (letterMask). Each helper
// below scans one other kind of run, adds its price (in hundredths of a
// token) to c and returns where the run ends.
func EstimateTokens(s string) int {
	c := 0 // hundredths of a token
	// bit b of lo is whether s[blk+b] is an ASCII letter, of hi whether
	// s[blk+64+b] is; loASCII and hiASCII whether their bytes are ASCII
	blk := math.MinInt / 2
	var lo, hi uint64
	var loASCII, hiASCII bool
	// bit b of gaps is whether s[i+1+b] is not an ASCII letter, up to
	// where it was drawn from lo and hi; past that its bits are 0, so a run
	// of zeros that reaches there is 16 or longer (see shortWords)
	var gaps uint64
	for i := 0; i < len(s); {
		k := byteClass[s[i]]
		if k <= classPunct {
			if bits.TrailingZeros64(gaps|1<<63) >= 16 { // draw gaps anew
				p := i + 1
				if d := p - blk; d >= 64 {
					if d < 128 {
						blk, lo, loASCII = blk+64, hi, hiASCII
					} else {
						blk = p &^ 63
						lo, loASCII = letterMask(s, blk)
					}
					hi, hiASCII = letterMask(s, blk+64)
				}
				// the 64 bits from p (both shifts under 64:
				// hi<<(64-off) is 0 for off 0)
				off := uint(p-blk) & 63
				gaps = ^(lo>>off | hi<<1<<(63-off))
			}
			j := i
			i, c, gaps = shortWords(s, i, c, gaps, loASCII && hiASCII)
			if i > j {
				continue
			}
		}
		gaps = 0 // the helpers below move i on: gaps is drawn anew
		switch k {
		case classLetter:
			i, c = scanWord(s, i, leadNone, c)
		case classSpace, classTab:
			i, c = blankRun(s, i, c)
		case classPunct:
			// one punctuation character leads the word right after it
			if i+1 < len(s) && startsWord(s, i+1) {
				i, c = scanWord(s, i+1, leadPunct, c)
			} else {
				i, c = punctRunAt(s, i, false, c)
			}
		case classControl: // starts a punctuation run, never leads a word
			i, c = punctRunAt(s, i, false, c)
		case classDigit: // up to three digits a token
			j := runOf(s, i+1, classDigit)
			c += 100 * ((j - i + 2) / 3)
			i = j
		case classNewline:
			j := runOf(s, i+1, classNewline)
			c += 100 * ((j - i + newlinesPerToken - 1) / newlinesPerToken)
			i = j
		default: // classHigh: a letter starts a word; anything else is priced alone
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case unicode.IsLetter(r):
				i, c = scanWord(s, i, leadNone, c)
				continue
			case size == 4 && !unicode.IsSpace(r) && !unicode.IsDigit(r):
				c += 250 // emoji and rare symbols: several byte tokens
			default:
				c += 100
			}
			i += size
		}
	}
	return (c + 50) / 100
}

// shortWords prices the run of short words from s[i] on: pre-tokens of a
// letter, space, tab or punctuation character and the up to 15 ASCII
// letters after it (see shortWordPrice), given gaps, the mask of the
// bytes after s[i] that are not ASCII letters, and whether the bytes it
// was drawn from are all ASCII. It adds their prices to c and returns
// where the run ends and the mask from there. It stops before anything
// else, and where gaps has 16 zeros or more: a long word, or the end of
// what gaps was drawn from. The length of a word is the count of
// trailing zeros of gaps, and moving past it a shift: no branch per
// letter, no load that waits on the word before.
func shortWords(s string, i, c int, gaps uint64, ascii bool) (int, int, uint64) {
	for i < len(s) {
		k := byteClass[s[i]]
		if k > classPunct {
			break
		}
		m := bits.TrailingZeros64(gaps | 1<<63) // (a non-zero operand is one instruction)
		e := i + 1 + m
		// a word that ends on a byte that is not ASCII may go on with a
		// non-ASCII letter: scanWord's to price
		if m >= 16 || !ascii && e < len(s) && s[e] >= utf8.RuneSelf {
			break
		}
		p := shortWordPrice[k][m]
		if p < 0 {
			break
		}
		i, c, gaps = e, c+p, gaps>>(m+1)
	}
	return i, c, gaps
}

// letterMask is the mask of the ASCII letters of the 64 bytes of s from
// blk: bit b is set if s[blk+b] is one (bytes past the end of s are not);
// and whether those bytes are all ASCII (false may also mean that bytes
// before blk are not).
func letterMask(s string, blk int) (mask uint64, ascii bool) {
	switch {
	case blk+64 <= len(s):
		return letterMask64(s[blk : blk+64])
	case blk >= len(s):
		return 0, true
	case len(s) >= 64: // the last block: the one that ends with s, shifted
		mask, ascii = letterMask64(s[len(s)-64:])
		return mask >> (blk + 64 - len(s)), ascii
	}
	// s is shorter than a block: eight bytes at a time, the last ones
	// padded with zeros
	var high uint64
	for j := 0; j < len(s); j += 8 {
		var w uint64
		switch {
		case j+8 <= len(s):
			w = load8(s[j : j+8])
		case len(s) >= 8: // the last eight bytes, shifted down to s[j]
			w = load8(s[len(s)-8:]) >> (8 * (j + 8 - len(s)))
		default:
			for k := len(s) - 1; k >= j; k-- {
				w = w<<8 | uint64(s[k])
			}
		}
		mask |= gatherHighBits(letters8(w)) << j
		high |= w
	}
	return mask, high&highBits == 0
}

// letterMask64 is letterMask of a whole block b, written out, not a loop,
// so that the constants of letters8 are loaded once.
func letterMask64(b string) (mask uint64, ascii bool) {
	w0, w1, w2, w3 := load8(b[0:8]), load8(b[8:16]), load8(b[16:24]), load8(b[24:32])
	w4, w5, w6, w7 := load8(b[32:40]), load8(b[40:48]), load8(b[48:56]), load8(b[56:64])
	mask = gatherHighBits(letters8(w0)) | gatherHighBits(letters8(w1))<<8 |
		gatherHighBits(letters8(w2))<<16 | gatherHighBits(letters8(w3))<<24 |
		gatherHighBits(letters8(w4))<<32 | gatherHighBits(letters8(w5))<<40 |
		gatherHighBits(letters8(w6))<<48 | gatherHighBits(letters8(w7))<<56
	return mask, (w0|w1|w2|w3|w4|w5|w6|w7)&highBits == 0
}

// gatherHighBits packs the high bits of the eight bytes of w (no other
// bits set) into one byte, byte j's to bit j: the product puts each at bit
// 56+j and all the other partial products elsewhere, without carries.
func gatherHighBits(w uint64) uint64 {
	return (w >> 7) * 0x0102040810204080 >> 56
}

// Runs of one whitespace character: cl100k_base holds tokens of up to 128
// spaces, 16 tabs or 32 newlines, so a long run costs its length over
// that, not one token (24,000 spaces are 188 tokens).
const (
	spacesPerToken   = 128
	tabsPerToken     = 16
	newlinesPerToken = 32
	// a run of one repeated punctuation character ("-----", "====="): up
	// to 64 a token
	repeatsPerToken = 64
)

// blankRunCost prices a run of spaces and tabs (at least one token).
func blankRunCost(spaces, tabs int) int {
	return 100 * max(1, (spaces+spacesPerToken-1)/spacesPerToken+(tabs+tabsPerToken-1)/tabsPerToken)
}

// runOf returns the end of the run of bytes of class k at s[i:].
func runOf(s string, i int, k uint8) int {
	for i < len(s) && byteClass[s[i]] == k {
		i++
	}
	return i
}

// load8 is the eight bytes of b (len(b) == 8) as a little-endian word; the
// compiler makes it one load.
func load8(b string) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// letterRun returns the end of the run of ASCII letters at s[i:]. It
// looks at eight bytes at a time (see letters8), so that a word's length
// costs no branch per letter and no mispredicted one at its end.
func letterRun(s string, i int) int {
	for i+8 <= len(s) {
		if m := letters8(load8(s[i : i+8])); m != highBits {
			return i + bits.TrailingZeros64(^m&highBits)/8
		}
		i += 8
	}
	return runOf(s, i, classLetter)
}

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// letters8 marks the ASCII letters among the eight bytes of w: the high
// bit of each byte of the result is set where w's byte is one. Each byte
// is folded to lower case with its high bit cleared (at most 0x7f), so
// adding to it carries into its own high bit and never into the next
// byte: adding 0x80-'a' sets it from 'a' up, adding 0x7f-'z' from past
// 'z'. Bytes with their high bit set (not ASCII) are no letters.
func letters8(w uint64) uint64 {
	x := (w | 0x20*lowBits) &^ highBits
	fromA := x + (0x80-'a')*lowBits
	pastZ := x + (0x7f-'z')*lowBits
	return fromA &^ (pastZ | w) & highBits
}

// startsWord reports whether a letter (ASCII or not) starts s[i:].
func startsWord(s string, i int) bool {
	switch byteClass[s[i]] {
	case classLetter:
		return true
	case classHigh:
		r, _ := utf8.DecodeRuneInString(s[i:])
		return unicode.IsLetter(r)
	}
	return false
}

// blankRun prices the run of spaces and tabs at s[i:], adding to c, and
// returns its end. Before newlines it joins their run (and costs nothing
// of its own); before a word or a punctuation run its last character
// leads that (priced with it); else it is priced alone.
func blankRun(s string, i, c int) (int, int) {
	j, tabs := i, 0
	for j < len(s) {
		k := byteClass[s[j]]
		if k != classSpace && k != classTab {
			break
		}
		tabs += int(k - classSpace) // 1 for a tab
		j++
	}
	if j < len(s) {
		switch k := byteClass[s[j]]; {
		case k == classNewline:
			return j, c
		case k == classPunct || startsWord(s, j):
			if j-i > 1 {
				lastTab := int(byteClass[s[j-1]] - classSpace)
				c += blankRunCost(j-i-1-(tabs-lastTab), tabs-lastTab)
			}
			if k == classPunct {
				return punctRunAt(s, j, true, c)
			}
			return scanWord(s, j, leadSpace, c)
		}
	}
	return j, c + blankRunCost(j-i-tabs, tabs)
}

// punctRunAt prices the punctuation run at s[i:] (its first byte may be a
// control character; the newlines right after it join it), adding to c,
// and returns its end.
func punctRunAt(s string, i int, afterSpace bool, c int) (int, int) {
	j := i + 1
	same := true
	for j < len(s) && byteClass[s[j]] == classPunct {
		same = same && s[j] == s[i]
		j++
	}
	n := j - i
	switch {
	case n >= len(punctRun) && same:
		c += 100 * ((n + repeatsPerToken - 1) / repeatsPerToken)
	case n >= len(punctRun):
		c += 40 * n
	case afterSpace:
		c += punctAfterSpace[n]
	default:
		c += punctRun[n]
	}
	return runOf(s, j, classNewline), c
}

// scanWord scans the letter run at s[i:] and adds its price to c: the
// table price of its ASCII letters, plus about half a token per accented
// Latin or other non-Latin letter and a token and a third per CJK
// character. It returns the run's end and the new c.
func scanWord(s string, i, lead, c int) (int, int) {
	n := 0 // ASCII letters
	for {
		j := letterRun(s, i)
		n += j - i
		i = j
		if i == len(s) || byteClass[s[i]] != classHigh {
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		extra := letterExtra(r)
		if extra < 0 {
			break
		}
		c += extra
		i += size
	}
	return i, c + wordCost(n, lead)
}

// letterExtra is what the non-ASCII character r adds to the word it is
// in, or -1 if it ends the word (it is neither a letter nor a combining
// mark).
func letterExtra(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r):
		return 30
	case !unicode.IsLetter(r):
		return -1
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
		return 130
	default: // accented Latin (they split a word), Greek, Cyrillic and other alphabets
		return 50
	}
}

// wordPrices are the tables of word prices by lead.
var wordPrices = [3]*[16]int{leadSpace: &wordAfterSpace, leadNone: &wordAlone, leadPunct: &wordAfterPunct}

// wordCost prices n ASCII letters of a word led by lead (n may be 0: each
// table's price of 0 letters is 0).
func wordCost(n, lead int) int {
	t := wordPrices[lead]
	if n < len(t) {
		return t[n]
	}
	return t[15] + longWordLetter[lead]*(n-15)
}

// TokenCount is a Messages count_tokens request decoded once: its model,
// the local estimate of its input tokens and its text for a backend's
// /tokenize all come from the one decode. Its raw values alias the body it
// was decoded from, which must outlive it.
type TokenCount struct {
	req messages.Request
}

// DecodeTokenCount decodes a count_tokens request body (model, system,
// messages, tools); a body that is not one, or has no model, is a
// *RequestError.
func DecodeTokenCount(body []byte) (*TokenCount, error) {
	c := &TokenCount{}
	if err := decode(body, &c.req, nil); err != nil {
		return nil, err
	}
	if c.req.Model == "" {
		return nil, invalidf("model: required")
	}
	return c, nil
}

// Model is the model the request names.
func (tc *TokenCount) Model() string { return tc.req.Model }

// CountTokens estimates the input tokens of a Messages count_tokens request
// body: DecodeTokenCount, then Estimate.
func CountTokens(body []byte) (int, error) {
	tc, err := DecodeTokenCount(body)
	if err != nil {
		return 0, err
	}
	return tc.Estimate(), nil
}

// Estimate counts what the backend would see (the billing-header system
// block is left out) into a promptEstimate.
func (tc *TokenCount) Estimate() int {
	req := &tc.req
	var e promptEstimate
	if !req.System.IsZero() {
		e.message()
		walkSystem(&e, req.System)
	}
	for i := range req.Messages {
		e.message()
		walkContent(&e, req.Messages[i].Content)
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.InputSchema.Kind() != '{' {
			continue
		}
		e.tool(t.Name, t.Description, t.InputSchema)
	}
	return e.total()
}

// promptVisitor is told, in order, what a walk over a prompt's content
// meets: the estimate counts it, the tokenize text writes it out.
type promptVisitor interface {
	text(raw []byte) // a raw JSON string (absent, null or malformed: no text)
	toolCall(name string, input []byte)
	toolResult() // a tool_result block; its content follows
	image()
	nextBlock() // between two blocks of one content
}

// walkSystem walks a system prompt: its blocks but the billing header,
// then its text.
func walkSystem(v promptVisitor, s messages.Content) {
	for i := range s.Blocks {
		if isBillingBlock(i, &s.Blocks[i]) {
			continue
		}
		walkBlock(v, &s.Blocks[i])
	}
	v.text(s.Text)
}

// walkContent walks a message's content (or a tool result's, or a
// document's): its text, then its blocks.
func walkContent(v promptVisitor, c messages.Content) {
	v.text(c.Text)
	for i := range c.Blocks {
		if i > 0 {
			v.nextBlock()
		}
		walkBlock(v, &c.Blocks[i])
	}
}

func walkBlock(v promptVisitor, b *messages.Block) {
	switch b.Type {
	case "text":
		v.text(b.Text)
	case "tool_use":
		v.toolCall(b.Name, b.Input)
	case "tool_result":
		v.toolResult()
		if b.Content != nil {
			walkContent(v, *b.Content)
		}
	case "image":
		v.image()
	case "document":
		if src := b.Source; src != nil {
			switch src.Type {
			case "text":
				v.text(src.Data)
			case "content":
				if src.Content != nil {
					walkContent(v, *src.Content)
				}
			}
		}
	}
}

// unquoter gives the text of raw JSON strings in one reused buffer.
type unquoter struct {
	buf []byte
}

// text is the text of the raw JSON string v, valid until the next call;
// false for anything else (absent, null, another kind, malformed).
func (u *unquoter) text(v []byte) ([]byte, bool) {
	if jsontext.Value(v).Kind() != '"' {
		return nil, false
	}
	var err error
	u.buf, err = jsontext.AppendUnquote(u.buf[:0], v)
	return u.buf, err == nil
}

// promptEstimate is the one estimate of a prompt's tokens: EstimateTokens
// of each text, JSON value and name the backend sees, plus
// messageOverhead per message (and once for the reply's start),
// toolOverhead per tool and imageTokens per image. It is a promptVisitor,
// so a walk over a Messages request counts into it as the translations'
// builders do.
type promptEstimate struct {
	n    int
	u    unquoter
	memo *memo.Memo // the client's connection's (Target.Memo); nil: none
}

// message counts one message of the prompt (its role and separators).
func (e *promptEstimate) message() { e.n += messageOverhead }

// text counts the raw JSON string v (absent, null or another kind:
// nothing) as escaped counts its inside.
func (e *promptEstimate) text(v []byte) {
	if jsontext.Value(v).Kind() != '"' || len(v) < 2 {
		return
	}
	e.escaped(v[1 : len(v)-1])
}

// estimateChunk bounds the text unescaped unescapes at a time, so that the
// estimate needs no copy of a long text: each chunk is cut after its last
// space or newline (no word is cut) and counted alone.
const estimateChunk = 4096

// escaped counts in, the inside of a JSON string as it sits in a body
// (escaped, without its quotes), as unescaped counts it; a long one's
// count is remembered in the memo.
func (e *promptEstimate) escaped(in []byte) {
	if e.memo == nil || len(in) < memoMin {
		e.unescaped(in)
		return
	}
	e.n += memo.Get(e.memo, memoText, in, func() int { return e.apart(func() { e.unescaped(in) }) })
}

// unescaped counts in, the inside of a JSON string: as it is when it has
// no escape, else unescaped a chunk at a time.
func (e *promptEstimate) unescaped(in []byte) {
	if bytes.IndexByte(in, '\\') < 0 {
		e.n += EstimateTokens(bytesString(in))
		return
	}
	buf := e.u.buf[:0]
	if cap(buf) < estimateChunk+8 {
		buf = make([]byte, 0, estimateChunk+8)
	}
	for {
		buf, in = unescapeSome(buf, in, estimateChunk)
		if len(in) == 0 {
			e.n += EstimateTokens(bytesString(buf))
			break
		}
		k := bytes.LastIndexAny(buf, " \n") + 1
		if k == 0 {
			k = len(buf) // one long word: cut it (buf ends on a rune's start)
		}
		e.n += EstimateTokens(bytesString(buf[:k]))
		buf = buf[:copy(buf, buf[k:])]
	}
	e.u.buf = buf
}

// unescapeSome appends the text of in, the inside of a valid JSON string,
// to dst until dst holds limit bytes (an escape's rune may pass it by a
// few; a plain run is cut at a rune's start), and returns what of in is
// left.
func unescapeSome(dst, in []byte, limit int) ([]byte, []byte) {
	for len(in) > 0 && len(dst) < limit {
		i := bytes.IndexByte(in, '\\')
		if i < 0 {
			i = len(in)
		}
		if room := limit - len(dst); i > room {
			k := room
			for k > 0 && in[k]&0xC0 == 0x80 {
				k--
			}
			if k == 0 { // the rune is longer than the room: take it whole
				for k = room; k < i && in[k]&0xC0 == 0x80; k++ {
				}
			}
			return append(dst, in[:k]...), in[k:]
		}
		dst, in = append(dst, in[:i]...), in[i:]
		if len(in) < 2 {
			return append(dst, in...), nil
		}
		n := 2
		switch c := in[1]; c {
		case 'n':
			dst = append(dst, '\n')
		case 't':
			dst = append(dst, '\t')
		case 'r':
			dst = append(dst, '\r')
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'u':
			r, ok := hex4(in[2:])
			if !ok {
				return append(dst, in...), nil
			}
			n = 6
			if utf16.IsSurrogate(r) && len(in) >= 12 && in[6] == '\\' && in[7] == 'u' {
				if r2, ok := hex4(in[8:]); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r, n = d, 12
					}
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		in = in[n:]
	}
	return dst, in
}

// hex4 reads the four hex digits of a \u escape at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// json counts a JSON value as it is written (a schema, a tool's input).
func (e *promptEstimate) json(v []byte) {
	if e.memo == nil || len(v) < memoMin {
		e.n += EstimateTokens(bytesString(v))
		return
	}
	e.n += memo.Get(e.memo, memoJSON, v, func() int { return EstimateTokens(bytesString(v)) })
}

// tool counts a tool definition: its name, its description (a raw JSON
// string) and its schema.
func (e *promptEstimate) tool(name string, desc, schema []byte) {
	e.n += toolOverhead + EstimateTokens(name)
	e.text(desc)
	e.json(schema)
}

// The facts of the estimate a connection's memo remembers (internal/memo),
// and the least length of a text or JSON value whose estimate it
// remembers: below it, hashing costs about what estimating does.
const (
	memoText byte = 't' // the estimate of a JSON string's inside (promptEstimate.escaped)
	memoJSON byte = 'j' // a JSON value's estimate (promptEstimate.json)
	memoMin       = 256
)

// apart is what count adds to the estimate, counted apart from it (the
// estimate is left as it was), for a memo to remember.
func (e *promptEstimate) apart(count func()) int {
	before := e.n
	count()
	n := e.n - before
	e.n = before
	return n
}

func (e *promptEstimate) toolCall(name string, input []byte) {
	e.n += 4 + EstimateTokens(name)
	e.json(input)
}

func (e *promptEstimate) toolResult() { e.n += 4 }
func (e *promptEstimate) image()      { e.n += imageTokens }
func (e *promptEstimate) nextBlock()  {}

// total is the estimate: what was counted, and the reply's start.
func (e *promptEstimate) total() int { return e.n + messageOverhead }

// bytesString is b as a string without a copy, for reading only while b
// is not written.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// BackendTokenizeText renders the prompt of a count_tokens request body as
// plain text for a backend's /tokenize endpoint: DecodeTokenCount, then
// TokenizeText.
func BackendTokenizeText(body []byte) (string, error) {
	tc, err := DecodeTokenCount(body)
	if err != nil {
		return "", err
	}
	return tc.TokenizeText(), nil
}

// TokenizeText renders the prompt as plain text for a backend's /tokenize
// endpoint: TokenizeParts joined.
func (tc *TokenCount) TokenizeText() string {
	return strings.Join(tc.TokenizeParts(), "")
}

// TokenizeParts renders the prompt as plain text for a backend's /tokenize
// endpoint, in parts that a session's next turn repeats as they are: first
// the system prompt (without the billing-header block) and the tool
// definitions as JSON, then each message as "role: text" with tool calls
// and results written out. Each part ends in a blank line, so that the
// counts of the parts add up to the count of the whole. The backend's
// count of it, plus a few template tokens per message, is the prompt size.
func (tc *TokenCount) TokenizeParts() []string {
	req := &tc.req
	parts := make([]string, 0, len(req.Messages)+1)
	var r textRenderer
	if !req.System.IsZero() {
		r.sb.WriteString("system: ")
		walkSystem(&r, req.System)
		r.sb.WriteString("\n\n")
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.InputSchema.Kind() != '{' {
			continue
		}
		r.sb.WriteString("tool ")
		r.sb.WriteString(t.Name)
		r.sb.WriteString(": ")
		r.text(t.Description)
		r.sb.WriteByte('\n')
		r.sb.Write(t.InputSchema)
		r.sb.WriteString("\n\n")
	}
	parts = append(parts, r.sb.String())
	for i := range req.Messages {
		m := &req.Messages[i]
		r.sb.Reset()
		r.sb.WriteString(m.Role)
		r.sb.WriteString(": ")
		walkContent(&r, m.Content)
		r.sb.WriteString("\n\n")
		parts = append(parts, r.sb.String())
	}
	return parts
}

// textRenderer writes out what a walk meets as plain text.
type textRenderer struct {
	sb strings.Builder
	u  unquoter
}

func (r *textRenderer) text(v []byte) {
	if text, ok := r.u.text(v); ok {
		r.sb.Write(text)
	}
}

func (r *textRenderer) toolCall(name string, input []byte) {
	r.sb.WriteString("[tool call ")
	r.sb.WriteString(name)
	r.sb.WriteString("] ")
	r.sb.Write(input)
}

func (r *textRenderer) toolResult() { r.sb.WriteString("[tool result] ") }
func (r *textRenderer) image()      {}
func (r *textRenderer) nextBlock()  { r.sb.WriteByte('\n') }
