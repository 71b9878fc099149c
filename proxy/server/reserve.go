package server

import (
	"errors"

	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// storeProblem is the answer to a request whose key's limits could not be
// counted: the key store (Postgres) did not answer. The driver's text
// goes to the log (logStoreError), never to the client.
var storeProblem = problem{kind: unavailable, message: "the key store is unreachable: this key's limits cannot be counted now; retry in a few seconds (the proxy's admin sees why in its log)"}

// logStoreError logs why the key store did not answer (the password of
// its database_url is not in it: package keys takes it out).
func (s *Server) logStoreError(err error) {
	if errors.Is(err, keys.ErrUnreachable) {
		s.log.Error("key store unreachable: a request of a key with limits refused (503)", "err", err)
	}
}

// reserve counts the request against its per-user key's limits, once its
// body is translated for the backend held: it reserves the request's
// estimated prompt and the max_tokens it is sent with (reservedTokens)
// against the key's tpm and budget (keys.Gate.Reserve), which the
// request's usage replaces when it is recorded (recordUsage).
func (x *exchange) reserve() error {
	if x.key == nil {
		return nil
	}
	if x.obs == nil {
		// Not observed, so not recorded: counted, nothing reserved.
		return x.s.gate.Admit(x.ctx, x.key, x.pool, x.alias)
	}
	res, err := x.s.gate.Reserve(x.ctx, x.key, x.reservedTokens(), x.pool, x.alias)
	if err != nil {
		return err
	}
	x.obs.reservation = res
	return nil
}

// reservedTokens is what a request reserves: its prompt (the translation's
// estimate, corrected by what the backend's counts taught, else four bytes
// a token of the body) and the max_tokens it is sent with, after the
// clamp. A request without max_tokens reserves what the backend may
// write: its max_output_tokens, else the rest of its window, else
// translate.DefaultMessagesMaxTokens.
func (x *exchange) reservedTokens() int64 {
	prompt := x.route.target.ScalePrompt(x.req.InputTokens)
	if x.req.InputTokens <= 0 {
		prompt = (len(x.body) + 3) / 4
	}
	out := x.req.MaxTokens
	if out <= 0 {
		switch {
		case x.route.MaxOutputTokens > 0:
			out = x.route.MaxOutputTokens
		case x.route.window > prompt:
			out = x.route.window - prompt
		default:
			out = translate.DefaultMessagesMaxTokens
		}
	}
	return int64(prompt) + int64(out)
}
