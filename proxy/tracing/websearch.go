package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of a web search span.
const (
	AttrSearchProvider = "dragoman.search.provider"
	AttrSearchResults  = "dragoman.search.results"
	AttrSearchError    = "dragoman.search.error"
)

// Search opens the client span of one web search at provider, under the
// request's server span (found in ctx), and returns what ends it: the
// number of results, and the error code ("" when it succeeded). The query
// is not an attribute: it is the user's text. Nil when t is nil.
func (t *Tracer) Search(ctx context.Context, provider string) (done func(results int, code string)) {
	if t == nil {
		return nil
	}
	_, span := t.tracer.Start(ctx, "web_search "+provider, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String(AttrSearchProvider, provider)))
	return func(results int, code string) {
		span.SetAttributes(attribute.Int(AttrSearchResults, results))
		if code != "" {
			span.SetAttributes(attribute.String(AttrSearchError, code), attribute.String("error.type", code))
			span.SetStatus(codes.Error, code)
		}
		span.End()
	}
}
