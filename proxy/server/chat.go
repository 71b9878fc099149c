package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// commitStream sends the 200 and the headers of an event stream.
func commitStream(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// chatCompletions passes a Chat Completions request through to the
// backend of its alias: only the model is rewritten (and system turns
// folded for backends without a system role), and the answer comes back
// with the alias as its model.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, f format) {
	x, ok := s.prepareFor(w, r, f, translate.ChatOnChatRequest, translate.ChatOnMessagesRequest)
	if !ok {
		return
	}
	resp, err := s.send(x)
	route := x.route
	if err != nil {
		s.chatBackendError(w, r, err, route)
		return
	}
	if route.Protocol == config.ProtocolMessages {
		s.chatFromMessages(w, r, x, resp)
		return
	}
	if !x.req.Stream {
		raw, err := readResponse(resp)
		x.finish(err)
		if err != nil {
			bufpool.Put(raw)
			s.chatBackendError(w, r, err, route)
			return
		}
		x.noteUsage(w, chat.ParseUsage(raw))
		out, err := translate.ChatResponseModel(raw, route.alias)
		if err != nil {
			out = raw // not JSON: passed on as the backend sent it
		} else {
			bufpool.Put(raw)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.Write(out)
		bufpool.Put(out) // written: the response writer keeps no reference
		return
	}
	defer resp.Body.Close()
	commitStream(w)
	cs := translate.NewChatOnChatStream(route.alias)
	err = relay(w, r, resp.Body, scrubErrors(cs.Feed, route.apiKey), cs.Done, nil, 0)
	x.finish(err)
	x.noteUsage(w, cs.Usage())
	if err != nil && r.Context().Err() == nil {
		// The status is sent; the Chat client learns of the failure from an
		// error chunk in its own shape.
		p := streamProblem(err, route)
		noteError(w, p.kind)
		w.Write([]byte("data: " + string(chatErrorBody(p)) + "\n\n"))
		s.log.Warn("chat stream ended early", "model", route.alias, "err", route.scrub(err.Error()))
	}
}

// chatBackendError answers a failed backend exchange on the Chat endpoint:
// the backend's own Chat-format answer passes through (its key scrubbed);
// what the proxy detected itself is rendered by the table.
func (s *Server) chatBackendError(w http.ResponseWriter, r *http.Request, err error, route routeInfo) {
	if p, ok := balanceProblem(err); ok {
		chatFormat.write(w, p)
		return
	}
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		chatFormat.write(w, problemf(badGateway, "reading the backend's answer: %v", err))
		return
	}
	if r.Context().Err() != nil {
		return
	}
	if ue.Kind == upstream.Status && route.Protocol == config.ProtocolMessages {
		// A Messages backend's error body is not in the Chat shape.
		chatFormat.write(w, backendProblem(ue, route))
		return
	}
	if ue.Kind == upstream.Status {
		if p, ok := overflowProblem(ue.Status, ue.Body, route.window); ok {
			s.log.Info("context overflow", "model", route.alias, "backend", route.scrub(backendText(ue.Body)))
			chatFormat.write(w, p)
			return
		}
		noteError(w, backendProblem(ue, route).kind)
		body := []byte(route.scrub(string(ue.Body)))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(ue.Status)
		w.Write(body)
		return
	}
	chatFormat.write(w, backendProblem(ue, route))
}

// streamProblem explains an error that ended a stream after its start.
func streamProblem(err error, route routeInfo) problem {
	var ue *upstream.Error
	if errors.As(err, &ue) {
		return backendProblem(ue, route)
	}
	var be *translate.BackendError
	if errors.As(err, &be) {
		if o, ok := overflow.DetectText(be.Message); ok {
			return newOverflowProblem(o, route.window)
		}
		return problemf(badGateway, "backend error mid-stream: %s", route.scrub(be.Message))
	}
	return problemf(badGateway, "the backend stream broke off: %s", route.scrub(err.Error()))
}
