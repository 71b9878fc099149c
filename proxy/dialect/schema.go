package dialect

import (
	"fmt"
	"strconv"
	"strings"
)

// RepetitionLimit is llama.cpp's MAX_REPETITION_THRESHOLD
// (src/llama-grammar.cpp): its grammar parser refuses a repetition {m,n}
// with m or n above it ("number of repetitions exceeds sane defaults").
// A schema's string bound N becomes a repetition just over N (llama-server
// b10061 refuses maxLength 2000 and takes 1999), so the largest bound kept
// is RepetitionLimit-1.
const RepetitionLimit = 2000

// maxBound is the largest string or array bound kept.
const maxBound = RepetitionLimit - 1

// grammarTypes are the types llama.cpp's json-schema-to-grammar knows
// (its PRIMITIVE_RULES); any other is "Unrecognized schema".
var grammarTypes = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true,
	"object": true, "array": true, "null": true,
}

// bounds are the keywords that become a repetition count.
var bounds = []string{"minLength", "maxLength", "minItems", "maxItems"}

// numbers are the keywords llama.cpp reads as a number.
var numbers = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}

// fitTools rewrites the tool schemas of a tools array so that llama.cpp's
// grammar builder compiles them. It returns nil when none needed a change.
func fitTools(f Format, raw []byte) ([]byte, []string) {
	tools, err := parse(raw)
	if err != nil || tools.kind != '[' {
		return nil, nil
	}
	var notes []string
	for _, t := range tools.vals {
		holder, key := t, "input_schema"
		if f == Chat {
			holder, key = t.get("function"), "parameters"
		}
		if holder.get(key) == nil {
			continue
		}
		name, _ := holder.get("name").str()
		fs := &schemaFit{root: holder.get(key), tool: name}
		fs.at(holder, key, "")
		notes = append(notes, fs.notes...)
	}
	if len(notes) == 0 {
		return nil, nil
	}
	return tools.append(make([]byte, 0, len(raw))), notes
}

// schemaFit walks one tool's schema as llama.cpp's converter visits it.
type schemaFit struct {
	root  *node
	tool  string
	notes []string
}

func (fs *schemaFit) note(path, format string, args ...any) {
	if path == "" {
		path = "/"
	}
	fs.notes = append(fs.notes, fs.tool+": "+path+": "+fmt.Sprintf(format, args...))
}

// at fits the schema held at parent's key: a boolean (or any non-object)
// schema becomes {} — llama.cpp has no rule for true or false.
func (fs *schemaFit) at(parent *node, key, path string) {
	for i, k := range parent.keys {
		if k == key {
			fs.value(parent, i, path)
			return
		}
	}
}

// value fits parent.vals[i], a schema (parent an object or an array).
func (fs *schemaFit) value(parent *node, i int, path string) {
	s := parent.vals[i]
	if s.kind != '{' {
		fs.note(path, "schema %s replaced by {} (llama.cpp compiles only object schemas)", s.raw)
		if s == fs.root {
			fs.root = &node{kind: '{'}
		}
		parent.vals[i] = &node{kind: '{'}
		return
	}
	fs.schema(s, path)
}

func (fs *schemaFit) schema(s *node, path string) {
	if ref := s.get("$ref"); ref != nil {
		if r, ok := ref.str(); !ok || !fs.resolves(r) {
			s.drop("$ref")
			fs.note(path, "$ref %s dropped (llama.cpp resolves only #/ pointers within the schema)", ref.raw)
		}
	}
	if t := s.get("type"); t != nil {
		fs.types(s, t, path)
	}
	if f := s.get("format"); f != nil && f.kind != '"' {
		s.drop("format")
		fs.note(path, "format %s dropped (not a string)", f.raw)
	}
	if p := s.get("pattern"); p != nil {
		if why := patternProblem(p); why != "" {
			s.drop("pattern")
			fs.note(path, "pattern %s dropped (%s)", p.raw, why)
		}
	}
	for _, k := range bounds {
		b := s.get(k)
		if b == nil {
			continue
		}
		v, err := strconv.ParseFloat(string(b.raw), 64)
		switch {
		case b.kind != '0' || err != nil:
			s.drop(k)
			fs.note(path, "%s %s dropped (not a number)", k, b.raw)
		case v < 0 || v != float64(int64(v)):
			s.drop(k)
			fs.note(path, "%s %s dropped (not a count)", k, b.raw)
		case v > maxBound:
			s.drop(k)
			fs.note(path, "%s %s dropped (above llama.cpp's repetition limit %d)", k, b.raw, RepetitionLimit)
		}
	}
	for _, k := range numbers {
		if b := s.get(k); b != nil && b.kind != '0' {
			s.drop(k)
			fs.note(path, "%s %s dropped (not a number)", k, b.raw)
		}
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf", "prefixItems"} {
		fs.each(s, k, path)
	}
	if p := s.get("properties"); p != nil {
		if p.kind != '{' {
			s.drop("properties")
			fs.note(path, "properties %s dropped (not an object)", p.raw)
		} else {
			for i, name := range p.keys {
				fs.value(p, i, path+"/properties/"+name)
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if d := s.get(k); d != nil && d.kind == '{' {
			for i, name := range d.keys {
				fs.value(d, i, path+"/"+k+"/"+name)
			}
		}
	}
	if it := s.get("items"); it != nil {
		switch it.kind {
		case '[':
			for i := range it.vals {
				fs.value(it, i, path+"/items/"+strconv.Itoa(i))
			}
		default:
			fs.at(s, "items", path+"/items")
		}
	}
	if ap := s.get("additionalProperties"); ap != nil {
		switch ap.kind {
		case 't', 'f':
		case '{':
			fs.schema(ap, path+"/additionalProperties")
		default:
			s.drop("additionalProperties")
			fs.note(path, "additionalProperties %s dropped (not a schema)", ap.raw)
		}
	}
}

// each fits the schemas of an array keyword; one that is not an array
// is dropped (llama.cpp reads it as a list and throws).
func (fs *schemaFit) each(s *node, key, path string) {
	list := s.get(key)
	if list == nil {
		return
	}
	if list.kind != '[' {
		s.drop(key)
		fs.note(path, "%s %s dropped (not an array)", key, list.raw)
		return
	}
	for i := range list.vals {
		fs.value(list, i, path+"/"+key+"/"+strconv.Itoa(i))
	}
}

// types keeps the types llama.cpp knows.
func (fs *schemaFit) types(s, t *node, path string) {
	switch t.kind {
	case '"':
		if name, _ := t.str(); grammarTypes[name] {
			return
		}
	case '[':
		kept := t.vals[:0:0]
		for _, v := range t.vals {
			if name, ok := v.str(); ok && grammarTypes[name] {
				kept = append(kept, v)
			}
		}
		if len(kept) == len(t.vals) {
			return
		}
		if len(kept) > 0 {
			fs.note(path, "type %s narrowed to the types llama.cpp knows", string(t.append(nil)))
			t.vals = kept
			return
		}
	}
	s.drop("type")
	fs.note(path, "type %s dropped (llama.cpp knows string, number, integer, boolean, object, array, null)", string(t.append(nil)))
}

// resolves says whether llama.cpp resolves ref: a JSON pointer "#/…"
// into the tool's own schema.
func (fs *schemaFit) resolves(ref string) bool {
	if ref == "#" {
		return true
	}
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	at := fs.root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch at.kind {
		case '{':
			at = at.get(tok)
		case '[':
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(at.vals) {
				return false
			}
			at = at.vals[i]
		default:
			return false
		}
		if at == nil {
			return false
		}
	}
	return true
}

// patternProblem says why llama.cpp's regex-to-grammar would refuse a
// pattern, "" when it takes it: it must be a string anchored by ^ and $,
// its brackets balanced, and its repetition counts within the limit.
func patternProblem(p *node) string {
	s, ok := p.str()
	switch {
	case !ok:
		return "not a string"
	case len(s) < 2 || s[0] != '^' || s[len(s)-1] != '$':
		return "llama.cpp takes only patterns anchored with ^ and $"
	}
	var stack []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
		case len(stack) > 0 && stack[len(stack)-1] == '[':
			if c == ']' {
				stack = stack[:len(stack)-1]
			}
		case c == '(' || c == '[':
			stack = append(stack, c)
		case c == ')':
			if len(stack) == 0 {
				return "unbalanced parentheses"
			}
			stack = stack[:len(stack)-1]
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "unbalanced curly brackets"
			}
			for _, n := range strings.Split(s[i+1:i+end], ",") {
				if n == "" {
					continue
				}
				v, err := strconv.Atoi(strings.TrimSpace(n))
				if err != nil {
					return "a repetition that is not a number"
				}
				if v > maxBound {
					return fmt.Sprintf("a repetition above llama.cpp's limit %d", RepetitionLimit)
				}
			}
			i += end
		}
	}
	if len(stack) > 0 {
		return "unbalanced brackets"
	}
	return ""
}
