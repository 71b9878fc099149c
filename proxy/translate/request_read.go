package translate

// What every route reads first of a client's request: the body decoded
// into its wire type (and its decode errors worded), the model it names
// resolved to the Target it is translated for, and its stream flag.

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/jsonquote"
	"github.com/dragoman-dev/dragoman/proxy/internal/jsonscan"
	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// decodeOpts: duplicate member names are accepted (the last one wins, as in
// most JSON decoders); tracking them costs a third of the decode time.
var decodeOpts = jsontext.AllowDuplicateNames(true)

// aliasRaw decodes raw values (jsontext.Value) as slices of the input
// instead of copies: json.Unmarshal reads a byte slice in place, so a value
// it reads stays valid as long as the input does. This saves a copy of
// nearly the whole body (text, schemas), a quarter of the decode time.
var aliasRaw = json.WithUnmarshalers(json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *jsontext.Value) error {
	raw, err := dec.ReadValue()
	*v = raw
	return err
}))

// errNoModel refuses a request that names no model.
var errNoModel = &RequestError{Msg: "model: required (a string naming a configured model)"}

// readRequest decodes body into req (decode) and resolves its model,
// *model (a member of req), to the Target the request is translated for:
// the caller's resolver learns of the request before anything else of it
// is checked (but a Responses request's compaction items:
// compactionItem), so that even a request refused for its input is
// counted for its model.
func readRequest[R any](body []byte, req *R, model *string, resolve Resolver) (Target, error) {
	if err := decode(body, req, resolve.clientMemo()); err != nil {
		return Target{}, err
	}
	if *model == "" {
		return Target{}, errNoModel
	}
	if r, ok := any(req).(*responses.Request); ok {
		if err := compactionItem(r.Input.Items); err != nil {
			return Target{}, err
		}
	}
	return resolveTarget(resolve, *model)
}

// compactionItem refuses the first compaction or compaction_trigger item
// of a Responses request, marked Compaction, before its model is resolved:
// the server opens them (and answers a trigger) where the translation
// meets them, rather than search every body for them.
func compactionItem(items []responses.Item) error {
	for i := range items {
		var why string
		switch items[i].Type {
		case responses.ItemCompaction:
			why = "a compaction item whose encrypted_content the proxy did not write: it cannot be read here"
		case responses.ItemCompactionTrigger:
			why = "compaction_trigger must be the last input item"
		default:
			continue
		}
		return &RequestError{Msg: fmt.Sprintf("input.%d: %s", i, why), Compaction: true}
	}
	return nil
}

// clientMemo is the memo of the client a request comes from, asked of
// resolve before the request's model is known (see Resolver).
func (resolve Resolver) clientMemo() *memo.Memo {
	if resolve == nil {
		return nil
	}
	t, err := resolve("")
	if err != nil {
		return nil
	}
	return t.Memo
}

// decode decodes a client's request into its wire type (a
// messages.Request, a responses.Request), validating the whole body:
// raw values alias body, and a malformed body is a *RequestError that
// says where. It reads body with the wire package's ScanRequest first,
// recalling from m (the client's memo, or nil) the schemas it sent
// before; jsonv2 decodes what that leaves to it, and words every error.
func decode[R any](body []byte, req *R, m *memo.Memo) error {
	if scanned(body, req, m) {
		return nil
	}
	*req = *new(R)
	if err := json.Unmarshal(body, req, decodeOpts, aliasRaw); err != nil {
		return decodeError(err)
	}
	return nil
}

// scanned decodes body into req with the ScanRequest of req's wire
// package, and reports whether it could.
func scanned(body []byte, req any, m *memo.Memo) bool {
	var rc jsonscan.Recall
	if m != nil {
		rc = recall{m}
	}
	switch r := req.(type) {
	case *messages.Request:
		return messages.ScanRequest(body, r, rc)
	case *responses.Request:
		return responses.ScanRequest(body, r, rc)
	}
	return false
}

// recall is a client's memo as the decoder's jsonscan.Recall: an object,
// an array or a string of at least memoMin bytes that the client sent
// before on its connection (its tool schemas, its system prompt, the past
// turns) is known valid, and not validated again. One fact a value: its
// first recallPrefix bytes find its length and the sum of all its bytes.
type recall struct{ m *memo.Memo }

// recallPrefix is how much of a value finds it; memoMin is more.
const recallPrefix = 128

// memoValid is the memo's kind of fact for a valid value (recall).
const memoValid byte = 'v'

// validValue is what recall remembers of a valid value.
type validValue struct {
	length int
	sum    uint64
}

func (r recall) Known(b []byte, at int) int {
	v, ok := memo.Find[validValue](r.m, memoValid, b[at:min(len(b), at+recallPrefix)])
	if !ok || v.length > len(b)-at || r.m.Sum(memoValid, b[at:at+v.length]) != v.sum {
		return 0
	}
	return v.length
}

func (r recall) Validated(b []byte, start, end int) {
	if end-start < memoMin {
		return
	}
	memo.Put(r.m, memoValid, b[start:start+recallPrefix], validValue{end - start, r.m.Sum(memoValid, b[start:end])})
}

// decodeError turns a decode error into a *RequestError that names the
// field, e.g. "messages.2.content: must be a string or an array of content
// blocks".
func decodeError(err error) error {
	var se *json.SemanticError
	if errors.As(err, &se) {
		where := fieldPath(se.JSONPointer)
		if where == "" {
			where = "request body"
		}
		var what string
		switch {
		case se.GoType != nil && se.JSONKind != 0 && se.JSONKind != jsontext.KindInvalid:
			what = "must be " + goTypeName(se.GoType) + ", got " + kindName(se.JSONKind)
			if se.JSONKind == '0' && len(se.JSONValue) > 0 && len(se.JSONValue) < 32 {
				what += " " + string(se.JSONValue)
			}
		case se.Err != nil:
			what = se.Err.Error()
		default:
			what = "invalid value"
		}
		return &RequestError{Msg: where + ": " + what}
	}
	var sy *jsontext.SyntacticError
	if errors.As(err, &sy) {
		msg := "malformed JSON"
		if p := fieldPath(sy.JSONPointer); p != "" {
			msg += " in " + p
		}
		return &RequestError{Msg: fmt.Sprintf("%s at byte offset %d: %v", msg, sy.ByteOffset, sy.Err)}
	}
	return &RequestError{Msg: "malformed JSON: " + err.Error()}
}

// fieldPath renders a JSON pointer as the dotted path used in error
// messages: /messages/3/content → messages.3.content.
func fieldPath(p jsontext.Pointer) string {
	var sb strings.Builder
	for tok := range p.Tokens() {
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(tok)
	}
	return sb.String()
}

func goTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a " + t.String()
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "an invalid value"
}

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
	q := jsonquote.Append(nil, target.BackendModel)
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
		return "", m, errNoModel
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
