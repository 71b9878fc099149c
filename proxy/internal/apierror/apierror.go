// Package apierror is the error shape that the Chat Completions and the
// Responses APIs share, {"error":{"message","type","param","code"}}, and
// the error types the proxy itself answers with in it. The wire packages
// chat and responses both write it from here, so that neither knows the
// other.
package apierror

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error types the proxy itself returns in this shape.
const (
	InvalidRequestError = "invalid_request_error"
	AuthenticationError = "authentication_error"
	NotFoundError       = "not_found_error"
	RateLimitError      = "rate_limit_error"
	ServerError         = "server_error"
	TimeoutError        = "timeout"
	UnavailableError    = "service_unavailable"
)

// Response is the error shape: {"error": {...}}.
type Response struct {
	Error Body `json:"error"`
}

// Body describes an error. Param names the request member at fault, when
// there is one. Code is kept raw (a number on some servers, a string on
// others) and left out when empty.
type Body struct {
	Message string         `json:"message"`
	Type    string         `json:"type"`
	Param   *string        `json:"param"`
	Code    jsontext.Value `json:"code,omitzero"`
}

// Marshal renders an error of type errType; code is its raw JSON value
// (nil: no code member).
func Marshal(errType, message string, code jsontext.Value) []byte {
	b, err := json.Marshal(Response{Error: Body{Message: message, Type: errType, Code: code}}, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		panic("apierror: marshal of a fixed struct failed: " + err.Error())
	}
	return b
}
