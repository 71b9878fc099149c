package chat

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/internal/apierror"
)

// ErrorResponse is the Chat error shape: {"error": {...}}.
type ErrorResponse = apierror.Response

// ErrorBody describes an error. Code is a number on some servers and a
// string on others, so it is kept raw.
type ErrorBody = apierror.Body

// MarshalError renders an error in the Chat shape (apierror's types), with
// no code.
func MarshalError(errType, message string) []byte { return apierror.Marshal(errType, message, nil) }

// ParseError extracts the message of a backend error body in the Chat
// shape, or in the bare {"message": ...} or {"detail": ...} shapes some
// servers use. It returns "" when the body holds none of them.
func ParseError(body []byte) string {
	var e struct {
		Error   jsontext.Value `json:"error"`
		Message string         `json:"message"`
		Detail  jsontext.Value `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if len(e.Error) > 0 {
		var inner ErrorBody
		if json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
			return inner.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil {
			return s
		}
	}
	if e.Message != "" {
		return e.Message
	}
	if len(e.Detail) > 0 {
		var s string
		if json.Unmarshal(e.Detail, &s) == nil {
			return s
		}
		return string(e.Detail)
	}
	return ""
}
