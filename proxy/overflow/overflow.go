// Package overflow recognizes a backend's context-overflow error, in each
// local server's own wording, and renders it in the words clients act on.
//
// A coding client compacts its conversation when a Messages error says
// "prompt is too long: N tokens > M maximum"; a Chat client looks for the
// code context_length_exceeded. Local servers say it each their own way
// (vLLM, SGLang, llama.cpp's llama-server, Ollama, LM Studio; status 400,
// or 500 for LM Studio's Messages endpoint), and the client retries or
// stops instead. The recorded wordings are in package fixtures
// (fixtures/overflow).
//
// Use:
//
//	if o, ok := overflow.Detect(status, body); ok {
//		o = o.WithWindow(window) // the discovered window, 0 when unknown
//		w.WriteHeader(overflow.Status)
//		w.Write(o.MessagesError()) // or o.ChatError()
//	}
//
// Beside the known wordings (patterns), a message that speaks of the
// context being exceeded is an overflow by its meaning (meaning.go): the
// list of wordings will always trail the servers.
//
// Detect reads any error body: the Chat shape {"error":{"message"}}, the
// Messages shape {"type":"error","error":{"message"}}, {"error":"text"},
// {"message"}, {"detail"}, or plain text. DetectText reads a message alone
// (a mid-stream error event's). The package does no I/O.
package overflow

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/internal/apierror"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// Status is the HTTP status of a context overflow on every endpoint.
const Status = 400

// ChatCode is the Chat error code of a context overflow.
const ChatCode = "context_length_exceeded"

// Overflow is a recognized context overflow and the numbers the backend
// named. A zero number is unknown.
type Overflow struct {
	// Tokens is what the request needed of the window: its prompt, or its
	// prompt and the output it asked for when the backend counted them
	// together (vLLM's and SGLang's max_tokens checks).
	Tokens int
	// Maximum is the model's context window.
	Maximum int
	// Excess is how many tokens the request was over, when the backend
	// says only that (Ollama's hosted models).
	Excess int
	// Output is the output the request asked for, when the backend named
	// it: the prompt itself fits when Tokens-Output < Maximum, and a
	// smaller max_tokens would be accepted.
	Output int
}

// pattern is one server's wording. Its named groups are the numbers:
// tokens, max, excess, input (prompt), output (asked for).
type pattern struct {
	server string
	re     *regexp.Regexp
}

// patterns, most specific first. Matching is case-insensitive.
var patterns = []pattern{
	// llama.cpp: "request (9000 tokens) exceeds the available context size
	// (8192 tokens), try increasing it"; "the request exceeds the available
	// context size, try increasing it" (numbers in n_prompt_tokens, n_ctx);
	// older "input (9000 tokens) is larger than the max context size (8192
	// tokens). skipping".
	{"llama.cpp", re(`request \((?P<tokens>\d+) tokens\) exceeds (?:the available )?context size \((?P<max>\d+) tokens\)`)},
	{"llama.cpp", re(`input \((?P<tokens>\d+) tokens\) is larger than the max context size \((?P<max>\d+) tokens\)`)},
	{"llama.cpp", re(`exceeds the available context size|exceed_context_size_error`)},
	// vLLM: "'max_tokens' or 'max_completion_tokens' is too large: 32000.
	// This model's maximum context length is 8192 tokens and your request
	// has 2778 input tokens"; "This model's maximum context length is 8192
	// tokens. However, your request has 9120 input tokens."; before 0.6:
	// "… However, you requested 5000 tokens (4000 in the messages, 1000 in
	// the completion)". The same first sentence is the reference wording
	// ("… However, your messages resulted in 130000 tokens").
	// vLLM (2026): "This model's maximum context length is 19500 tokens.
	// However, you requested 4269 output tokens and your prompt contains
	// at least 16296 input tokens, for a total of at least 20565 tokens.
	// Please reduce the length of the input prompt or the number of
	// requested output tokens."
	{"vLLM", re(`maximum context length is (?P<max>\d+) tokens\. However, you requested (?P<output>\d+) output tokens and your prompt contains (?:at least )?(?P<input>\d+) input tokens`)},
	{"vLLM", re(`is too large: (?P<output>\d+)\. This model's maximum context length is (?P<max>\d+) tokens and your request has (?P<input>\d+) input tokens`)},
	{"vLLM", re(`maximum context length is (?P<max>\d+) tokens\. However, (?:your request has|you requested|your messages resulted in) (?P<tokens>\d+)(?: input)? tokens(?: \((?P<input>\d+) in the messages, (?P<output>\d+) in the completion\))?`)},
	// SGLang: "The input (40000 tokens) is longer than the model's context
	// length (32768 tokens)."; "Requested token count exceeds the model's
	// maximum context length of 32768 tokens. You requested a total of
	// 64000 tokens: 32000 tokens from the input messages and 32000 tokens
	// for the completion."
	{"SGLang", re(`input \((?P<tokens>\d+) tokens\) is longer than the model's context length \((?P<max>\d+) tokens\)`)},
	{"SGLang", re(`exceeds the model's maximum context length of (?P<max>\d+) tokens(?:\. You requested a total of (?P<tokens>\d+) tokens: (?P<input>\d+) tokens from the input messages and (?P<output>\d+) tokens for the completion)?`)},
	// Ollama: "input length (40000 tokens) exceeds the model's maximum
	// context length (32768 tokens)" (MLX runner); "the input length
	// exceeds the context length" (runners, truncate: false); hosted:
	// "prompt too long; exceeded max context length by 4021 tokens", "The
	// prompt is too long: 280282, model maximum context length: 262144".
	{"Ollama", re(`input length \((?P<tokens>\d+) tokens\) exceeds the model's maximum context length \((?P<max>\d+) tokens\)`)},
	{"Ollama", re(`input length exceeds the context length`)},
	// Ollama (its current server): "the prompt is longer than the context
	// length currently available to the model; shorten the prompt, adjust
	// the context length in settings, or use a model with a longer context
	// length".
	{"Ollama", re(`prompt is longer than the context length`)},
	{"Ollama", re(`prompt too long; exceeded max context length(?: by (?P<excess>\d+) tokens)?`)},
	{"Ollama", re(`prompt is too long: (?P<tokens>\d+), model maximum context length: (?P<max>\d+)`)},
	// LM Studio: "Trying to keep the first 6269 tokens when context the
	// overflows. However, the model is loaded with context length of only
	// 4096 tokens"; "The number of tokens to keep from the initial prompt
	// is greater than the context length (n_keep: 10978 >= n_ctx: 8192)".
	{"LM Studio", re(`keep the first (?P<tokens>\d+) tokens when context the overflows\. However, the model is loaded with context length of only (?P<max>\d+) tokens`)},
	{"LM Studio", re(`tokens to keep from the initial prompt is greater than the context length(?: \(n_keep: (?P<tokens>\d+) ?>= ?n_ctx: (?P<max>\d+)\))?`)},
	{"LM Studio", re(`context the overflows`)},
	// LM Studio 0.4.21: "Input does not fit in context length. The input
	// has 5012 tokens, but the context length only supports 4096 tokens."
	{"LM Studio", re(`input has (?P<tokens>\d+) tokens, but the context length only supports (?P<max>\d+) tokens`)},
	{"LM Studio", re(`input does not fit in (?:the )?context length`)},
	// A Messages-format backend, and the Chat reference code.
	{"Messages", re(`prompt is too long(?:: (?P<tokens>\d+) tokens > (?P<max>\d+) maximum)?`)},
	{"Chat", re(`context_length_exceeded`)},
}

func re(expr string) *regexp.Regexp { return regexp.MustCompile("(?i)" + expr) }

// Detect reports whether a backend's error answer is a context overflow,
// with the numbers it names. status is the backend's HTTP status: rate
// limits (429), refused keys (401, 403), unknown models (404) and
// overload (503) are never an overflow, whatever their text says.
func Detect(status int, body []byte) (Overflow, bool) {
	switch status {
	case 401, 403, 404, 429, 503:
		return Overflow{}, false
	}
	if status > 0 && status < 400 {
		return Overflow{}, false
	}
	text := chat.ParseError(body)
	if text == "" {
		text = string(body)
	}
	o, ok := DetectText(text)
	if !ok {
		// The code alone (llama.cpp's type, a Chat code) says it too.
		if !codeSaysOverflow(body) {
			return Overflow{}, false
		}
	}
	fields := errorFields(body)
	if o.Tokens == 0 && fields.NPromptTokens > 0 {
		o.Tokens = fields.NPromptTokens
	}
	if o.Maximum == 0 && fields.NCtx > 0 {
		o.Maximum = fields.NCtx
	}
	return o, true
}

// DetectText reports whether an error message is a context overflow, with
// the numbers it names: a known server's wording (patterns), or else any
// text that speaks of the context being exceeded (byMeaning).
func DetectText(text string) (Overflow, bool) {
	if o, ok := byWording(text); ok {
		return o, true
	}
	return byMeaning(text)
}

func byWording(text string) (Overflow, bool) {
	for _, p := range patterns {
		m := p.re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		var o Overflow
		var input int
		for i, name := range p.re.SubexpNames() {
			n, _ := strconv.Atoi(m[i])
			switch name {
			case "tokens":
				o.Tokens = n
			case "max":
				o.Maximum = n
			case "excess":
				o.Excess = n
			case "input":
				input = n
			case "output":
				o.Output = n
			}
		}
		if o.Tokens == 0 && input > 0 {
			o.Tokens = input + o.Output
		}
		return o, true
	}
	return Overflow{}, false
}

// llamaFields are the numbers llama.cpp puts beside its message.
type llamaFields struct {
	Type          string         `json:"type"`
	Code          jsontext.Value `json:"code"`
	NPromptTokens int            `json:"n_prompt_tokens"`
	NCtx          int            `json:"n_ctx"`
}

func errorFields(body []byte) llamaFields {
	var e struct {
		Error jsontext.Value `json:"error"`
	}
	var f llamaFields
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 || e.Error.Kind() != '{' {
		return f
	}
	_ = json.Unmarshal(e.Error, &f)
	return f
}

func codeSaysOverflow(body []byte) bool {
	f := errorFields(body)
	if f.Type == "exceed_context_size_error" {
		return true
	}
	var code string
	return json.Unmarshal(f.Code, &code) == nil && code == ChatCode
}

// PromptFits reports whether the backend's numbers say that the prompt
// fits its window and only the output asked for beside it does not (vLLM's
// and SGLang's max_tokens checks); prompt is the prompt as the backend
// counted it. A smaller max_tokens would then be accepted.
func (o Overflow) PromptFits() (prompt int, ok bool) {
	if o.Output <= 0 || o.Maximum <= 0 || o.Tokens <= o.Output {
		return 0, false
	}
	prompt = o.Tokens - o.Output
	return prompt, prompt < o.Maximum
}

// WithWindow completes the numbers with a known context window (from
// discovery or configuration; 0 when unknown): the window is the maximum
// when the backend did not name one, and an excess becomes a count.
func (o Overflow) WithWindow(window int) Overflow {
	if o.Maximum == 0 && window > 0 {
		o.Maximum = window
	}
	if o.Tokens == 0 && o.Excess > 0 && o.Maximum > 0 {
		o.Tokens = o.Maximum + o.Excess
	}
	return o
}

// WithPrompt completes the numbers with the proxy's own count of the
// prompt, used only when the backend named none and the count is over the
// maximum (an estimate under it would contradict the backend).
func (o Overflow) WithPrompt(tokens int) Overflow {
	if o.Tokens == 0 && o.Maximum > 0 && tokens > o.Maximum {
		o.Tokens = tokens
	}
	return o
}

// Message is the Messages error text the coding client recognizes:
// "prompt is too long: N tokens > M maximum", each number omitted only when
// unknown.
func (o Overflow) Message() string {
	switch {
	case o.Tokens > 0 && o.Maximum > 0:
		return "prompt is too long: " + strconv.Itoa(o.Tokens) + " tokens > " + strconv.Itoa(o.Maximum) + " maximum"
	case o.Tokens > 0:
		return "prompt is too long: " + strconv.Itoa(o.Tokens) + " tokens"
	case o.Maximum > 0:
		return "prompt is too long: the model's maximum is " + strconv.Itoa(o.Maximum) + " tokens"
	}
	return "prompt is too long"
}

// ChatMessage is the Chat error text, in the reference wording Chat
// clients match.
func (o Overflow) ChatMessage() string {
	var b strings.Builder
	if o.Maximum > 0 {
		b.WriteString("This model's maximum context length is " + strconv.Itoa(o.Maximum) + " tokens.")
	} else {
		b.WriteString("The request does not fit the model's context length.")
	}
	if o.Tokens > 0 {
		b.WriteString(" However, your messages resulted in " + strconv.Itoa(o.Tokens) + " tokens.")
	}
	b.WriteString(" Please reduce the length of the messages.")
	return b.String()
}

// MessagesError is the Messages error body: invalid_request_error with
// Message. Send it with Status.
func (o Overflow) MessagesError() []byte {
	return messages.MarshalError(messages.InvalidRequestError, o.Message())
}

// ChatError is the Chat error body: invalid_request_error, param
// "messages", code context_length_exceeded. Send it with Status.
func (o Overflow) ChatError() []byte {
	param := "messages"
	b, err := json.Marshal(chat.ErrorResponse{Error: chat.ErrorBody{
		Message: o.ChatMessage(),
		Type:    apierror.InvalidRequestError,
		Param:   &param,
		Code:    jsontext.Value(`"` + ChatCode + `"`),
	}})
	if err != nil {
		panic("overflow: marshal of a fixed struct failed: " + err.Error())
	}
	return b
}
