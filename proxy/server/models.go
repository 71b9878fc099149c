package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/alias"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// maxSeenModels bounds the pattern matches GET /v1/models remembers.
const maxSeenModels = 256

// seenModels are the model names clients asked for that a pattern
// model_name matched, in the order first seen.
type seenModels struct {
	mu    sync.Mutex
	names []string
	set   map[string]bool
}

func (m *seenModels) note(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set[name] || len(m.names) >= maxSeenModels {
		return
	}
	if m.set == nil {
		m.set = map[string]bool{}
	}
	m.set[name] = true
	m.names = append(m.names, name)
}

func (m *seenModels) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.names)
}

// quote is a JSON string of s (strconv.Quote is Go syntax: a control
// character would give invalid JSON; invalid UTF-8 becomes U+FFFD).
func quote(s string) string {
	b, _ := jsontext.AppendQuote(nil, s)
	return string(b)
}

// modelIDs lists the exact aliases in file order, then the pattern matches
// seen so far.
func (s *Server) modelIDs() []string {
	var ids []string
	have := map[string]bool{}
	for _, name := range s.cfg.Aliases() {
		if !alias.IsPattern(name) && !have[name] {
			have[name] = true
			ids = append(ids, name)
		}
	}
	for _, name := range s.seen.list() {
		if !have[name] {
			have[name] = true
			ids = append(ids, name)
		}
	}
	return ids
}

// limitsOf is what the proxy knows of an alias's limits: the context
// window (configured, else discovered; the smallest of its pool's
// backends, where a request may land on any) and the most a request's
// max_tokens can be (proxy_params.max_output_tokens, else the window).
// 0 is unknown.
func (s *Server) limitsOf(id string) (window, maxOut int) {
	for _, r := range s.cfg.Pool(s.poolOf(id)) {
		ri := s.withDiscovered(newRouteInfo(id, r))
		if w := ri.window; w > 0 && (window == 0 || w < window) {
			window = w
		}
		if m := r.MaxOutputTokens; m > 0 && (maxOut == 0 || m < maxOut) {
			maxOut = m
		}
	}
	if maxOut == 0 || (window > 0 && maxOut > window) {
		maxOut = window
	}
	return window, maxOut
}

func orNull(n int) string {
	if n <= 0 {
		return "null"
	}
	return strconv.Itoa(n)
}

// models answers GET /v1/models: in the Messages API's models-list shape
// (type, display_name, created_at, max_input_tokens, max_tokens; first_id,
// last_id, has_more, and the limit, after_id and before_id parameters)
// when the client sends an anthropic-version header, in the Chat shape
// otherwise, with Codex's model catalog beside it.
func (s *Server) models(w http.ResponseWriter, r *http.Request, f format) {
	ids := s.modelIDs()
	if k := keyOf(w); k != nil {
		// A per-user key sees the models it may use.
		ids = slices.DeleteFunc(ids, func(id string) bool { return !k.Allows(s.poolOf(id), id) })
	}
	w.Header().Set("Content-Type", "application/json")
	var b strings.Builder
	if r.Header.Get("Anthropic-Version") == "" {
		b.WriteString(`{"object":"list","data":[`)
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"id":` + quote(id) + `,"object":"model","created":0,"owned_by":"dragoman"}`)
		}
		b.WriteString("]")
		// Codex CLI's catalog beside them, for a provider that sets
		// model_catalog_url to this endpoint.
		catalog := make([]responses.CatalogModel, len(ids))
		for i, id := range ids {
			window, _ := s.limitsOf(id)
			catalog[i] = responses.NewCatalogModel(id, window, i+1)
		}
		if c, err := json.Marshal(catalog); err == nil {
			b.WriteString(`,"models":` + string(c))
		}
		b.WriteString("}")
		w.Write([]byte(b.String()))
		return
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			messagesFormat.write(w, problemf(invalidRequest, "limit: must be a number from 1 to 1000, got %q", v))
			return
		}
		limit = n
	}
	page, hasMore := ids, false
	switch after, before := q.Get("after_id"), q.Get("before_id"); {
	case after != "":
		i := slices.Index(ids, after)
		if i < 0 {
			messagesFormat.write(w, problemf(invalidRequest, "after_id: %q is not a listed model", after))
			return
		}
		page = ids[i+1:]
		hasMore = len(page) > limit
		page = page[:min(limit, len(page))]
	case before != "":
		i := slices.Index(ids, before)
		if i < 0 {
			messagesFormat.write(w, problemf(invalidRequest, "before_id: %q is not a listed model", before))
			return
		}
		page = ids[max(0, i-limit):i]
		hasMore = i-limit > 0
	default:
		hasMore = len(page) > limit
		page = page[:min(limit, len(page))]
	}
	b.WriteString(`{"data":[`)
	for i, id := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		q := quote(id)
		window, maxOut := s.limitsOf(id)
		b.WriteString(`{"type":"model","id":` + q + `,"display_name":` + q + `,"created_at":"1970-01-01T00:00:00Z","max_input_tokens":` +
			orNull(window) + `,"max_tokens":` + orNull(maxOut) + `}`)
	}
	b.WriteString(`],"has_more":` + strconv.FormatBool(hasMore) + `,"first_id":`)
	if len(page) == 0 {
		b.WriteString(`null,"last_id":null}`)
	} else {
		b.WriteString(quote(page[0]) + `,"last_id":` + quote(page[len(page)-1]) + "}")
	}
	w.Write([]byte(b.String()))
}
