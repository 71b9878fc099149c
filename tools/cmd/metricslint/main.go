// Command metricslint runs `promtool check metrics` on the real
// expositions of bin/proxy and bin/warmer after known traffic (make
// lint-metrics): it starts bin/stub-backend twice (one answering, one
// "Loading model" 503), bin/proxy in front of them and bin/warmer warming
// the first, all on loopback ports; sends a Messages request, a Messages
// stream, a Chat request and stream, a count_tokens, an unknown alias, a
// backend 503 and a client hang-up; then scrapes each /metrics and pipes
// it to promtool. It exits 1 on any finding of promtool (anything it
// prints, or a non-zero exit) and when a key is in an exposition.
//
//	metricslint --bin bin --promtool PATH [--keep DIR]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dragoman-dev/dragoman/tools/internal/procs"
)

const (
	clientKey  = "sk-metricslint-client-key"
	backendKey = "sk-metricslint-backend-key"
)

func main() {
	fs := flag.NewFlagSet("metricslint", flag.ExitOnError)
	bin := fs.String("bin", "bin", "the folder of make build's binaries")
	promtool := fs.String("promtool", "promtool", "the promtool binary")
	keep := fs.String("keep", "", "also write the expositions and the processes' logs to this folder")
	fs.Parse(os.Args[1:])
	if err := run(*bin, *promtool, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "metricslint:", err)
		os.Exit(1)
	}
}

// service is a started process and its base URL.
type service struct {
	*procs.Process
	url string
}

func run(bin, promtool, keep string) error {
	dir, err := os.MkdirTemp("", "dragoman-metricslint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var started []*service
	defer func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop(3 * time.Second)
		}
	}()
	start := func(name string, env []string, path string, args ...string) (*service, error) {
		p, url, err := procs.StartOnFreePort(dir, name, "/healthz", env, filepath.Join(bin, path), args...)
		if err != nil {
			return nil, err
		}
		s := &service{Process: p, url: url}
		started = append(started, s)
		return s, nil
	}
	stub, err := start("stub", nil, "stub-backend", "--host", "127.0.0.1", "--port", "PORT", "--api-key", backendKey)
	if err != nil {
		return err
	}
	loading, err := start("stub-loading", nil, "stub-backend", "--host", "127.0.0.1", "--port", "PORT", "--loading", "1h")
	if err != nil {
		return err
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("model_list:\n"+
		"  - model_name: coder\n    proxy_params: {model: vendorb/qwen3-coder, api_base: '"+stub.url+"/v1', api_key: os.environ/METRICSLINT_BACKEND_KEY, name: stub}\n"+
		"  - model_name: loading\n    proxy_params: {model: vendorb/big, api_base: '"+loading.url+"/v1', api_key: os.environ/METRICSLINT_BACKEND_KEY, num_retries: 0}\n"+
		"general_settings: {enable_vendora_pass_through: true}\n"), 0o600); err != nil {
		return err
	}
	env := []string{"PROXY_API_KEY=" + clientKey, "METRICSLINT_BACKEND_KEY=" + backendKey}
	proxy, err := start("proxy", env, "proxy", "--config", cfg, "--host", "127.0.0.1", "--port", "PORT", "--log-level", "warn", "--ping-interval", "100ms")
	if err != nil {
		return err
	}
	warmer, err := start("warmer", []string{"WARMER_BACKEND_URL=" + stub.url + "/v1", "WARMER_MODELS=qwen3-coder", "WARMER_API_KEY=" + backendKey, "WARMER_INTERVAL=100ms", "WARMER_HEALTH_ADDR=127.0.0.1:PORT"}, "warmer")
	if err != nil {
		return err
	}
	if err := traffic(proxy.url); err != nil {
		return err
	}
	// The warmer warms at start and then every 100 ms: wait for two.
	time.Sleep(300 * time.Millisecond)

	failed := false
	for _, s := range []*service{proxy, warmer} {
		body, err := get(s.url + "/metrics")
		if err != nil {
			return fmt.Errorf("%s /metrics: %w", s.Name, err)
		}
		if keep != "" {
			if err := os.MkdirAll(keep, 0o755); err == nil {
				os.WriteFile(filepath.Join(keep, s.Name+".metrics.txt"), body, 0o644)
			}
		}
		for _, secret := range []string{clientKey, backendKey} {
			if bytes.Contains(body, []byte(secret)) {
				fmt.Printf("%s: a key is in the exposition\n", s.Name)
				failed = true
			}
		}
		families := bytes.Count(body, []byte("\n# TYPE "))
		series := 0
		for _, line := range bytes.Split(body, []byte("\n")) {
			if len(line) > 0 && line[0] != '#' {
				series++
			}
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.CombinedOutput()
		out = bytes.TrimSpace(out)
		switch {
		case err != nil || len(out) > 0:
			failed = true
			fmt.Printf("promtool check metrics: %s exposition (%d families, %d samples): FINDINGS (%v)\n%s\n", s.Name, families, series, err, out)
		default:
			fmt.Printf("promtool check metrics: %s exposition (%d families, %d samples): no finding\n", s.Name, families, series)
		}
	}
	if failed {
		return errors.New("the expositions have findings (above)")
	}
	return nil
}

// traffic sends the known requests through the proxy at base.
func traffic(base string) error {
	reqs := []struct {
		path, body string
		status     int
	}{
		{"/v1/messages", `{"model":"coder","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"/v1/messages", `{"model":"coder","max_tokens":32,"stream":true,"messages":[{"role":"user","content":"stream"}]}`, 200},
		{"/v1/chat/completions", `{"model":"coder","messages":[{"role":"user","content":"hi"}]}`, 200},
		{"/v1/chat/completions", `{"model":"coder","stream":true,"messages":[{"role":"user","content":"stream"}]}`, 200},
		{"/v1/messages/count_tokens", `{"model":"coder","messages":[{"role":"user","content":"count me"}]}`, 200},
		{"/v1/messages", `{"model":"no-such-alias","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, 404},
		{"/v1/messages", `{"model":"loading","max_tokens":32,"messages":[{"role":"user","content":"hi"}]}`, 529},
	}
	for _, r := range reqs {
		status, body, err := post(context.Background(), base+r.path, r.body, true)
		if err != nil {
			return fmt.Errorf("POST %s: %w", r.path, err)
		}
		if status != r.status {
			return fmt.Errorf("POST %s %s: %d, want %d: %s", r.path, r.body, status, r.status, body)
		}
	}
	// A client that hangs up after the stream's first bytes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, _, err := post(ctx, base+"/v1/messages", `{"model":"coder","max_tokens":32,"stream":true,"messages":[{"role":"user","content":"hang up"}]}`, false); err != nil {
		return fmt.Errorf("the hang-up stream: %w", err)
	}
	cancel()
	time.Sleep(100 * time.Millisecond)
	return nil
}

// post sends body with the client key; with whole, it reads the answer to
// its end, else only its first bytes.
func post(ctx context.Context, url, body string, whole bool) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if !whole {
		_, err := resp.Body.Read(make([]byte, 64))
		return resp.StatusCode, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func get(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}
