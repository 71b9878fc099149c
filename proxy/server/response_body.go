package server

import (
	"strconv"

	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// maxResponseBytes bounds a non-stream backend answer.
const maxResponseBytes = 64 << 20

// readResponse reads a non-stream answer into a pooled buffer, which the
// caller gives back (bufpool.Put) once it has used it.
func readResponse(resp *upstream.Response) ([]byte, error) {
	defer resp.Body.Close()
	hint := int64(-1)
	if v := resp.Header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			hint = n
		}
	}
	return bufpool.ReadAll(resp.Body, hint, maxResponseBytes)
}
