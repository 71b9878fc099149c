package dialect

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// node is a JSON value whose objects keep their member order, so that a
// rewritten schema differs from the client's only where it was changed
// (the backend's prefix cache sees the same tools turn after turn).
type node struct {
	kind jsontext.Kind // '{', '[' or a scalar's kind
	raw  jsontext.Value
	keys []string
	vals []*node // an object's values, beside keys; an array's elements
}

func parse(b []byte) (*node, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	return parseValue(dec)
}

func parseValue(dec *jsontext.Decoder) (*node, error) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &node{kind: '{'}
		for dec.PeekKind() != '}' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			name := tok.String()
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			n.keys, n.vals = append(n.keys, name), append(n.vals, v)
		}
		_, err := dec.ReadToken()
		return n, err
	case '[':
		if _, err := dec.ReadToken(); err != nil {
			return nil, err
		}
		n := &node{kind: '['}
		for dec.PeekKind() != ']' {
			v, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		_, err := dec.ReadToken()
		return n, err
	}
	v, err := dec.ReadValue()
	if err != nil {
		return nil, err
	}
	return &node{kind: v.Kind(), raw: v.Clone()}, nil
}

func (n *node) append(b []byte) []byte {
	switch n.kind {
	case '{':
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = jsontext.AppendQuote(b, k)
			b = append(b, ':')
			b = n.vals[i].append(b)
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.append(b)
		}
		return append(b, ']')
	}
	return append(b, n.raw...)
}

// get returns the value of an object's member, nil when absent.
func (n *node) get(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// drop removes an object's member.
func (n *node) drop(key string) {
	for i, k := range n.keys {
		if k == key {
			n.keys = append(n.keys[:i], n.keys[i+1:]...)
			n.vals = append(n.vals[:i], n.vals[i+1:]...)
			return
		}
	}
}

// str is a string value, "" and false when n is not a string.
func (n *node) str() (string, bool) {
	if n == nil || n.kind != '"' {
		return "", false
	}
	var s []byte
	s, err := jsontext.AppendUnquote(s, n.raw)
	return string(s), err == nil
}
