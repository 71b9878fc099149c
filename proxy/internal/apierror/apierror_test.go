package apierror

import "testing"

// TestMarshal: the bytes Chat (no code) and Responses (code null or a
// string) answers carry.
func TestMarshal(t *testing.T) {
	for _, c := range []struct {
		code string
		want string
	}{
		{"", `{"error":{"message":"bad \"x\"","type":"invalid_request_error","param":null}}`},
		{"null", `{"error":{"message":"bad \"x\"","type":"invalid_request_error","param":null,"code":null}}`},
		{`"context_length_exceeded"`, `{"error":{"message":"bad \"x\"","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`},
	} {
		var code []byte
		if c.code != "" {
			code = []byte(c.code)
		}
		if got := string(Marshal(InvalidRequestError, `bad "x"`, code)); got != c.want {
			t.Errorf("code %s:\n got %s\nwant %s", c.code, got, c.want)
		}
	}
}
