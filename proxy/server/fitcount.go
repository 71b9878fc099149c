package server

import (
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// templateTokens is what a backend's chat template adds to each part of a
// prompt its tokenizer counted without it (the role markers around a
// message): counted puts this many beside each.
const templateTokens = 8

// counted clamps max_tokens from the backend's own count of the prompt
// when the estimate put it at the window's edge: a Messages request to a
// Chat backend whose server serves a tokenizer (vLLM, SGLang, llama.cpp:
// package tokenize), whose estimated prompt, max_tokens and the
// estimate's margin reach the window. The estimate, even corrected by
// what the backend's counts taught (promptScales), errs by the kind of
// text: a session's turns (tools' JSON and prose) teach a ratio its
// compaction request (prose alone, no tools) does not keep, and a
// max_tokens clamped from it is refused once (a wasted prefill) before
// refit sends it again. The count, with the template's tokens per part,
// gives the room (translate.RoomFor) at the first attempt; a prompt the
// count puts over the window is a *translate.ContextOverflowError, sent
// to no backend. Without a tokenizer, or a count, the request is left as
// it was.
func (x *exchange) counted(req translate.BackendRequest, err error) (translate.BackendRequest, error) {
	w := x.route.window
	if err != nil || !x.messagesBody || x.lease == nil || w <= 0 || req.MaxTokens <= 0 || x.route.Protocol == config.ProtocolMessages {
		return req, err
	}
	prompt := x.route.target.ScalePrompt(req.InputTokens)
	if prompt+prompt/8+req.MaxTokens+64 < w {
		return req, nil // far from the window's edge: the estimate's margin holds
	}
	b := tokenizer(x.route)
	if !x.s.counter.Has(b) {
		return req, nil
	}
	tc, derr := translate.DecodeTokenCount(x.body)
	if derr != nil {
		return req, nil
	}
	parts := tc.TokenizeParts()
	n, ok := x.s.counter.Count(x.ctx, b, parts)
	if !ok {
		return req, nil
	}
	counted := n + templateTokens*len(parts)
	if counted >= w {
		bufpool.Put(req.Body)
		return translate.BackendRequest{}, &translate.ContextOverflowError{Tokens: counted, Window: w}
	}
	room := translate.RoomFor(w, counted)
	if room < 1 || room >= req.MaxTokens {
		return req, nil
	}
	body, ok := translate.WithMaxTokens(req.Body, room)
	if !ok {
		return req, nil
	}
	bufpool.Put(req.Body)
	x.s.log.Debug("max_tokens clamped from the backend's count of the prompt", "model", x.alias, "backend", x.lease.Backend.Name,
		"estimate", prompt, "counted", counted, "context_window", w, "max_tokens", room, "was", req.MaxTokens)
	req.Body, req.MaxTokens = body, room
	return req, nil
}
