// Package tracing owns the proxy's OpenTelemetry traces: one server span per
// API request and one client span per attempt at a backend, with the GenAI
// semantic-convention attributes, exported with OTLP over HTTP, and the W3C
// trace context sent to the backend in a traceparent header. Tracing is off
// unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set; off, New returns a nil *Tracer, whose methods do nothing and
// allocate nothing. The exporter reads the other standard OTEL_* variables
// (headers, timeout, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) itself.
//
// Spans never carry prompt or answer text, keys or session ids: only model
// names, backend names, token counts, statuses and timings.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// EndpointVariables turn tracing on: the OTLP endpoint of all signals, or of
// traces alone.
var EndpointVariables = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}

// Attribute keys beyond the GenAI conventions.
const (
	AttrBackend    = "dragoman.backend"
	AttrEndpoint   = "dragoman.endpoint"
	AttrRetries    = "dragoman.retries"
	AttrAttempt    = "dragoman.attempt"
	AttrStream     = "dragoman.stream"
	AttrFirstToken = "dragoman.time_to_first_token_seconds"
)

// Operation is gen_ai.operation.name: every endpoint the proxy serves is a
// chat completion in the conventions' terms.
const Operation = "chat"

// Tracer starts the proxy's spans. A nil *Tracer is off.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
}

// New returns a Tracer exporting to the OTLP/HTTP endpoint the environment
// names, or nil when neither endpoint variable is set. service is the
// default service.name (OTEL_SERVICE_NAME overrides it).
func New(ctx context.Context, getenv func(string) (string, bool), service, version string) (*Tracer, error) {
	on := false
	for _, name := range EndpointVariables {
		if v, ok := getenv(name); ok && v != "" {
			on = true
		}
	}
	if !on {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry OTLP/HTTP exporter: %w (check OTEL_EXPORTER_OTLP_ENDPOINT: a URL such as http://collector:4318)", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service), attribute.String("service.version", version)),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/dragoman-dev/dragoman/proxy"), prop: propagation.TraceContext{}}, nil
}

// Shutdown sends the spans not yet exported and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Request is the trace of one API request: its server span, and the client
// span of the backend attempt that answered, which stays open until the
// request ends so that it covers the whole stream.
type Request struct {
	t    *Tracer
	span trace.Span

	mu       sync.Mutex
	attempts int
	answered trace.Span // the attempt that got a 2xx, ended by End
}

type requestKey struct{}

// Start opens the server span of a request, continuing the caller's trace
// when its headers carry one. The returned context carries the span to the
// backend attempts (Attempts).
func (t *Tracer) Start(ctx context.Context, endpoint string, h http.Header) (context.Context, *Request) {
	if t == nil {
		return ctx, nil
	}
	ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
	ctx, span := t.tracer.Start(ctx, Operation, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", Operation), attribute.String(AttrEndpoint, endpoint)))
	q := &Request{t: t, span: span}
	return context.WithValue(ctx, requestKey{}, q), q
}

// Outcome is what a request came to, for its spans.
type Outcome struct {
	Alias        string // gen_ai.request.model of the server span ("" when none was resolved)
	Backend      string
	BackendModel string
	Status       int
	ErrorType    string // "" or "none" when it succeeded
	MaxTokens    int
	Stream       bool
	HaveUsage    bool
	InputTokens  int
	OutputTokens int
	FirstToken   time.Duration // 0: no content token relayed
}

// End closes the request's spans.
func (q *Request) End(o Outcome) {
	if q == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.Int("http.response.status_code", o.Status),
		attribute.Bool(AttrStream, o.Stream),
	}
	if o.Alias != "" {
		q.span.SetName(Operation + " " + o.Alias)
		attrs = append(attrs, attribute.String("gen_ai.request.model", o.Alias), attribute.String("gen_ai.response.model", o.Alias))
	}
	if o.Backend != "" {
		attrs = append(attrs, attribute.String(AttrBackend, o.Backend))
	}
	if o.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", o.MaxTokens))
	}
	usage := []attribute.KeyValue(nil)
	if o.HaveUsage {
		usage = []attribute.KeyValue{attribute.Int("gen_ai.usage.input_tokens", o.InputTokens), attribute.Int("gen_ai.usage.output_tokens", o.OutputTokens)}
	}
	if o.FirstToken > 0 {
		attrs = append(attrs, attribute.Float64(AttrFirstToken, o.FirstToken.Seconds()))
	}
	q.mu.Lock()
	attempts, answered := q.attempts, q.answered
	q.answered = nil
	q.mu.Unlock()
	if attempts > 0 {
		attrs = append(attrs, attribute.Int(AttrRetries, attempts-1))
	}
	failed := o.ErrorType != "" && o.ErrorType != "none"
	if answered != nil {
		answered.SetAttributes(usage...)
		if o.FirstToken > 0 {
			answered.SetAttributes(attribute.Float64(AttrFirstToken, o.FirstToken.Seconds()))
		}
		if failed {
			answered.SetStatus(codes.Error, o.ErrorType)
		}
		answered.End()
	}
	q.span.SetAttributes(attrs...)
	q.span.SetAttributes(usage...)
	if failed {
		q.span.SetAttributes(attribute.String("error.type", o.ErrorType))
		q.span.SetStatus(codes.Error, o.ErrorType)
	}
	q.span.End()
}

// Attempt is called by the backend client before each attempt, with the
// request about to be sent; it returns what to call with the attempt's
// outcome: the backend's status (0 when none came) and the error.
type Attempt func(req *http.Request) (done func(status int, err error))

// Attempts returns the Attempt hook for one backend model: it opens a
// client span under the request's server span (found in req's context) and
// puts its traceparent in req's headers. Nil when t is nil.
func (t *Tracer) Attempts(backend, backendModel, apiBase string) Attempt {
	if t == nil {
		return nil
	}
	var address string
	var port int
	if u, err := url.Parse(apiBase); err == nil {
		address = u.Hostname()
		port, _ = strconv.Atoi(u.Port())
	}
	base := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", Operation),
		attribute.String("gen_ai.request.model", backendModel),
		attribute.String(AttrBackend, backend),
		attribute.String("server.address", address),
	}
	if port > 0 {
		base = append(base, attribute.Int("server.port", port))
	}
	name := Operation + " " + backendModel
	return func(req *http.Request) func(int, error) {
		q, _ := req.Context().Value(requestKey{}).(*Request)
		n := 0
		if q != nil {
			q.mu.Lock()
			n = q.attempts
			q.attempts++
			q.mu.Unlock()
		}
		ctx, span := t.tracer.Start(req.Context(), name, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(base...), trace.WithAttributes(attribute.Int(AttrAttempt, n)))
		t.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
		return func(status int, err error) {
			if status > 0 {
				span.SetAttributes(attribute.Int("http.response.status_code", status))
			}
			if err == nil && status/100 == 2 {
				span.SetAttributes(attribute.String("gen_ai.response.model", backendModel))
				if q != nil {
					q.mu.Lock()
					earlier := q.answered
					q.answered = span
					q.mu.Unlock()
					if earlier != nil {
						// A request of several backend turns (a web
						// search loop): the earlier turn is over.
						earlier.End()
					}
					return // ended with the request, so that it covers the stream
				}
			} else {
				span.SetStatus(codes.Error, attemptError(status, err))
				span.SetAttributes(attribute.String("error.type", attemptError(status, err)))
			}
			span.End()
		}
	}
}

func attemptError(status int, err error) string {
	if status > 0 {
		return fmt.Sprint(status)
	}
	if err != nil {
		return "unreachable"
	}
	return "error"
}
