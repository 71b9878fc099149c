package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/responses"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// format is the wire format of the endpoint a client called; every error
// goes back in it.
type format int

const (
	chatFormat format = iota
	messagesFormat
	responsesFormat
)

// problem is an error the proxy answers with, before it is rendered in the
// caller's format.
type problem struct {
	kind    kind
	message string
	// overflow, when set, is a context overflow: rendered in the words
	// each format's clients act on (package overflow), not message.
	overflow *overflow.Overflow
	// retryAfter, when set, is sent as the Retry-After header.
	retryAfter time.Duration
}

type kind int

const (
	invalidRequest kind = iota
	unauthenticated
	notFound
	methodNotAllowed
	tooLarge
	unsupportedMedia
	rateLimited
	overloaded // backend 503 after retries
	badGateway // backend unreachable after retries, or failing
	timedOut
	forbidden   // the key may not do that (a model it may not use)
	unavailable // the key store is unreachable: the key's limits cannot be counted
)

// statusOverloaded is the Messages format's status for an overloaded
// server, which servers that speak it may send too.
const statusOverloaded = 529

type rendering struct {
	status       int
	messagesType string
	chatStatus   int
	chatType     string
}

var renderings = map[kind]rendering{
	invalidRequest:   {400, messages.InvalidRequestError, 400, chat.InvalidRequestError},
	unauthenticated:  {401, messages.AuthenticationError, 401, chat.AuthenticationError},
	notFound:         {404, messages.NotFoundError, 404, chat.NotFoundError},
	methodNotAllowed: {405, messages.InvalidRequestError, 405, chat.InvalidRequestError},
	tooLarge:         {413, messages.RequestTooLarge, 413, chat.InvalidRequestError},
	unsupportedMedia: {415, messages.InvalidRequestError, 415, chat.InvalidRequestError},
	rateLimited:      {429, messages.RateLimitError, 429, chat.RateLimitError},
	overloaded:       {529, messages.OverloadedError, 503, chat.UnavailableError},
	badGateway:       {502, messages.APIError, 502, chat.ServerError},
	timedOut:         {504, messages.APIError, 504, chat.TimeoutError},
	forbidden:        {403, messages.PermissionError, 403, messages.PermissionError},
	unavailable:      {503, messages.APIError, 503, chat.UnavailableError},
}

func (f format) write(w http.ResponseWriter, p problem) {
	noteError(w, p.kind)
	r := renderings[p.kind]
	status, body := r.status, messages.MarshalError(r.messagesType, p.message)
	switch f {
	case chatFormat:
		status, body = r.chatStatus, chat.MarshalError(r.chatType, p.message)
	case responsesFormat:
		// The Responses error shape is OpenAI's, as Chat's is: the same
		// statuses and types.
		status, body = r.chatStatus, responses.MarshalError(r.chatType, "", p.message)
	}
	if p.overflow != nil {
		status, body = overflow.Status, p.overflow.MessagesError()
		switch f {
		case chatFormat:
			body = p.overflow.ChatError()
		case responsesFormat:
			body = responses.MarshalError(responses.InvalidRequestError, overflow.ChatCode, p.overflow.ChatMessage())
		}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if p.kind == overloaded || p.kind == unavailable {
		h.Set("Retry-After", "5")
	}
	if p.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((p.retryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(status)
	w.Write(body)
}

// keyProblem renders a request refused for its key.
func keyProblem(r *keys.Refusal) problem {
	k := map[keys.Reason]kind{keys.Unauthenticated: unauthenticated, keys.Forbidden: forbidden,
		keys.RateLimited: rateLimited, keys.BudgetSpent: rateLimited}[r.Reason]
	return problem{kind: k, message: r.Message, retryAfter: r.RetryAfter}
}

func problemf(k kind, format string, args ...any) problem {
	return problem{kind: k, message: fmt.Sprintf(format, args...)}
}

// backendProblem explains a failed exchange with a backend. Backend text is
// forwarded (clients read it to decide on retries); the backend's key never
// is.
func backendProblem(err *upstream.Error, route routeInfo) problem {
	switch err.Kind {
	case upstream.Timeout:
		return problemf(timedOut, "the backend for model %q did not answer within %s (proxy_params.%s): raise proxy_params.%s in the config, or pre-warm a cold backend with the warmer", route.alias, err.Limit, err.Timeout, err.Timeout)
	case upstream.Unreachable:
		return problemf(badGateway, "the backend for model %q at %s is unreachable: %s. Check that it runs and that proxy_params.api_base is right", route.alias, config.RedactedURL(route.apiBase), route.scrub(err.Err.Error()))
	case upstream.Canceled:
		return problemf(invalidRequest, "request cancelled by the client")
	}
	if p, ok := overflowProblem(err.Status, err.Body, route.window); ok {
		return p
	}
	text := route.scrub(backendText(err.Body))
	switch {
	case err.Status == http.StatusTooManyRequests:
		return problemf(rateLimited, "backend rate limit: %s", text)
	case err.Status == http.StatusServiceUnavailable || err.Status == statusOverloaded:
		return problemf(overloaded, "backend overloaded or loading (%d): %s", err.Status, text)
	case err.Status == http.StatusUnauthorized || err.Status == http.StatusForbidden:
		return problemf(badGateway, "the backend for model %q refused the proxy's key (%d): %s. Check proxy_params.api_key", route.alias, err.Status, text)
	case err.Status == http.StatusNotFound:
		return problemf(notFound, "NotFoundError: the backend for model %q answered 404: %s. Check that proxy_params.model names a model the backend serves", route.alias, text)
	case err.Status == http.StatusRequestEntityTooLarge:
		return problemf(tooLarge, "backend: %s", text)
	case err.Status/100 == 4:
		return problemf(invalidRequest, "backend rejected the request (%d): %s", err.Status, text)
	default:
		return problemf(badGateway, "backend error (%d): %s", err.Status, text)
	}
}

// overflowProblem recognizes a backend's context overflow (status and
// body) and completes its numbers with the route's known window (0 when
// unknown).
func overflowProblem(status int, body []byte, window int) (problem, bool) {
	o, ok := overflow.Detect(status, body)
	if !ok {
		return problem{}, false
	}
	return newOverflowProblem(o, window), true
}

func newOverflowProblem(o overflow.Overflow, window int) problem {
	o = o.WithWindow(window)
	return problem{kind: invalidRequest, message: o.Message(), overflow: &o}
}

func backendText(body []byte) string {
	if msg := chat.ParseError(body); msg != "" {
		return msg
	}
	body = bytes.TrimSpace(body)
	if len(body) > 2048 {
		body = body[:2048]
	}
	if len(body) == 0 {
		return "(no message)"
	}
	return string(body)
}

// scrub removes a secret from text that is about to leave the proxy.
func scrub(text, secret string) string {
	if len(secret) < 4 {
		return text
	}
	return string(bytes.ReplaceAll([]byte(text), []byte(secret), redacted))
}

var redacted = []byte("[redacted]")

// scrubErrors wraps a stream relay's feed so that the backend's key, should
// the backend echo it in an error event (a data line whose JSON has an
// "error" member: Chat's {"error":{…}}, Messages' {"type":"error",
// "error":{…}}), never reaches the client. Model output (text, tool
// arguments, any other event) passes unaltered. feed emits whole lines.
func scrubErrors(feed func(dst, p []byte) ([]byte, error), secret string) func(dst, p []byte) ([]byte, error) {
	if len(secret) < 4 {
		return feed
	}
	key := []byte(secret)
	return func(dst, p []byte) ([]byte, error) {
		start := len(dst)
		out, err := feed(dst, p)
		if !bytes.Contains(out[start:], key) {
			return out, err
		}
		var scrubbed []byte
		for line := range bytes.Lines(out[start:]) {
			if bytes.Contains(line, key) && isErrorEvent(line) {
				line = bytes.ReplaceAll(line, key, redacted)
			}
			scrubbed = append(scrubbed, line...)
		}
		return append(out[:start], scrubbed...), err
	}
}

// isErrorEvent says whether an event stream's line is a data line whose
// JSON object has an "error" member.
func isErrorEvent(line []byte) bool {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return false
	}
	var event struct {
		Error jsontext.Value `json:"error"`
	}
	return json.Unmarshal(bytes.TrimSpace(data), &event) == nil && len(event.Error) > 0
}

func chatErrorBody(p problem) []byte {
	return chat.MarshalError(renderings[p.kind].chatType, p.message)
}

// scrub takes the route's secrets out of a text meant for a client or a
// log: its key, and the credentials its api_base may hold.
func (r routeInfo) scrub(text string) string {
	return config.ScrubCredentials(scrub(text, r.apiKey), r.apiBase)
}

// scrubRoute is routeInfo.scrub for a route of the config.
func scrubRoute(text string, r config.Route) string {
	return config.ScrubCredentials(scrub(text, r.APIKey), r.APIBase)
}
