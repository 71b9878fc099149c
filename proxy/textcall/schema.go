package textcall

import (
	"encoding/json"
	"strconv"
	"strings"
)

// toolset is the tools the request offered, looked up by name; the
// parameter types of a tool's schema are read the first time a call to
// it writes its values as text.
type toolset struct {
	tools []Tool
	types map[string]map[string]string // tool → parameter → JSON Schema type
}

func (t *toolset) has(name string) bool { return t.find(name) >= 0 }

// begins reports whether some tool's name begins with p: a name still
// being written could become one.
func (t *toolset) begins(p string) bool {
	for i := range t.tools {
		if strings.HasPrefix(t.tools[i].Name, p) {
			return true
		}
	}
	return false
}

func (t *toolset) find(name string) int {
	if name == "" {
		return -1
	}
	for i := range t.tools {
		if t.tools[i].Name == name {
			return i
		}
	}
	return -1
}

// paramType is the JSON Schema type of the tool's parameter key ("" when
// the schema does not say): the first of a list of types that is not
// "null", or of an anyOf/oneOf's.
func (t *toolset) paramType(tool, key string) string {
	if t.types == nil {
		t.types = map[string]map[string]string{}
	}
	props, ok := t.types[tool]
	if !ok {
		props = map[string]string{}
		if i := t.find(tool); i >= 0 && len(t.tools[i].Parameters) > 0 {
			var sch struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if json.Unmarshal(t.tools[i].Parameters, &sch) == nil {
				for k, p := range sch.Properties {
					props[k] = schemaType(p)
				}
			}
		}
		t.types[tool] = props
	}
	return props[key]
}

func schemaType(p json.RawMessage) string {
	var s struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
	}
	if json.Unmarshal(p, &s) != nil {
		return ""
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(s.Type, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
	}
	for _, alt := range append(s.AnyOf, s.OneOf...) {
		if t := schemaType(alt); t != "" && t != "null" {
			return t
		}
	}
	return ""
}

// typedValue is the JSON for a parameter value written as text, typed by
// the schema: a number or integer parameter becomes a number, a boolean
// one a bool, an object or array one the JSON (or Python literal) it
// holds; anything else, or a value that is not of its type, a string.
func typedValue(v, typ string) string {
	w := strings.TrimSpace(v)
	switch typ {
	case "integer", "number", "int", "float": // the last two: not JSON Schema, but met
		if f, err := strconv.ParseFloat(w, 64); err == nil {
			if json.Valid([]byte(w)) {
				return w
			}
			// 1., .5, +1: numbers to Python, not to JSON
			if b, err := json.Marshal(f); err == nil {
				return string(b)
			}
		}
	case "boolean", "bool":
		switch strings.ToLower(w) {
		case "true":
			return "true"
		case "false":
			return "false"
		}
	case "object", "array":
		if w != "" && (w[0] == '{' || w[0] == '[') {
			if n, st := jsonValue(w, 0); st == complete && n == len(w) {
				if c, ok := compactJSON(w); ok {
					return c
				}
			}
			if j, n, st := pyValue(w, 0); st == complete && skipSpace(w, n) == len(w) {
				return j
			}
		}
	case "null":
		if w == "null" || w == "None" {
			return "null"
		}
	}
	return jsonString(v)
}
