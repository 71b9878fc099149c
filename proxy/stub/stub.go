// Package stub is a deterministic Chat Completions backend for the demo
// stack, tests and benchmarks; with Options.Protocol "messages" it serves
// the Messages format too (see messages.go). It answers like a local model server (text,
// usage, tool calls, reasoning, streamed or not), can act cold, loading or
// slow, and records every request it receives so tests can read them.
//
// What it answers is chosen by the last user message:
//
//	stub:tool            one call of the first offered tool (also when tool_choice demands a call)
//	stub:shell CMD       a call of the client's shell tool (exec_command, shell_command or shell) running CMD
//	stub:parallel        two calls of the first offered tool, fragments interleaved
//	stub:reasoning       reasoning in the "reasoning" field, then text
//	stub:reasoning_content  the same in "reasoning_content"
//	stub:thinking        with another marker: reasoning_content (a thinking block) before that answer, tool calls included
//	stub:fixture:NAME    replays backends/NAME from package fixtures verbatim (streams)
//	stub:error-midstream text, then an error object in the stream
//	stub:die             text, then the connection is cut
//	a checkpoint summary request (a compaction prompt): "stub-summary: …"; a conversation that carries one is answered in text, its work not done again
//	anything else        a short text answer that echoes the user
//
// It also answers as the web search providers do (search.go), so that one
// stub serves a proxy's search_settings too.
//
// Options make it a stricter server: a context window (vLLM's max_model_len
// and its 400 over it), a key, one model only, a model that never calls
// tools.
package stub

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options shape the backend's behaviour.
type Options struct {
	ColdStart       time.Duration // the first request waits this long; requests meanwhile wait with it
	Loading         time.Duration // answer 503 "Loading model" until this long after start
	LoadingRequests int           // answer 503 "Loading model" to this many first answer requests, whatever the time
	FirstTokenDelay time.Duration // delay before every answer's first byte
	EventDelay      time.Duration // delay between stream events
	Events          int           // stream text in this many events (default 8)
	Tokenize        bool          // serve vLLM's POST /tokenize
	Model           string        // model name reported when a request names none (default stub-model)
	// ContextWindow, when set, is the model's window, as vLLM runs one:
	// GET /v1/models reports it as max_model_len, and a request whose
	// prompt (a token per 4 bytes of text) and max_tokens exceed it gets
	// vLLM's 400.
	ContextWindow int
	APIKey        string // when set, requests without "Authorization: Bearer APIKey" get vLLM's 401
	StrictModel   bool   // answer 404, as vLLM does, to a model other than Model
	NoTools       bool   // a model that never calls tools: text even when a call is demanded
	TextCalls     string // a model that writes its calls as text: TextCallsHermes or TextCallsQwen3Coder (textcalls.go)
	Protocol      string // ProtocolMessages: also serve the Messages format (see messages.go)
	// SearchDelay is how long a search for "stub-slow" waits (search.go);
	// 0: a minute.
	SearchDelay time.Duration
	// PadEvents: a text answer shorter than Events characters is repeated
	// up to Events of them, so that a stream has Events events and lasts
	// Events × EventDelay (the bench's slow streams).
	PadEvents bool
	// GPU, with Slots set, answers Chat Completions as a model of a GPU
	// server (gpu.go); its request bodies are not recorded.
	GPU GPU
}

// Request is one request the backend received.
type Request struct {
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	Header    http.Header     `json:"headers"`
	Body      json.RawMessage `json:"body,omitempty"`
	Time      time.Time       `json:"time"`
	Done      time.Time       `json:"done"`
	Cancelled bool            `json:"cancelled"`
}

// Server is the stub backend. It is an http.Handler.
type Server struct {
	opts    Options
	started time.Time
	mux     *http.ServeMux

	mu       sync.Mutex
	requests []Request
	loaded   int       // answer requests that were told "Loading model" under LoadingRequests
	warmAt   time.Time // when the cold start ends; zero until the first request

	gpu *gpuModel // nil unless Options.GPU.Slots
}

// New returns a stub backend that starts now.
func New(opts Options) *Server {
	if opts.Events <= 0 {
		opts.Events = 8
	}
	if opts.Model == "" {
		opts.Model = "stub-model"
	}
	s := &Server{opts: opts, started: time.Now(), mux: http.NewServeMux()}
	chat := s.chatCompletions
	if opts.GPU.Slots > 0 {
		s.gpu = newGPU(opts.GPU, opts.Model)
		chat = s.gpuChat
		s.gpuRoutes()
	}
	s.mux.HandleFunc("POST /v1/chat/completions", chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	s.mux.HandleFunc("GET /_stub/requests", s.listRequests)
	s.mux.HandleFunc("DELETE /_stub/requests", s.clearRequests)
	if opts.Tokenize {
		s.mux.HandleFunc("POST /tokenize", s.tokenize)
	}
	s.searchRoutes()
	if opts.Protocol == ProtocolMessages {
		s.mux.HandleFunc("POST /v1/messages", s.messages)
		s.mux.HandleFunc("POST /v1/messages/count_tokens", s.countMessageTokens)
	}
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey && !strings.HasPrefix(r.URL.Path, "/_stub/") && r.URL.Path != "/healthz" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"Unauthorized"}`))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Reset forgets the recorded requests.
func (s *Server) Reset() {
	s.mu.Lock()
	s.requests = nil
	s.mu.Unlock()
}

func (s *Server) record(r *http.Request, body []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Time: time.Now()}
	if s.gpu == nil && json.Valid(body) {
		rec.Body = json.RawMessage(body)
	}
	s.requests = append(s.requests, rec)
	return len(s.requests) - 1
}

func (s *Server) finish(i int, cancelled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < len(s.requests) {
		s.requests[i].Done = time.Now()
		s.requests[i].Cancelled = cancelled
	}
}

// coldWait returns how long a request arriving now waits for the cold start.
func (s *Server) coldWait(now time.Time) time.Duration {
	if s.opts.ColdStart <= 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warmAt.IsZero() {
		s.warmAt = now.Add(s.opts.ColdStart)
	}
	return s.warmAt.Sub(now)
}

func (s *Server) listRequests(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.Requests())
}

func (s *Server) clearRequests(w http.ResponseWriter, _ *http.Request) {
	s.Reset()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   []map[string]any{s.modelCard()},
	})
}

func (s *Server) modelCard() map[string]any {
	card := map[string]any{"id": s.opts.Model, "object": "model", "created": 0, "owned_by": "stub"}
	if s.opts.ContextWindow > 0 {
		card["owned_by"], card["max_model_len"] = "vllm", s.opts.ContextWindow
	}
	return card
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Prompt   string          `json:"prompt"`
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad JSON: "+err.Error())
		return
	}
	n := countTokens(req.Prompt) + countTokens(string(req.Messages))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"count": n, "max_model_len": 32768, "tokens": make([]int, n)})
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": status}})
}

// sleep waits d or until the request is gone; it reports whether the
// request is still wanted.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// loading reports whether an answer request arriving at now gets 503
// "Loading model": within Loading of the start, or among the first
// LoadingRequests.
func (s *Server) loading(now time.Time) bool {
	if s.opts.Loading > 0 && now.Sub(s.started) < s.opts.Loading {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded < s.opts.LoadingRequests {
		s.loaded++
		return true
	}
	return false
}
