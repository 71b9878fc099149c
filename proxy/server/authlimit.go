package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/dragoman-dev/dragoman/proxy/internal/authlimit"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// authAllowed refuses, 429 with Retry-After, a request of a client address
// that failed the master key too often within a minute (package
// authlimit), whatever the key it sends, until the minute has passed: a
// right guess is not told apart from a wrong one meanwhile. What counts
// is a key that could be the master key: one of the shape of a per-user
// key (keys.Prefix, 256 random bits: nothing to guess) neither counts
// nor is refused, so that a client whose new key is not known yet (the
// keys are read again every second) is not held back for a minute.
func (s *Server) authAllowed(w http.ResponseWriter, r *http.Request, f format) bool {
	if s.authLim == nil || (len(s.keys) == 0 && s.gate == nil) || perUserShaped(r) {
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
	if s.authLim != nil && p.kind == unauthenticated && !perUserShaped(r) {
		s.authLim.Failed(authlimit.Addr(r))
	}
	f.write(w, p)
}

// perUserShaped says whether the request's key has the shape of a per-user
// key (keys.Prefix).
func perUserShaped(r *http.Request) bool {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return strings.HasPrefix(k, keys.Prefix)
	}
	_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.HasPrefix(strings.TrimSpace(token), keys.Prefix)
}
