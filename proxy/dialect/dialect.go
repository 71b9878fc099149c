// Package dialect rewrites a backend request for the server that receives
// it, where that server refuses or ignores what the request says in the
// standard way:
//
//   - llama.cpp compiles each tool's JSON schema into a grammar and refuses
//     the whole request ("failed to parse grammar") when one keyword does
//     not compile: a string or array bound above its repetition limit, an
//     unanchored pattern, a $ref it cannot resolve, a type it does not
//     know, a boolean where a schema is expected. Those keywords are
//     dropped (schema.go); the tool, its name and description stay.
//   - llama.cpp ignores a named tool_choice (the object form): it is sent
//     as "required" ("any" on its Messages endpoint) with the tools
//     narrowed to the named one (toolchoice.go), which it honours.
//
// Other servers (vLLM, SGLang, Ollama, LM Studio) get the request
// unchanged: nothing they are known to refuse is rewritten.
//
// Everything here is pure: bytes in, bytes out, and the names of the
// rewrites applied, for the caller's debug log. What a client's tools
// need is remembered in its memo (internal/memo) when the caller passes
// one: a coding client sends the same tools with every request, and
// reading their schemas again cost more than translating the request.
package dialect

import (
	"bytes"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/discover"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
)

// Format is the wire format of a backend request body.
type Format int

// Formats.
const (
	Chat     Format = iota // /chat/completions: tools[].function.parameters
	Messages               // /messages: tools[].input_schema
)

// Rewrites says whether requests to server are rewritten at all: false
// means Fit always returns its body unchanged.
func Rewrites(server string) bool {
	return server == discover.LlamaCpp
}

// Fit rewrites body, a request of format f to server, so that server
// compiles its tool schemas and honours its tool_choice. It returns nil
// and no names when nothing needed a change (or body is not a JSON
// object), else the new body and the names of the rewrites applied, e.g.
// "Workflow: maxLength 524288 dropped (above llama.cpp's repetition limit 2000)".
// m is the client's memo (nil: none), where the fit of its tools is
// remembered.
func Fit(m *memo.Memo, server string, f Format, body []byte) ([]byte, []string) {
	if !Rewrites(server) || !bytes.Contains(body, []byte(`"tools"`)) {
		return nil, nil
	}
	top, ok := members(body)
	if !ok {
		return nil, nil
	}
	tools, hasTools := top["tools"]
	if !hasTools {
		return nil, nil
	}
	var applied []string
	fit := memo.Get(m, memoFit[f], body[tools.start:tools.end], func() fittedTools {
		t, notes := fitTools(f, body[tools.start:tools.end])
		return fittedTools{t, notes}
	})
	newTools, toolNotes := fit.tools, fit.notes
	applied = append(applied, toolNotes...)
	var newChoice []byte
	if choice, ok := top["tool_choice"]; ok {
		var narrowed []byte
		var note string
		newChoice, narrowed, note = namedChoice(f, body[choice.start:choice.end], orElse(newTools, body[tools.start:tools.end]))
		if newChoice != nil {
			newTools = narrowed
			applied = append(applied, note)
		}
	}
	if len(applied) == 0 {
		return nil, nil
	}
	edits := []edit{}
	if newTools != nil {
		edits = append(edits, edit{tools, newTools})
	}
	if newChoice != nil {
		edits = append(edits, edit{top["tool_choice"], newChoice})
	}
	return splice(body, edits), applied
}

// memoFit are the memo's kinds of fact for a tools array's fit, one for
// each format (its tools are read in another shape).
var memoFit = [...]byte{Chat: 'C', Messages: 'M'}

// fittedTools is what fitTools made of a tools array, as a memo keeps it
// (shared by the requests that find it: read only).
type fittedTools struct {
	tools []byte
	notes []string
}

func orElse(a, b []byte) []byte {
	if a != nil {
		return a
	}
	return b
}

// span is where a top-level member's value lies in the body.
type span struct{ start, end int }

type edit struct {
	at  span
	new []byte
}

// members finds the values of the top-level members of a JSON object,
// read with the validating scanner (a jsontext.Decoder over a reader
// copied the body into buffers of its own: a third of Fit's time).
func members(body []byte) (map[string]span, bool) {
	sc := jsonscan.New(body)
	if sc.Peek() != '{' {
		return nil, false
	}
	out := map[string]span{}
	err := sc.Members(func(raw []byte) error {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return err
		}
		sc.Peek()
		start := sc.Pos()
		if _, err := sc.Value(); err != nil {
			return err
		}
		out[name] = span{start, sc.Pos()}
		return nil
	})
	if err != nil || !sc.AtEnd() {
		return nil, false
	}
	return out, true
}

// splice replaces the spans of edits in body with their new bytes.
func splice(body []byte, edits []edit) []byte {
	if len(edits) == 2 && edits[1].at.start < edits[0].at.start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	n := len(body)
	for _, e := range edits {
		n += len(e.new) - (e.at.end - e.at.start)
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range edits {
		out = append(out, body[last:e.at.start]...)
		out = append(out, e.new...)
		last = e.at.end
	}
	return append(out, body[last:]...)
}
