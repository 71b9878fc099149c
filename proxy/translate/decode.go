package translate

// Decoding a client's request, and wording its decode errors.

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
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

// decode decodes a client's request into its wire type (a
// messages.Request, a responses.Request), validating the whole body:
// raw values alias body, and a malformed body is a *RequestError that
// says where.
func decode[R any](body []byte, req *R) error {
	if err := json.Unmarshal(body, req, decodeOpts, aliasRaw); err != nil {
		return decodeError(err)
	}
	return nil
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
