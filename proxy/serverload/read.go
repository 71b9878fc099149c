package serverload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Server names, as package discover and proxy_params.server write them.
const (
	serverVLLM     = "vLLM"
	serverSGLang   = "SGLang"
	serverLlamaCpp = "llama.cpp"
	serverOllama   = "Ollama"
	serverLMStudio = "LM Studio"
)

// Target is a backend to read: where it is, its key, its model and which
// server it is ("" when neither the config nor discovery knows).
type Target struct {
	APIBase, APIKey, Model, Server string
}

// Exposes reports whether a server of this kind can expose its load: not
// Ollama nor LM Studio, whose APIs say nothing of it.
func Exposes(server string) bool {
	return server != serverOllama && server != serverLMStudio
}

// maxBody bounds an answer: a vLLM /metrics is tens of kilobytes.
const maxBody = 4 << 20

// Read asks t's server for its load once: GET {root}/metrics (root is
// api_base without /v1), and for llama.cpp, or a server not known, GET
// {root}/slots when /metrics says nothing. ErrNoLoad: the server exposes
// none (Ollama and LM Studio are not asked).
func Read(ctx context.Context, client *http.Client, t Target) (Load, error) {
	if !Exposes(t.Server) {
		return Load{}, ErrNoLoad
	}
	if client == nil {
		client = http.DefaultClient
	}
	root := strings.TrimSuffix(strings.TrimRight(t.APIBase, "/"), "/v1")
	body, err := get(ctx, client, root+"/metrics", t.APIKey)
	if err == nil {
		l, perr := ParseMetrics(body, t.Model)
		if perr == nil {
			return l, nil
		}
		err = perr
	}
	if t.Server == serverLlamaCpp || t.Server == "" {
		if body, serr := get(ctx, client, root+"/slots", t.APIKey); serr == nil {
			if l, perr := ParseSlots(body); perr == nil {
				return l, nil
			}
		}
	}
	if ctx.Err() != nil {
		return Load{}, ctx.Err()
	}
	var se *statusError
	if errors.As(err, &se) || errors.Is(err, ErrNoLoad) {
		return Load{}, fmt.Errorf("%w (%v)", ErrNoLoad, err)
	}
	return Load{}, err
}

type statusError struct {
	url    string
	status int
}

func (e *statusError) Error() string { return fmt.Sprintf("GET %s answered %d", e.url, e.status) }

func get(ctx context.Context, client *http.Client, url, key string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{url, resp.StatusCode}
	}
	return readAll(resp.Body, maxBody)
}

// DefaultClient is the client the poller reads with: one idle connection
// per server, a short timeout.
var DefaultClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}}
