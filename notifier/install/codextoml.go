package install

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Codex keeps its settings in config.toml; its top-level key notify is
// the program it runs at the end of each turn, as a list of strings
// (the program and its arguments; Codex appends one JSON argument).
// SetNotify and RemoveNotify edit that one key and leave every other
// byte of the file as it was: a small scanner finds where each top-level
// statement lies (strings, multi-line strings, arrays and inline tables
// included) up to the first table header; nothing is re-encoded.

// statement is one top-level "key = value" of a TOML file: its key, and
// where its line starts and where it ends, the newline included.
type statement struct {
	key        string
	start, end int
}

// topLevel lists the statements before the first table header and the
// offset where that header's line starts (len(doc) when there is none).
func topLevel(doc []byte) ([]statement, int, error) {
	var list []statement
	i := 0
	for i < len(doc) {
		lineStart := i
		for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t') {
			i++
		}
		switch {
		case i == len(doc):
			return list, len(doc), nil
		case doc[i] == '\n' || doc[i] == '\r' || doc[i] == '#':
			i = lineEnd(doc, i)
			continue
		case doc[i] == '[':
			return list, lineStart, nil
		}
		key, next, err := tomlKey(doc, i)
		if err != nil {
			return nil, 0, err
		}
		end, err := valueEnd(doc, next)
		if err != nil {
			return nil, 0, fmt.Errorf("the value of %s: %w", key, err)
		}
		list = append(list, statement{key: key, start: lineStart, end: lineEnd(doc, end)})
		i = list[len(list)-1].end
	}
	return list, len(doc), nil
}

// lineEnd is the offset just after the newline that ends the line at i
// (len(doc) on the last line), a comment on it included.
func lineEnd(doc []byte, i int) int {
	for i < len(doc) && doc[i] != '\n' {
		i++
	}
	if i < len(doc) {
		i++
	}
	return i
}

// tomlKey reads the key of a statement at i up to its '=' and returns the
// offset of the value. A dotted key is returned as written.
func tomlKey(doc []byte, i int) (string, int, error) {
	start := i
	for i < len(doc) && doc[i] != '=' && doc[i] != '\n' {
		if doc[i] == '"' || doc[i] == '\'' {
			end, err := stringEnd(doc, i)
			if err != nil {
				return "", 0, err
			}
			i = end
			continue
		}
		i++
	}
	if i == len(doc) || doc[i] != '=' {
		return "", 0, fmt.Errorf("line %d is neither a key = value nor a table header", line(doc, start))
	}
	key := strings.TrimSpace(string(doc[start:i]))
	if unq, err := strconv.Unquote(key); err == nil && key[0] == '"' {
		key = unq
	} else if len(key) >= 2 && key[0] == '\'' && key[len(key)-1] == '\'' {
		key = key[1 : len(key)-1]
	}
	return key, i + 1, nil
}

func line(doc []byte, at int) int { return 1 + strings.Count(string(doc[:at]), "\n") }

// valueEnd is the offset just after the value that starts at or after i:
// a string, a multi-line string, an array or inline table (nested, with
// comments inside arrays), or a bare value running to the end of its line.
func valueEnd(doc []byte, i int) (int, error) {
	depth := 0
	for i < len(doc) {
		c := doc[i]
		switch {
		case c == '"' || c == '\'':
			end, err := stringEnd(doc, i)
			if err != nil {
				return 0, err
			}
			i = end
			if depth == 0 {
				return i, nil
			}
			continue
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case c == '#':
			i = lineEnd(doc, i)
			if depth == 0 {
				return i, nil
			}
			continue
		case c == '\n' && depth == 0:
			return i, nil
		}
		i++
	}
	if depth > 0 {
		return 0, errors.New("an array or inline table is not closed")
	}
	return i, nil
}

// stringEnd is the offset just after the string (basic, literal, or
// either multi-line form) that starts at i.
func stringEnd(doc []byte, i int) (int, error) {
	quote := doc[i]
	if i+2 < len(doc) && doc[i+1] == quote && doc[i+2] == quote {
		delim := string([]byte{quote, quote, quote})
		j := i + 3
		for {
			k := strings.Index(string(doc[j:]), delim)
			if k < 0 {
				return 0, fmt.Errorf("a multi-line string from line %d is not closed", line(doc, i))
			}
			j += k
			if quote == '"' && escaped(doc, j) {
				j++
				continue
			}
			j += 3
			for j < len(doc) && doc[j] == quote { // """a"""" ends in a quote
				j++
			}
			return j, nil
		}
	}
	for j := i + 1; j < len(doc); j++ {
		switch {
		case doc[j] == '\n':
			return 0, fmt.Errorf("a string on line %d is not closed", line(doc, i))
		case doc[j] == '\\' && quote == '"':
			j++
		case doc[j] == quote:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("a string on line %d is not closed", line(doc, i))
}

// escaped says whether the character at j follows an odd run of backslashes.
func escaped(doc []byte, j int) bool {
	n := 0
	for k := j - 1; k >= 0 && doc[k] == '\\'; k-- {
		n++
	}
	return n%2 == 1
}

// stringList reads a TOML array of strings ("notify = [...]"'s value);
// ok is false for anything else.
func stringList(value string) (list []string, ok bool) {
	v := strings.TrimSpace(value)
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return nil, false
	}
	doc := []byte(v[1 : len(v)-1])
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
		case c == '#':
			i = lineEnd(doc, i)
		case c == '"' || c == '\'':
			end, err := stringEnd(doc, i)
			if err != nil {
				return nil, false
			}
			s, ok := tomlString(string(doc[i:end]))
			if !ok {
				return nil, false
			}
			list = append(list, s)
			i = end
		default:
			return nil, false
		}
	}
	return list, true
}

func tomlString(s string) (string, bool) {
	if s[0] == '\'' {
		return strings.Trim(s, "'"), !strings.HasPrefix(s, "'''")
	}
	if strings.HasPrefix(s, `"""`) {
		return "", false
	}
	unq, err := strconv.Unquote(s)
	return unq, err == nil
}

// tomlArray is argv as a TOML array of basic strings.
func tomlArray(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`).Replace(a) + `"`
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ErrOtherNotify says that config.toml runs another notify program.
var ErrOtherNotify = errors.New("another notify program is set")

// SetNotify sets the top-level notify of doc, a Codex config.toml, to
// argv. A notify of argv already there leaves doc as it is (changed
// false); another one is replaced only with force, else the error wraps
// ErrOtherNotify and names it. Without one, the line goes after the last
// top-level statement, before any table. Every other byte stays.
func SetNotify(doc []byte, argv []string, force bool) (out []byte, changed bool, err error) {
	list, _, err := topLevel(doc)
	if err != nil {
		return nil, false, fmt.Errorf("not TOML Codex can read: %w", err)
	}
	line := "notify = " + tomlArray(argv) + "\n"
	for _, s := range list {
		if s.key != "notify" {
			continue
		}
		current := string(doc[s.start:s.end])
		if old, ok := stringList(valueOf(current)); ok && slices.Equal(old, argv) {
			return doc, false, nil
		}
		if !force {
			return nil, false, fmt.Errorf("%w: %s", ErrOtherNotify, strings.TrimSpace(current))
		}
		return splice(doc, s.start, s.end, line), true, nil
	}
	at := 0
	if len(list) > 0 {
		at = list[len(list)-1].end
	}
	if at > 0 && doc[at-1] != '\n' {
		line = "\n" + line
	}
	return splice(doc, at, at, line), true, nil
}

// RemoveNotify takes out of doc the top-level notify that runs argv[0]
// (with whatever arguments). found says there was one; other is the
// statement when notify runs another program, which stays.
func RemoveNotify(doc []byte, program string) (out []byte, found bool, other string, err error) {
	list, _, err := topLevel(doc)
	if err != nil {
		return nil, false, "", fmt.Errorf("not TOML Codex can read: %w", err)
	}
	for _, s := range list {
		if s.key != "notify" {
			continue
		}
		current := string(doc[s.start:s.end])
		if old, ok := stringList(valueOf(current)); ok && len(old) > 0 && old[0] == program {
			return splice(doc, s.start, s.end, ""), true, "", nil
		}
		return doc, false, strings.TrimSpace(current), nil
	}
	return doc, false, "", nil
}

// CodexNotify is the program of the top-level notify of doc ("" when
// there is none or it is not a list of strings) and the statement as
// written.
func CodexNotify(doc []byte) (program, statement string, err error) {
	list, _, err := topLevel(doc)
	if err != nil {
		return "", "", err
	}
	for _, s := range list {
		if s.key == "notify" {
			current := string(doc[s.start:s.end])
			if argv, ok := stringList(valueOf(current)); ok && len(argv) > 0 {
				return argv[0], strings.TrimSpace(current), nil
			}
			return "", strings.TrimSpace(current), nil
		}
	}
	return "", "", nil
}

// valueOf is the value of a "key = value" statement, its trailing
// comment and newline cut.
func valueOf(stmt string) string {
	_, value, _ := strings.Cut(stmt, "=")
	doc := []byte(value)
	end, err := valueEnd(doc, 0)
	if err != nil {
		return value
	}
	return strings.TrimSpace(string(doc[:end]))
}

func splice(doc []byte, start, end int, with string) []byte {
	out := append([]byte(nil), doc[:start]...)
	out = append(out, with...)
	return append(out, doc[end:]...)
}
