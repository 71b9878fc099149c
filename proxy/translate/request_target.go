package translate

import (
	"errors"
	"slices"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
)

// What every route reads first of a request: its model, resolved to the
// Target it is translated for, and its stream flag.

// resolveTarget resolves a request's model alias to the Target it is
// translated for (nil resolve: a backend model of the same name that
// supports system messages).
func resolveTarget(resolve Resolver, alias string) (Target, error) {
	if resolve == nil {
		return Target{Alias: alias, BackendModel: alias, SupportsSystemMessage: true}, nil
	}
	t, err := resolve(alias)
	if err != nil {
		return Target{}, err
	}
	if t.Alias == "" {
		t.Alias = alias
	}
	if t.BackendModel == "" {
		t.BackendModel = alias
	}
	return t, nil
}

// RequestModel returns the model of a request body without reading the
// rest of it: the value of the first top-level "model" member when it is
// a string, or "". It is a quick look for routing; the translation reads
// the whole body (and the last "model", should there be several).
func RequestModel(body []byte) string {
	sc := jsonscan.New(body)
	if sc.Peek() != '{' {
		return ""
	}
	var model string
	sc.Members(func(name []byte) error {
		v, err := sc.Value()
		if err != nil {
			return err
		}
		if string(name) != `"model"` {
			return nil
		}
		model, _ = scannedString(v)
		return errFound
	})
	return model
}

// errFound ends a scan early: what was looked for was found.
var errFound = errors.New("found")

// scannedString decodes a value the scanner passed (valid JSON) when it
// is a string: its bytes between the quotes when it holds no escape, else
// jsonv2's decoding. A jsonv2 call's set-up costs more than that when the
// caches are cold, as they are for a request at a time.
func scannedString(v []byte) (string, bool) {
	if jsontext.Value(v).Kind() != '"' {
		return "", false
	}
	if !slices.Contains(v, '\\') {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

// passThroughTarget reads what a pass-through reads first of a scanned
// request: its model, resolved to a Target, and its stream flag; rename is
// the edit that puts Target.BackendModel in place of the client's model.
func passThroughTarget(top object, resolve Resolver) (target Target, stream bool, rename edit, err error) {
	model, m, err := requestModel(top)
	if err != nil {
		return Target{}, false, edit{}, err
	}
	if stream, err = streamFlag(top); err != nil {
		return Target{}, false, edit{}, err
	}
	if target, err = resolveTarget(resolve, model); err != nil {
		return Target{}, false, edit{}, err
	}
	q := appendQuoted(nil, target.BackendModel)
	return target, stream, edit{m.start, m.end, q}, nil
}

// requestModel reads the model member of a scanned request: its value, a
// non-empty string, and the member.
func requestModel(top object) (string, member, error) {
	var model string
	m, ok := top.get("model")
	if ok {
		model, _ = scannedString(m.value)
	}
	if model == "" {
		return "", m, invalidf("model: required (a string naming a configured model)")
	}
	return model, m, nil
}

// streamFlag reads the stream member of a scanned request.
func streamFlag(top object) (bool, error) {
	s, ok := top.get("stream")
	if !ok {
		return false, nil
	}
	switch s.value.Kind() {
	case 't':
		return true, nil
	case 'f', 'n':
		return false, nil
	}
	return false, invalidf("stream: must be a boolean, got %s", kindName(s.value.Kind()))
}
