package textcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// jsonValue reads the JSON object or array at s[i:], tracking strings and
// escapes (so a closing marker inside a string does not end it): its end,
// or incomplete when s ends inside it, or bad.
func jsonValue(s string, i int) (int, status) {
	if i == len(s) {
		return i, incomplete
	}
	if s[i] != '{' && s[i] != '[' {
		return i, bad
	}
	dec := json.NewDecoder(strings.NewReader(s[i:]))
	var raw json.RawMessage
	switch err := dec.Decode(&raw); {
	case err == nil:
		return i + int(dec.InputOffset()), complete
	case errors.Is(err, io.ErrUnexpectedEOF):
		return i, incomplete
	default:
		return i, bad
	}
}

// jsonArgs reads a call's arguments, a JSON object, at s[i:]: compacted,
// with its end.
func jsonArgs(s string, i int) (string, int, status) {
	end, st := jsonValue(s, i)
	if st != complete {
		return "", i, st
	}
	args, ok := compactObject([]byte(s[i:end]))
	if !ok {
		return "", i, bad
	}
	return args, end, complete
}

// compactObject returns the JSON object raw compacted, or false when raw
// is not an object.
func compactObject(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return "", false
	}
	return compactJSON(string(raw))
}

// compactJSON returns the JSON value s compacted.
func compactJSON(s string) (string, bool) {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return "", false
	}
	return b.String(), true
}

// callFromJSON reads a call written as a JSON object with a "name" and its
// arguments under one of argKeys: an object, or a string that holds one
// (as Hermes models write them at times). No arguments are {}, unless
// needArgs. The tool must be one the request offered.
func callFromJSON(raw []byte, t *toolset, needArgs bool, argKeys ...string) (Call, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return Call{}, false
	}
	var name string
	if json.Unmarshal(m["name"], &name) != nil || !t.has(name) {
		return Call{}, false
	}
	c := Call{Name: name, Arguments: "{}"}
	for _, k := range argKeys {
		a, ok := m[k]
		if !ok {
			continue
		}
		args, ok := argumentsValue(a)
		if !ok {
			return Call{}, false
		}
		c.Arguments = args
		return c, true
	}
	return c, !needArgs
}

// argumentsValue is a call's arguments: an object, or a JSON string that
// holds one. null is no arguments.
func argumentsValue(a json.RawMessage) (string, bool) {
	a = bytes.TrimSpace(a)
	if string(a) == "null" {
		return "{}", true
	}
	if len(a) > 0 && a[0] == '"' {
		var str string
		if json.Unmarshal(a, &str) != nil {
			return "", false
		}
		if strings.TrimSpace(str) == "" {
			return "{}", true
		}
		return compactObject([]byte(str))
	}
	return compactObject(a)
}

// callsFromJSON reads one call object or a non-empty array of them.
func callsFromJSON(raw string, t *toolset, needArgs bool, argKeys ...string) ([]Call, bool) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "{") {
		c, ok := callFromJSON([]byte(raw), t, needArgs, argKeys...)
		if !ok {
			return nil, false
		}
		return []Call{c}, true
	}
	var list []json.RawMessage
	if json.Unmarshal([]byte(raw), &list) != nil || len(list) == 0 {
		return nil, false
	}
	calls := make([]Call, 0, len(list))
	for _, e := range list {
		c, ok := callFromJSON(e, t, needArgs, argKeys...)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

// jsonString is s as a JSON string (`<` and `&` as themselves).
func jsonString(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
