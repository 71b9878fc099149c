package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/discover"
	"github.com/dragoman-dev/dragoman/proxy/internal/tick"
)

// backendModel is one model of one backend: what discovery learns about.
type backendModel struct {
	apiBase, model string
}

// withDiscovered is a route completed with what discovery learnt of its
// backend model: the context window when the config sets none, and a
// backend model that cannot read images.
func (s *Server) withDiscovered(r routeInfo) routeInfo {
	r.target.PromptScale = s.scales.get(backendModel{r.apiBase, r.BackendModel})
	s.knownMu.RLock()
	info, ok := s.known[backendModel{r.apiBase, r.BackendModel}]
	s.knownMu.RUnlock()
	if !ok {
		return r
	}
	if r.target.ContextWindow == 0 {
		r.target.ContextWindow = info.ContextWindow
		r.window = info.ContextWindow
	}
	if info.Vision == discover.No {
		r.target.NoVision = true
	}
	if r.server == "" {
		r.server = info.Server
	}
	return r
}

// ServerOf is the server discovery found at apiBase for model ("" when
// not known): the balancer reads a backend's load by its kind.
func (s *Server) ServerOf(apiBase, model string) string {
	s.knownMu.RLock()
	defer s.knownMu.RUnlock()
	return s.known[backendModel{apiBase, model}].Server
}

// discoverTimeout bounds the discovery of one backend model.
const discoverTimeout = 10 * time.Second

// Discover asks each distinct backend model of the config what it is
// (package discover) and keeps what it learns: requests translated after
// it returns use the windows found. A backend that is down, or refuses the
// key, is logged with its fix; what it knew before is kept.
func (s *Server) Discover(ctx context.Context) {
	var wg sync.WaitGroup
	seen := map[backendModel]bool{}
	for _, r := range s.cfg.Routes {
		key := backendModel{r.APIBase, r.BackendModel}
		if seen[key] {
			continue
		}
		seen[key] = true
		wg.Add(1)
		go func(apiKey string) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
			defer cancel()
			info, err := discover.Probe(ctx, nil, key.apiBase, apiKey, key.model)
			if err != nil {
				s.logProbeError(key, err)
				return
			}
			s.knownMu.Lock()
			before, seen := s.known[key]
			info = discover.Keep(before, info)
			s.known[key] = info
			s.knownMu.Unlock()
			// Logged when it changes; every round repeats it at debug level.
			level := slog.LevelDebug
			if !seen || !sameInfo(before, info) {
				level = slog.LevelInfo
			}
			s.log.Log(ctx, level, "backend discovered", "api_base", config.RedactedURL(key.apiBase), "model", key.model, "server", info.Server,
				"context_window", info.ContextWindow, "window_source", info.WindowSource, "vision", info.Vision.String())
		}(r.APIKey)
	}
	wg.Wait()
}

// sameInfo says whether two discoveries of a backend model found the same.
func sameInfo(a, b discover.Info) bool {
	return a.Server == b.Server && slices.Equal(a.Models, b.Models) && a.ContextWindow == b.ContextWindow &&
		a.WindowSource == b.WindowSource && a.Vision == b.Vision
}

func (s *Server) logProbeError(key backendModel, err error) {
	var he *discover.HTTPError
	switch {
	case errors.As(err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden):
		s.log.Warn("backend refused the key: check proxy_params.api_key in "+s.cfg.Path, "api_base", config.RedactedURL(key.apiBase), "status", he.Status)
	case errors.As(err, &he):
		s.log.Info("backend answers", "api_base", config.RedactedURL(key.apiBase), "status", he.Status)
	default:
		s.log.Warn("backend unreachable: start it, or check proxy_params.api_base in "+s.cfg.Path+" (requests to it get 502 until it answers)",
			"api_base", config.RedactedURL(key.apiBase), "err", config.ScrubCredentials(fmt.Sprint(errors.Unwrap(err)), key.apiBase))
	}
}

// RunDiscovery discovers at once, then every interval until ctx ends.
func (s *Server) RunDiscovery(ctx context.Context, every time.Duration) {
	s.Discover(ctx)
	tick.Every(ctx, every, s.Discover)
}
