package balance

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/tick"
)

// Run probes the backends that are out every health_check_interval until
// ctx ends. With the interval 0 it returns at once.
func (bl *Balancer) Run(ctx context.Context) {
	tick.Every(ctx, bl.settings.HealthCheckInterval, bl.ProbeNow)
}

// ProbeNow probes every backend that is out, at once, and waits for the
// answers.
func (bl *Balancer) ProbeNow(ctx context.Context) {
	var out []*Backend
	bl.mu.Lock()
	for _, b := range bl.backends {
		if b.state == Cooling {
			bl.setState(b, Probing)
			out = append(out, b)
		}
	}
	bl.mu.Unlock()
	limit := min(bl.settings.HealthCheckInterval, 5*time.Second)
	if limit <= 0 {
		limit = 5 * time.Second
	}
	var wg sync.WaitGroup
	for _, b := range out {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, limit)
			err := bl.probe(pctx, b.route)
			cancel()
			bl.probed(b, err)
		})
	}
	wg.Wait()
}

// probed records a probe's answer.
func (bl *Balancer) probed(b *Backend, err error) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	if b.state != Probing {
		return // a real request brought it back meanwhile
	}
	if err == nil {
		b.fails = 0
		b.coolUntil = time.Time{}
		bl.setState(b, Healthy)
		return
	}
	b.lastErr = "probe: " + err.Error()
	b.coolUntil = bl.now().Add(bl.settings.CooldownTime)
	bl.setState(b, Cooling)
}

var probeClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}}

// ProbeModels, the default probe, asks GET {api_base}/models and wants a 200: a server that is
// loading its model answers 503, one that restarts refuses the connection.
func ProbeModels(ctx context.Context, r config.Route) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.APIBase+"/models", nil)
	if err != nil {
		return err
	}
	if r.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.APIKey)
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s/models: %w", r.APIBase, unwrapURL(err))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/models answered %d", r.APIBase, resp.StatusCode)
	}
	return nil
}

func unwrapURL(err error) error {
	if u, ok := err.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
		return u.Unwrap()
	}
	return err
}
