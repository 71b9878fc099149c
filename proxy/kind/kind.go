// Package kind tells what kind of traffic a request is, from what the
// client sends: its headers, the model it asks for and, when the
// configuration routes by what is inside the body, the body's structure.
// Package balance orders a full backend's queue by the kind's Priority;
// package server routes by it (router_settings.routes) and labels metrics
// with it. The package knows nothing of HTTP handlers or backends.
//
// What the clients send (recorded in fixtures/kinds):
//
//   - Claude Code 2.1.330: a subagent's turn carries the
//     x-claude-code-agent-id header and "cc_is_subagent=true" in the
//     billing block at the head of its system prompt; background requests
//     (the session title, summaries) go to the small/fast model
//     (ANTHROPIC_DEFAULT_HAIKU_MODEL), which only the model name tells.
//   - Codex 0.169.0: x-codex-turn-metadata, a JSON object whose
//     thread_source is "user" and agent_name "/root" for the user's own
//     thread; a spawned agent's thread is a subagent.
//   - The warmer sends User-Agent "dragoman-warmer".
package kind

import (
	"bytes"
	"net/http"
	"path"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
)

// Kind is one kind of request.
type Kind uint8

const (
	Main Kind = iota
	Subagent
	Background
	Warmer
	LongContext
	Image
	Thinking
	WebSearch
	count
)

var names = [count]string{"main", "subagent", "background", "warmer", "long_context", "image", "thinking", "web_search"}

func (k Kind) String() string {
	if k < count {
		return names[k]
	}
	return "main"
}

// All lists every kind, in the order of names (the values of the kind
// label).
func All() []Kind {
	out := make([]Kind, count)
	for i := range out {
		out[i] = Kind(i)
	}
	return out
}

// Parse returns the kind named s.
func Parse(s string) (Kind, bool) {
	for i, n := range names {
		if n == s {
			return Kind(i), true
		}
	}
	return Main, false
}

// Names lists the kinds' names, for error messages.
func Names() []string { return names[:] }

// Set is the kinds a request is: exactly one origin (main, subagent,
// background or warmer) and any of the content kinds (long_context,
// image, thinking, web_search).
type Set uint16

// Has reports whether the set holds k.
func (s Set) Has(k Kind) bool { return s&(1<<k) != 0 }

func (s Set) with(k Kind) Set { return s | 1<<k }

// Origin is who sent the request: Main, Subagent, Background or Warmer.
func (s Set) Origin() Kind {
	for _, k := range [...]Kind{Warmer, Background, Subagent} {
		if s.Has(k) {
			return k
		}
	}
	return Main
}

// Priority is a request's place in a full backend's queue: a lower value
// is served first.
type Priority uint8

// The priorities, first served first.
const (
	PriorityMain Priority = iota
	PrioritySubagent
	PriorityBackground
	PriorityWarmer
	Priorities // how many there are
)

// Priority is the set's place in a queue, by its origin.
func (s Set) Priority() Priority {
	switch s.Origin() {
	case Subagent:
		return PrioritySubagent
	case Background:
		return PriorityBackground
	case Warmer:
		return PriorityWarmer
	}
	return PriorityMain
}

func (p Priority) String() string {
	return [...]string{"main", "subagent", "background", "warmer", "main"}[min(p, Priorities)]
}

// Rules are the configuration's settings for classifying.
type Rules struct {
	// BackgroundModels are names or globs (path.Match syntax, e.g.
	// "claude-haiku-*") of the requested models that are the client's
	// small/fast model.
	BackgroundModels []string
	// LongContextTokens: a prompt estimated above it is long_context; 0:
	// never.
	LongContextTokens int
	// Content: read the body's structure for the content kinds
	// (long_context, image, thinking, web_search). Off, only the headers,
	// the model and the billing block are read: what the origin needs.
	Content bool
}

// Request is what the client sent.
type Request struct {
	Header http.Header
	Model  string // the model the client asked for
	Body   []byte // the JSON body: Messages, Responses or Chat
}

// Of returns the kinds of a request under rules.
func Of(r Request, rules Rules) Set {
	var s Set
	switch {
	case strings.HasPrefix(r.Header.Get("User-Agent"), "dragoman-warmer"):
		s = s.with(Warmer)
	case backgroundModel(r.Model, rules.BackgroundModels):
		s = s.with(Background)
	case subagentHeaders(r.Header) || subagentBilling(r.Body):
		s = s.with(Subagent)
	default:
		s = s.with(Main)
	}
	if rules.Content {
		c := readContent(r.Body)
		if rules.LongContextTokens > 0 && c.textBytes/bytesPerToken+c.images*imageTokens > rules.LongContextTokens {
			s = s.with(LongContext)
		}
		if c.images > 0 {
			s = s.with(Image)
		}
		if c.thinking {
			s = s.with(Thinking)
		}
		if c.webSearch() {
			s = s.with(WebSearch)
		}
	}
	return s
}

// bytesPerToken and imageTokens make the long_context estimate: about
// four bytes of JSON text a token, a fixed cost an image.
const (
	bytesPerToken = 4
	imageTokens   = 1600
)

func backgroundModel(model string, globs []string) bool {
	if model == "" {
		return false
	}
	for _, g := range globs {
		if g == model {
			return true
		}
		if ok, err := path.Match(g, model); err == nil && ok {
			return true
		}
	}
	return false
}

// AgentIDHeader is Claude Code's header on a subagent's requests.
const AgentIDHeader = "X-Claude-Code-Agent-Id"

// CodexTurnHeader is Codex's per-turn metadata header.
const CodexTurnHeader = "X-Codex-Turn-Metadata"

func subagentHeaders(h http.Header) bool {
	if h.Get(AgentIDHeader) != "" || h.Get("X-Openai-Subagent") != "" {
		return true
	}
	meta := h.Get(CodexTurnHeader)
	if meta == "" {
		return false
	}
	var source, agent string
	dec := jsontext.NewDecoder(strings.NewReader(meta))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return false
		}
		key := name.String() // the token is valid until the next read
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		switch key {
		case "thread_source":
			source = jsonquote.Unquote(v)
		case "agent_name":
			agent = jsonquote.Unquote(v)
		}
	}
	// The user's own thread is agent "/root"; a spawned one is below it.
	return source == "subagent" || strings.Count(strings.Trim(agent, "/"), "/") > 0
}

// billingPrefix starts Claude Code's billing block; subagentMarker is in
// it on a subagent's requests. Both are plain ASCII without quotes or
// backslashes, so the JSON text holds them as they are.
var (
	billingPrefix  = []byte(`"x-anthropic-billing-header:`)
	subagentMarker = []byte("cc_is_subagent=true")
)

// subagentBilling reports whether the first billing block of body, a
// JSON string, carries the subagent marker. A client's text cannot fake
// it: inside a JSON string a quote is escaped, so billingPrefix, which
// opens with a quote that is not escaped, begins a string of the body's
// structure.
//
// The search is for billingPrefix's name and then its quote: bytes.Index
// skips ahead by a pattern's first byte, and in JSON a quote is
// everywhere; Claude Code sends system after messages, so a long
// conversation was read slowly to its end (BenchmarkBillingPastTheConversation,
// 1 MB: 394 µs before, 19 µs so).
func subagentBilling(body []byte) bool {
	name := billingPrefix[1:]
	i := -1
	for from := 1; from <= len(body); {
		j := bytes.Index(body[from:], name)
		if j < 0 {
			return false
		}
		if body[from+j-1] == '"' {
			i = from + j - 1 // the first billingPrefix
			break
		}
		from += j + 1
	}
	if i < 0 || escaped(body, i) {
		return false
	}
	rest := body[i+len(billingPrefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return false
	}
	return bytes.Contains(rest[:end], subagentMarker)
}

// escaped reports whether the quote at body[i] is escaped: an odd run of
// backslashes before it.
func escaped(body []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && body[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}
