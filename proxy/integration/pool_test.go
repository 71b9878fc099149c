package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

const backend2Service = "backend2"

// TestPoolStackSurvivesABackendStop: the compose variant with two stub
// backends (deploy/compose.pool.yml) comes up healthy; clients send
// requests while one backend container is stopped, and none fails.
func TestPoolStackSurvivesABackendStop(t *testing.T) {
	svcs := []string{backendService, backend2Service, proxyService, warmerService}
	s, err := startStack(svcs, "deploy/compose.pool.yml")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.logServices(t)
		}
		if err := s.down(); err != nil {
			t.Error(err)
		}
	})
	for _, svc := range svcs {
		if h := s.inspect(t, svc).State.Health; h == nil || h.Status != "healthy" {
			t.Fatalf("%s: health %+v, want healthy", svc, h)
		}
	}
	url := s.proxyURL(t)
	post := func(session, text string) error {
		body := fmt.Sprintf(`{"model":"claude-opus-5-5","max_tokens":16,"messages":[{"role":"user","content":%q}]}`, text)
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("X-Claude-Code-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), stubAnswer(text)) {
			return fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return nil
	}
	var (
		stop     atomic.Bool
		sent     atomic.Int64
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
	)
	for c := range 8 {
		wg.Go(func() {
			for n := 0; !stop.Load(); n++ {
				if err := post(fmt.Sprintf("session-%d", c), fmt.Sprintf("pool c%d n%d", c, n)); err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
				}
				sent.Add(1)
			}
		})
	}
	time.Sleep(2 * time.Second)
	before := s.backends(t)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.docker.ContainerStop(stopCtx, s.containerID(t, backend2Service), container.StopOptions{}); err != nil {
		t.Fatalf("stopping backend2: %v", err)
	}
	stoppedAt := sent.Load()
	time.Sleep(3 * time.Second)
	stop.Store(true)
	wg.Wait()
	after := s.backends(t)
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed, first: %s", len(failures), sent.Load(), failures[0])
	}
	if before["backend"] == 0 || before["backend2"] == 0 {
		t.Errorf("before the stop, requests per backend %v: want both serving", before)
	}
	if after["backend"] <= before["backend"] {
		t.Errorf("backend served nothing after backend2 stopped: %v then %v", before, after)
	}
	t.Logf("%d requests (%d after backend2 stopped), none failed; requests per backend before the stop %v, at the end %v", sent.Load(), sent.Load()-stoppedAt, before, after)

	// The warmer reads /backends (WARMER_PROXY_URL, WARMER_PROXY_KEY) and
	// leaves alone the backend that served the clients all along.
	log, err := s.serviceLog(warmerService, "all")
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for line := range strings.Lines(log) {
		if strings.Contains(line, "cannot read the proxy's /backends") {
			t.Errorf("the warmer could not read /backends: %s", line)
		}
		if strings.Contains(line, "warm skipped: the proxy served this backend") && strings.Contains(line, "http://backend:8000/v1") {
			skipped++
		}
	}
	if skipped == 0 {
		t.Errorf("the warmer never skipped backend while it served the clients (WARMER_INTERVAL %v); its log:\n%s", warmerInterval, log)
	}
	t.Logf("the warmer skipped backend %d time(s) while it served the clients", skipped)
}

// backends reads the proxy's /backends: requests per backend name.
func (s *stack) backends(t *testing.T) map[string]int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.proxyURL(t)+"/backends", nil)
	req.Header.Set("Authorization", "Bearer "+s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /backends: %v", err)
	}
	defer resp.Body.Close()
	var doc struct {
		Backends []struct {
			Name     string `json:"name"`
			Requests int    `json:"requests"`
		} `json:"backends"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET /backends: %v", err)
	}
	out := map[string]int{}
	for _, b := range doc.Backends {
		out[b.Name] = b.Requests
	}
	return out
}
