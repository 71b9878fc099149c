package chat

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error types the proxy itself returns in the Chat error shape.
const (
	InvalidRequestError = "invalid_request_error"
	AuthenticationError = "authentication_error"
	NotFoundError       = "not_found_error"
	RateLimitError      = "rate_limit_error"
	ServerError         = "server_error"
	TimeoutError        = "timeout"
	UnavailableError    = "service_unavailable"
)

// ErrorResponse is the Chat error shape: {"error": {...}}.
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody describes an error. Code is a number on some servers and a
// string on others, so it is kept raw.
type ErrorBody struct {
	Message string         `json:"message"`
	Type    string         `json:"type"`
	Param   *string        `json:"param"`
	Code    jsontext.Value `json:"code,omitzero"`
}

// MarshalError renders an error in the Chat shape.
func MarshalError(errType, message string) []byte {
	b, err := json.Marshal(ErrorResponse{Error: ErrorBody{Message: message, Type: errType}}, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		panic("chat: marshal of a fixed struct failed: " + err.Error())
	}
	return b
}

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
