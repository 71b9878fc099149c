package warm

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// keepAlive is what a server says of how long it keeps a model loaded.
type keepAlive struct {
	// expires is when Ollama unloads the model unless it is asked again
	// (its keep-alive, OLLAMA_KEEP_ALIVE, default 5m, counted from the
	// last request); zero when not known.
	expires time.Time
	// notOllama: GET /api/ps is not Ollama's list of loaded models.
	notOllama bool
}

// keepAlive reads the model's expires_at from Ollama's GET /api/ps (at
// the server's root, beside its /v1). A server that answers 404 or not in
// Ollama's shape is notOllama; an error of the moment says nothing.
func (w *Warmer) keepAlive(ctx context.Context, t Target) keepAlive {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	root := strings.TrimSuffix(t.APIBase, "/v1")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/api/ps", nil)
	if err != nil {
		return keepAlive{notOllama: true}
	}
	req.Header.Set("Authorization", "Bearer "+t.APIKey)
	req.Header.Set("User-Agent", "dragoman-warmer")
	client := w.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return keepAlive{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return keepAlive{notOllama: resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed}
	}
	var ps struct {
		Models *[]struct {
			Name      string    `json:"name"`
			Model     string    `json:"model"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"models"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ps); err != nil || ps.Models == nil {
		return keepAlive{notOllama: true}
	}
	for _, m := range *ps.Models {
		if sameOllamaModel(m.Name, t.Model) || sameOllamaModel(m.Model, t.Model) {
			w.log().Debug("keep-alive read", slog.String("model", t.Model), slog.String("api_base", t.Base()), slog.Time("expires_at", m.ExpiresAt))
			return keepAlive{expires: m.ExpiresAt}
		}
	}
	return keepAlive{}
}

// sameOllamaModel compares model names as Ollama does: "name" is
// "name:latest".
func sameOllamaModel(a, b string) bool {
	norm := func(s string) string {
		if !strings.Contains(s, ":") {
			return s + ":latest"
		}
		return s
	}
	return a != "" && norm(a) == norm(b)
}
