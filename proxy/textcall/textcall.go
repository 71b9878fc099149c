// Package textcall recognizes tool calls and reasoning that a model wrote
// as text in its answer's content, the way local model servers leave them
// when they have no parser for the model's format (or their parser missed
// a slip): `<tool_call>{…}</tool_call>`, Qwen3-Coder's XML, Mistral's
// [TOOL_CALLS], a leading `<think>…</think>`, and the other families of
// Family. It is pure code without I/O; the translators of package
// translate call it for both directions and both backend protocols.
//
// Two entry points give the same answer for the same content:
//
//   - Parse takes a whole answer (a non-stream response).
//   - Scanner takes the answer in pieces as a stream delivers it and
//     returns Events as soon as they are certain: text is held back only
//     while it could still be the start of a marker, so ordinary text
//     streams as it arrives.
//
// What is not recovered comes back unaltered, byte for byte. A call is
// recovered only when the request offered tools (Options.Tools), names one
// of them, and its arguments parse as a JSON object (or, for the families
// that write values as text, are typed by the tool's schema); only when
// the family is in Options.Families; and only when the calls end the
// answer: prose before them is fine, whitespace (and a leaked stop token
// such as <|im_end|>) after them too, but a block followed by more prose
// was an example and stays text. The calls of one block are recovered
// whole or not at all. The end of a block is found by parsing, not by the
// first closing tag: a JSON argument that holds `</tool_call>` does not
// cut the call, nor does an XML value that holds a closing tag unless the
// tag is followed by what follows a value.
//
// Reasoning: in ReasoningAuto, a `<think>…</think>` pair at the answer's
// start (after whitespace) is reasoning, as are Mistral's `[THINK]…[/THINK]`
// and gpt-oss harmony's analysis channel there; a `<think>` anywhere else
// is text. In ReasoningOpenInPrompt the text up to the first `</think>` is
// reasoning (a `<think>` the model writes anyway is skipped). The
// whitespace between the reasoning and the answer is dropped. Text inside
// reasoning is never a call. Reasoning whose closing marker never comes
// (max_tokens, or open_in_prompt with a model that did not think) is all
// reasoning: it was streamed as such.
//
// A call cut off, with no closing marker at the answer's end (max_tokens):
// it is recovered when every call of its block is whole and only the
// block's closing marker is missing (a Hermes, Mistral, Llama 3, fenced,
// Kimi, DeepSeek or harmony call whose JSON arguments are complete; a
// Qwen3-Coder or MiniMax call whose </function> or </invoke> came);
// otherwise (arguments cut, a GLM call without </tool_call>, a pythonic
// list without its `]`) it is text, unaltered.
//
// Cost: the text state looks at each byte once, in one table of the
// first bytes of every family's markers (and a second-byte filter), so
// that no family slows the others; a held region is parsed again only
// when it has doubled since the last try (linear time however small the
// deltas). BenchmarkProse measures plain prose with every family and
// with none.
package textcall

// Family is one way of writing a tool call as text. The names are those
// proxy_params.tool_calls_in_text lists.
type Family uint8

// The families, in the order they are tried.
const (
	Hermes     Family = iota // <tool_call>{"name","arguments"}</tool_call> (Hermes, Qwen2.5, Qwen3)
	Qwen3Coder               // <tool_call><function=N><parameter=K>V</parameter></function></tool_call>, wrapper optional
	Mistral                  // [TOOL_CALLS] [{…}] and [TOOL_CALLS]name[ARGS]{…}
	Llama3JSON               // {"name","parameters"} as the whole answer, "; "-joined, optional <|python_tag|>
	Pythonic                 // [f(a='x', b=1)] (Llama 4, Llama 3.2)
	GLM                      // <tool_call>N<arg_key>k</arg_key><arg_value>v</arg_value></tool_call> (GLM-4.5/4.6/4.7)
	DeepSeek                 // <｜tool▁calls▁begin｜>… (V3, R1, V3.1)
	Kimi                     // <|tool_calls_section_begin|>… (Kimi K2)
	Harmony                  // <|channel|>commentary to=functions.N … <|call|> (gpt-oss)
	FencedJSON               // ```json {"name","arguments"} ``` as the whole answer or its last block
	Granite                  // <|tool_call|>[…]
	Phi4                     // functools[…]
	MiniMax                  // <invoke name=…>
	numFamilies
)

var familyNames = [numFamilies]string{
	Hermes: "hermes", Qwen3Coder: "qwen3_coder", Mistral: "mistral",
	Llama3JSON: "llama3_json", Pythonic: "pythonic", GLM: "glm",
	DeepSeek: "deepseek", Kimi: "kimi_k2", Harmony: "harmony",
	FencedJSON: "fenced_json", Granite: "granite", Phi4: "phi4", MiniMax: "minimax",
}

// String returns the family's configuration name, as metrics label it.
func (f Family) String() string {
	if f < numFamilies {
		return familyNames[f]
	}
	return "unknown"
}

// Set is a set of families, comparable so that a translate.Target can
// carry it. The zero Set recognizes no call.
type Set uint32

// All is every family: proxy_params.tool_calls_in_text: auto.
const All Set = 1<<numFamilies - 1

// Has reports whether f is in s.
func (s Set) Has(f Family) bool { return s&(1<<f) != 0 }

// FamilyByName returns the family a configuration name names.
func FamilyByName(name string) (Family, bool) {
	for f, n := range familyNames {
		if n == name {
			return Family(f), true
		}
	}
	return 0, false
}

// SetOf is the Set of the families named (configuration names), or the
// first name that is none.
func SetOf(names ...string) (Set, string) {
	var s Set
	for _, n := range names {
		f, ok := FamilyByName(n)
		if !ok {
			return 0, n
		}
		s |= 1 << f
	}
	return s, ""
}

// FamilyNames lists every family's configuration name, in order.
func FamilyNames() []string { return append([]string(nil), familyNames[:]...) }

// Reasoning says how reasoning written as text is recognized:
// proxy_params.reasoning_in_text.
type Reasoning uint8

const (
	// ReasoningAuto: a leading <think>…</think> pair is reasoning (the
	// default).
	ReasoningAuto Reasoning = iota
	// ReasoningOff: <think> is text like any other.
	ReasoningOff
	// ReasoningOpenInPrompt: the chat template opened <think> in the
	// prompt, so the text up to the first </think> is reasoning.
	ReasoningOpenInPrompt
)

// Tool is a tool the request offered: its name and the JSON Schema of its
// parameters, as the client wrote it (nil when it has none), which types
// the values of the families that write them as text (Qwen3-Coder's
// <parameter=K>V</parameter>, GLM's <arg_value>).
type Tool struct {
	Name       string
	Parameters []byte
}

// Options are what one answer is recognized with: the families to try,
// the reasoning rule and the tools the request offered. With no tools, no
// call is recovered (reasoning still is).
type Options struct {
	Families  Set
	Reasoning Reasoning
	Tools     []Tool
}

// Call is a recovered tool call: the tool's name, its arguments as a JSON
// object, and the family it was written in.
type Call struct {
	Name      string
	Arguments string
	Family    Family
}

// Result is what Parse recovered from one answer. Where nothing was
// recovered, Text is the whole content unaltered and Reasoning and Calls
// are empty.
type Result struct {
	Reasoning string // the text that was reasoning, without its markers
	Text      string // the answer's text, less what became reasoning or calls
	Calls     []Call
}

// Parse recognizes the reasoning and the tool calls in a whole answer.
func Parse(content string, o *Options) Result {
	sc := NewScanner(o)
	var r Result
	for _, ev := range sc.Close(sc.Feed(nil, content)) {
		switch ev.Kind {
		case EventReasoning:
			r.Reasoning += ev.Text
		case EventText:
			r.Text += ev.Text
		case EventCall:
			r.Calls = append(r.Calls, ev.Call)
		}
	}
	return r
}

// EventKind tells what an Event carries.
type EventKind uint8

const (
	EventText      EventKind = iota // Text: answer text for the client
	EventReasoning                  // Text: reasoning for the client
	EventCall                       // Call: a recovered tool call
)

// Event is one certain piece of the answer, in the order the client gets
// it. One Feed may give several text events in a row (they are not
// merged), a text event may be whitespace only, and Text may share memory
// with the deltas fed.
type Event struct {
	Kind EventKind
	Text string
	Call Call
}
