package server

import (
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/dialect"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// fitted rewrites a translated request for the dialect of the backend's
// server (package dialect: tool schemas llama.cpp can compile, a named
// tool_choice it honours), and says at debug level what it changed.
func (x *exchange) fitted(req translate.BackendRequest, err error) (translate.BackendRequest, error) {
	if err != nil || !dialect.Rewrites(x.route.server) {
		return req, err
	}
	f := dialect.Chat
	if x.route.Protocol == config.ProtocolMessages {
		f = dialect.Messages
	}
	body, applied := dialect.Fit(x.route.target.Memo, x.route.server, f, req.Body)
	if body == nil {
		return req, nil
	}
	bufpool.Put(req.Body)
	req.Body = body
	backend := ""
	if x.lease != nil {
		backend = x.lease.Backend.Name
	}
	x.s.log.Debug("request rewritten for the backend's server", "backend", backend, "server", x.route.server, "model", x.alias, "rewrites", applied)
	return req, nil
}
