package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadWhole: the buffered floor reads a body of announced length, one
// of unknown length, and reports one cut short.
func TestReadWhole(t *testing.T) {
	body := strings.Repeat("0123456789", 5400)
	known := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body))
	unknown := httptest.NewRequest("POST", "/v1/messages", io.NopCloser(strings.NewReader(body)))
	unknown.ContentLength = -1
	for name, r := range map[string]*http.Request{"known length": known, "unknown length": unknown} {
		got, err := readWhole(r)
		if err != nil || !bytes.Equal(got, []byte(body)) {
			t.Errorf("%s: got %d bytes, %v; want the %d bytes sent", name, len(got), err, len(body))
		}
	}
	short := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(body[:100]))
	short.ContentLength = int64(len(body))
	if _, err := readWhole(short); err == nil {
		t.Error("a body shorter than its Content-Length was read without an error")
	}
}
