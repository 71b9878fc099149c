package translate

// The top-level members of a body, found by the validating scanner
// (jsonscan), and the edits a pass-through splices into it.

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
)

// member is a top-level member of a JSON object: its value and where the
// value lies in the body; keyStart is the offset of its name.
type member struct {
	value      jsontext.Value
	start, end int
	name       string
	keyStart   int
}

type object struct {
	open    int // offset of '{'
	members int
	list    []member      // the wanted members in body order, repeats included
	msgs    []chatMessage // the messages array, when scanned
}

// get returns the last wanted member of that name. A request has a dozen
// members at most: a search of the list is faster than a map, which cost
// each scan an allocation and its growth.
func (o *object) get(name string) (member, bool) {
	for i := len(o.list) - 1; i >= 0; i-- {
		if o.list[i].name == name {
			return o.list[i], true
		}
	}
	return member{}, false
}

// scanObject reads a JSON object's top-level members, remembering those
// that want names (every one when want is nil; get finds the last one of
// a repeated name). want is given the name unescaped, in memory it must
// not keep: only the names it wants are copied into strings. The whole
// body is validated, in one pass (jsonscan): with messages set, an
// array-valued "messages" member is scanned into object.msgs on the way.
// Malformed JSON is a *RequestError saying where.
func scanObject(body []byte, messages bool, want func(name []byte) bool) (object, error) {
	o, err := scanMembers(body, messages, want)
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		return o, &RequestError{Msg: se.Error()}
	}
	return o, err
}

// scanMembers is scanObject, its malformed JSON a *jsonscan.SyntaxError.
func scanMembers(body []byte, messages bool, want func(name []byte) bool) (object, error) {
	sc := jsonscan.New(body)
	var o object
	if sc.Peek() != '{' {
		if _, err := sc.Value(); err != nil {
			return o, err
		}
		return o, invalidf("request body: must be a JSON object")
	}
	o.open = sc.Pos()
	if want == nil {
		o.list = make([]member, 0, 16) // a request's members, in one allocation
	} else {
		o.list = make([]member, 0, 4) // the few wanted, in one allocation
	}
	err := sc.Members(func(raw []byte) error {
		// raw is a slice of body: the difference of capacities is its offset.
		keyStart := cap(body) - cap(raw)
		o.members++
		name, err := rawName(raw)
		if err != nil {
			return err
		}
		if messages && string(name) == "messages" && sc.Peek() == '[' {
			start := sc.Pos()
			msgs, err := scanMessages(&sc, body)
			if err != nil {
				return err
			}
			o.msgs = msgs
			o.list = append(o.list, member{value: body[start:sc.Pos()], start: start, end: sc.Pos(), name: "messages", keyStart: keyStart})
			return nil
		}
		v, err := sc.Value()
		if err != nil {
			return err
		}
		if want == nil || want(name) {
			o.list = append(o.list, member{value: v, start: sc.Pos() - len(v), end: sc.Pos(), name: string(name), keyStart: keyStart})
		}
		return nil
	})
	if err != nil {
		return o, err
	}
	if !sc.AtEnd() {
		return o, invalidf("request body: data after the JSON object")
	}
	return o, nil
}

// rawName returns the name of a member, raw as in the body (quoted),
// unescaped: in the body's memory when it has no escape.
func rawName(raw []byte) ([]byte, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return nil, decodeError(err)
	}
	return []byte(name), nil
}

// edit replaces body[start:end] with repl.
type edit struct {
	start, end int
	repl       []byte
}

// splice applies edits, sorted by start and not overlapping, to a copy of
// body.
func splice(body []byte, edits []edit) []byte {
	n := len(body)
	for _, e := range edits {
		n += len(e.repl) - (e.end - e.start)
	}
	out := bufpool.Get(n)
	at := 0
	for _, e := range edits {
		out = append(out, body[at:e.start]...)
		out = append(out, e.repl...)
		at = e.end
	}
	return append(out, body[at:]...)
}

// withModel returns a copy of the scanned object body (its model member
// wanted) whose model is alias: in place of the body's, or first.
func withModel(body []byte, top *object, alias string) []byte {
	q := jsonquote.Append(nil, alias)
	if m, ok := top.get("model"); ok {
		return splice(body, []edit{{m.start, m.end, q}})
	}
	ins := append(append([]byte(`"model":`), q...), ',')
	if top.members == 0 {
		ins = ins[:len(ins)-1]
	}
	return splice(body, []edit{{top.open + 1, top.open + 1, ins}})
}
