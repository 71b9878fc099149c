package tracing

import (
	"context"
	"net/http"
)

// RequestCalls makes on t the calls the server makes for one request with
// one backend attempt: Start (the server span), Attempts (the hook of the
// backend client, called when not nil) and End. With tracing off (t nil)
// these calls are all tracing costs a request: the tests and make bench
// measure them with t nil (no allocation, a few nanoseconds).
func RequestCalls(t *Tracer, ctx context.Context, h http.Header) {
	ctx, q := t.Start(ctx, "messages", h)
	if attempt := t.Attempts("backend", "model", "http://127.0.0.1:8000/v1"); attempt != nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:8000/v1/chat/completions", nil)
		attempt(req)(http.StatusOK, nil)
	}
	q.End(Outcome{Alias: "alias", Backend: "backend", Status: http.StatusOK, Stream: true})
}
