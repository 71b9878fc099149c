package server

import (
	"fmt"
	"net/http"

	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
)

// authAllowed refuses, 429 with Retry-After, a request of a client address
// that failed to authenticate too often within a minute (package
// authlimit), whatever its key, until the minute has passed: a right
// guess is not told apart from a wrong one meanwhile.
func (s *Server) authAllowed(w http.ResponseWriter, r *http.Request, f format) bool {
	if s.authLim == nil || (len(s.keys) == 0 && s.gate == nil) {
		return true
	}
	wait, ok := s.authLim.Allow(authlimit.Addr(r))
	if !ok {
		f.write(w, problem{kind: rateLimited, retryAfter: wait,
			message: fmt.Sprintf("too many requests with a wrong key from this address (%d within a minute): retry in %d seconds with the right key", authlimit.MaxFailures, int(wait.Seconds()))})
	}
	return ok
}

// refuseAuth answers a request whose key was refused (p), counting a
// wrong or missing key against its client address.
func (s *Server) refuseAuth(w http.ResponseWriter, r *http.Request, f format, p problem) {
	if s.authLim != nil && p.kind == unauthenticated {
		s.authLim.Failed(authlimit.Addr(r))
	}
	f.write(w, p)
}
