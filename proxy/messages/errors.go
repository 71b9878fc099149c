package messages

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Error types of the Messages error shape.
const (
	InvalidRequestError = "invalid_request_error"
	AuthenticationError = "authentication_error"
	PermissionError     = "permission_error"
	NotFoundError       = "not_found_error"
	RequestTooLarge     = "request_too_large"
	RateLimitError      = "rate_limit_error"
	APIError            = "api_error"
	OverloadedError     = "overloaded_error"
)

// ErrorResponse is the Messages error shape:
// {"type":"error","error":{"type":...,"message":...}}.
type ErrorResponse struct {
	Type  string    `json:"type"`
	Error ErrorBody `json:"error"`
}

// ErrorBody describes an error.
type ErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// MarshalError renders an error in the Messages shape.
func MarshalError(errType, message string) []byte {
	b, err := json.Marshal(ErrorResponse{Type: "error", Error: ErrorBody{Type: errType, Message: message}}, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		panic("messages: marshal of a fixed struct failed: " + err.Error())
	}
	return b
}
