package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-connections/nat"
	"github.com/testcontainers/testcontainers-go/modules/compose"
)

// The services of docker-compose.yml and their container ports.
const (
	backendService = "backend"
	proxyService   = "proxy"
	warmerService  = "warmer"

	proxyPort   nat.Port = "4000/tcp"
	backendPort nat.Port = "8000/tcp"

	// What the tests write into the env file the stack loads.
	backendKey     = "it-backend-key"
	warmerInterval = 2 * time.Second
)

var services = []string{backendService, proxyService, warmerService}

// stack is one running copy of docker-compose.yml under its own project name.
type stack struct {
	project  string
	dir      string // the repository root, where docker-compose.yml is
	key      string // the proxy key clients send (PROXY_API_KEY)
	compose  *compose.DockerCompose
	docker   *client.Client
	upTook   time.Duration
	envFile  string
	teardown sync.Once
	services []string
}

var (
	stackOnce sync.Once
	theStack  *stack
	stackErr  error

	startedMu sync.Mutex
	started   []*stack // every stack started, for TestMain to tear down
)

// downAll tears down every stack started.
func downAll() error {
	startedMu.Lock()
	defer startedMu.Unlock()
	var errs []error
	for _, s := range started {
		errs = append(errs, s.down())
	}
	return errors.Join(errs...)
}

func TestMain(m *testing.M) {
	// The reaper's image cannot be pulled on an offline machine; these tests
	// clean up after themselves (see down). `make test` exports both already.
	setDefaultEnv("TESTCONTAINERS_RYUK_DISABLED", "true")
	setDefaultEnv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")

	// An interrupt (^C, or SIGTERM from CI) still tears the stack down.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "integration: %v: tearing the stack down\n", s)
		downAll()
		os.Exit(1)
	}()

	code := m.Run()
	if err := downAll(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: tear-down: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

func setDefaultEnv(name, value string) {
	if _, ok := os.LookupEnv(name); !ok {
		os.Setenv(name, value)
	}
}

// upStack returns the stack, starting it on first use; every test of the
// package shares it. Without a Docker engine it fails the test, never skips.
func upStack(t *testing.T) *stack {
	t.Helper()
	stackOnce.Do(func() { theStack, stackErr = startStack(services) })
	if stackErr != nil {
		t.Fatal(stackErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			theStack.logServices(t)
		}
	})
	return theStack
}

// startStack starts docker-compose.yml with the override files given (paths
// from the repository root), under a project name of its own.
func startStack(svcs []string, overrides ...string) (*stack, error) {
	ctx := context.Background()
	docker, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("no Docker engine: start dockerd (see .ci/run): %v", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := docker.Ping(pingCtx); err != nil {
		docker.Close()
		return nil, fmt.Errorf("no Docker engine: start dockerd (see .ci/run): %v", err)
	}

	// The repository's own docker-compose.yml: go test runs in this
	// package's directory, proxy/integration.
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "docker-compose.yml")
	files := []string{file}
	for _, o := range overrides {
		files = append(files, filepath.Join(dir, o))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("the stack's compose file: %v", err)
		}
	}
	for _, bin := range []string{"proxy", "warmer", "stub-backend"} {
		if _, err := os.Stat(filepath.Join(dir, "bin", bin)); err != nil {
			return nil, fmt.Errorf("the images are built from bin/%s: run `make build` first (`make test` does): %v", bin, err)
		}
	}

	s := &stack{
		project:  "dragoman-it-" + randomHex(4),
		dir:      dir,
		key:      "sk-it-" + randomHex(12),
		docker:   docker,
		services: svcs,
	}
	// The services load this file instead of .env (DRAGOMAN_ENV_FILE), so
	// the developer's own .env plays no part and its keys stay unread.
	env, err := os.CreateTemp("", "dragoman-it-*.env")
	if err != nil {
		return nil, err
	}
	s.envFile = env.Name()
	fmt.Fprintf(env, "PROXY_API_KEY=%s\nBACKEND_API_KEY=%s\nWARMER_INTERVAL=%s\n", s.key, backendKey, warmerInterval)
	if err := env.Close(); err != nil {
		return nil, err
	}

	s.compose, err = compose.NewDockerComposeWith(compose.WithStackFiles(files...), compose.StackIdentifier(s.project))
	if err != nil {
		os.Remove(s.envFile)
		return nil, fmt.Errorf("compose stack: %v", err)
	}
	startedMu.Lock()
	started = append(started, s) // from here on, TestMain tears it down whatever happens
	startedMu.Unlock()

	s.compose.WithEnv(map[string]string{
		"DRAGOMAN_ENV_FILE": s.envFile,
		// What Compose substitutes in the files (deploy/compose.pool.yml
		// gives it to the warmer as WARMER_PROXY_KEY).
		"PROXY_API_KEY": s.key,
		// Set but empty: Docker picks free host ports, so a `make up` stack
		// on 4000 or another test run cannot collide with this one.
		"DRAGOMAN_PROXY_PORT":   "",
		"DRAGOMAN_BACKEND_PORT": "",
	})
	upCtx, cancelUp := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelUp()
	start := time.Now()
	// Builds the three images from deploy/*.Dockerfile (FROM scratch: nothing
	// is pulled), starts the services and waits until each is healthy.
	if err := s.compose.Up(upCtx, compose.Wait(true)); err != nil {
		return nil, fmt.Errorf("docker compose up of %s (project %s): %v%s", file, s.project, err, s.serviceLogs(20))
	}
	s.upTook = time.Since(start)
	return s, nil
}

// down removes everything the stack made: containers, network, volumes and
// the images it built; then it checks that nothing of the project is left.
func (s *stack) down() error {
	var err error
	s.teardown.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		defer os.Remove(s.envFile)
		if s.compose == nil {
			return
		}
		err = s.compose.Down(ctx, compose.RemoveOrphans(true), compose.RemoveVolumes(true), compose.RemoveImagesLocal)
		if err != nil {
			err = fmt.Errorf("docker compose down (project %s): %w", s.project, err)
			return
		}
		err = s.leftovers(ctx)
	})
	return err
}

func (s *stack) leftovers(ctx context.Context) error {
	label := filters.NewArgs(filters.Arg("label", "com.docker.compose.project="+s.project))
	var left []string
	if cs, err := s.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: label}); err != nil {
		return err
	} else {
		for _, c := range cs {
			left = append(left, "container "+strings.Join(c.Names, ","))
		}
	}
	if ns, err := s.docker.NetworkList(ctx, network.ListOptions{Filters: label}); err != nil {
		return err
	} else {
		for _, n := range ns {
			left = append(left, "network "+n.Name)
		}
	}
	if is, err := s.docker.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", s.project+"-*"))}); err != nil {
		return err
	} else {
		for _, i := range is {
			left = append(left, "image "+strings.Join(i.RepoTags, ","))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind after docker compose down: %s", strings.Join(left, "; "))
	}
	return nil
}

// containerID is the id of a service's container.
func (s *stack) containerID(t *testing.T, service string) string {
	t.Helper()
	c, err := s.compose.ServiceContainer(context.Background(), service)
	if err != nil {
		t.Fatalf("service %s: %v", service, err)
	}
	return c.GetContainerID()
}

func (s *stack) inspect(t *testing.T, service string) container.InspectResponse {
	t.Helper()
	info, err := s.docker.ContainerInspect(context.Background(), s.containerID(t, service))
	if err != nil {
		t.Fatalf("inspect %s: %v", service, err)
	}
	return info
}

// baseURL is where the host reaches a service's port now; it is read afresh
// each time, since a restarted container may get another free host port.
func (s *stack) baseURL(t *testing.T, service string, port nat.Port) string {
	t.Helper()
	info := s.inspect(t, service)
	for _, b := range info.NetworkSettings.Ports[port] {
		if b.HostPort != "" {
			return "http://127.0.0.1:" + b.HostPort
		}
	}
	t.Fatalf("service %s publishes no host port for %s: ports %v", service, port, info.NetworkSettings.Ports)
	return ""
}

func (s *stack) proxyURL(t *testing.T) string   { return s.baseURL(t, proxyService, proxyPort) }
func (s *stack) backendURL(t *testing.T) string { return s.baseURL(t, backendService, backendPort) }

// waitHealthy waits until Docker reports the service's health check passing.
func (s *stack) waitHealthy(t *testing.T, service string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		info := s.inspect(t, service)
		status := "no health check"
		if info.State != nil && info.State.Health != nil {
			status = info.State.Health.Status
		}
		if status == "healthy" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("service %s is %q (state %q) after %v", service, status, info.State.Status, within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stubRequest is one request the stub backend recorded (GET /_stub/requests).
type stubRequest struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Headers map[string][]string `json:"headers"`
	Body    json.RawMessage     `json:"body"`
	Time    time.Time           `json:"time"`
}

func (r stubRequest) header(name string) string {
	for k, v := range r.Headers {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// chatBody is the part of a backend request body the tests look at.
type chatBody struct {
	Model     string `json:"model"`
	MaxTokens *int   `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func (r stubRequest) chat(t *testing.T) chatBody {
	t.Helper()
	var b chatBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("backend request body %s: %v", r.Body, err)
	}
	return b
}

// backendRequests reads what the stub backend has received so far, through
// its published port.
func (s *stack) backendRequests(t *testing.T) []stubRequest {
	t.Helper()
	resp, err := http.Get(s.backendURL(t) + "/_stub/requests")
	if err != nil {
		t.Fatalf("GET /_stub/requests: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_stub/requests: %s: %s", resp.Status, body)
	}
	var reqs []stubRequest
	if err := json.Unmarshal(body, &reqs); err != nil {
		t.Fatalf("GET /_stub/requests: %v: %s", err, body)
	}
	return reqs
}

// forwarded finds the backend request that carried the user text marker,
// which each test makes unique, so tests never see each other's requests.
func (s *stack) forwarded(t *testing.T, marker string) stubRequest {
	t.Helper()
	var found []stubRequest
	for _, r := range s.backendRequests(t) {
		if r.Path == "/v1/chat/completions" && bytes.Contains(r.Body, []byte(marker)) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the backend received %d requests with %q, want 1", len(found), marker)
	}
	return found[0]
}

// post sends a raw request to the proxy, as curl would.
func (s *stack) post(t *testing.T, path, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.proxyURL(t)+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading the answer: %v", path, err)
	}
	return resp.StatusCode, out
}

// logServices writes the last lines of every service's log into the test
// log, to explain a failure.
func (s *stack) logServices(t *testing.T) {
	t.Log("service logs:" + s.serviceLogs(30))
}

func (s *stack) serviceLogs(lines int) string {
	if s.compose == nil {
		return ""
	}
	var b strings.Builder
	for _, svc := range s.services {
		out, err := s.serviceLog(svc, fmt.Sprint(lines))
		if err != nil {
			fmt.Fprintf(&b, "\n--- %s: %v", svc, err)
			continue
		}
		fmt.Fprintf(&b, "\n--- %s (last %d lines):\n%s", svc, lines, strings.TrimRight(out, "\n"))
	}
	return b.String()
}

// serviceLog is the log of one service's container: its last lines, or
// all of it with tail "all".
func (s *stack) serviceLog(svc, tail string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := s.compose.ServiceContainer(ctx, svc)
	if err != nil {
		return "", err
	}
	rc, err := s.docker.ContainerLogs(ctx, c.GetContainerID(), container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(&out, "(reading the log: %v)", err)
	}
	return out.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
