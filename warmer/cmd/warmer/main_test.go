package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/stub"
	"github.com/dragoman-dev/dragoman/warmer/settings"
)

// TestMain lets TestSignals run this test binary as the warmer itself.
func TestMain(m *testing.M) {
	if os.Getenv("WARMER_TEST_RUN_MAIN") == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("WARMER_TEST_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

const testKey = "sk-warmer-main-test-91c2"

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func envOf(vars map[string]string) settings.Getenv {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func startStub(t *testing.T, opts stub.Options) (*stub.Server, string) {
	t.Helper()
	s := stub.New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL + "/v1"
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type warmBody struct {
	Model     string            `json:"model"`
	Messages  []json.RawMessage `json:"messages"`
	MaxTokens *int              `json:"max_tokens"`
}

// decode reads a recorded warm request and checks what every one must hold.
func decode(t *testing.T, r stub.Request, key string) warmBody {
	t.Helper()
	var b warmBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+key ||
		r.Header.Get("Content-Type") != "application/json" || b.MaxTokens == nil || *b.MaxTokens != 1 || len(b.Messages) != 1 {
		t.Errorf("not a warm request with the key: %s %s auth %q type %q body %s",
			r.Method, r.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Body)
	}
	return b
}

func TestOnceWaitsOutSixSecondColdStart(t *testing.T) {
	t.Parallel()
	s, base := startStub(t, stub.Options{ColdStart: 6 * time.Second})
	var stderr lockedBuffer
	start := time.Now()
	code := run(t.Context(), []string{"--once"}, envOf(map[string]string{
		"WARMER_BACKEND_URL": base, "WARMER_MODELS": "qwen3-coder", "WARMER_API_KEY": testKey,
	}), &stderr)
	elapsed := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, &stderr)
	}
	if elapsed < 6*time.Second {
		t.Errorf("--once returned after %s, before the 6s cold start ended", elapsed)
	}
	reqs := s.Requests()
	if len(reqs) == 0 {
		t.Fatal("the stub saw no request")
	}
	for _, r := range reqs {
		if b := decode(t, r, testKey); b.Model != "qwen3-coder" {
			t.Errorf("model %q", b.Model)
		}
	}
	if last := reqs[len(reqs)-1]; last.Cancelled || last.Done.Sub(reqs[0].Time) < 6*time.Second {
		t.Errorf("the answering request %+v did not wait out the cold start", last)
	}
	if out := stderr.String(); !strings.Contains(out, "all models answered") || strings.Contains(out, testKey) {
		t.Errorf("stderr lacks the success line or shows the key:\n%s", out)
	}
	t.Logf("--once against a 6s cold start: %s, %d request(s)", elapsed.Round(time.Millisecond), len(reqs))
}

func TestOnceFailsNamingTheSilentModel(t *testing.T) {
	t.Parallel()
	s := stub.New(stub.Options{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b warmBody
		json.Unmarshal(body, &b)
		if b.Model == "silent-model" {
			<-r.Context().Done() // never answers
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	var stderr lockedBuffer
	start := time.Now()
	code := run(t.Context(), []string{"--once"}, envOf(map[string]string{
		"WARMER_BACKEND_URL": ts.URL + "/v1", "WARMER_MODELS": "fine-model,silent-model", "WARMER_API_KEY": testKey,
		"WARMER_DEADLINE": "2s",
	}), &stderr)
	elapsed := time.Since(start)
	out := stderr.String()
	if code == 0 {
		t.Fatalf("exit 0 with a backend that never answers; stderr:\n%s", out)
	}
	// The silent model never answers: the message naming the deadline
	// (below) says the deadline ended the run, not before it. No upper
	// bound: how late a loaded machine got there is not this test's.
	if elapsed < 2*time.Second {
		t.Errorf("took %s, less than WARMER_DEADLINE=2s", elapsed)
	}
	for _, want := range []string{"1 of 2 models did not answer", "silent-model at " + ts.URL + "/v1", "WARMER_DEADLINE (2s)", "still waiting"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out)
		}
	}
	_, failures, _ := strings.Cut(out, "did not answer:")
	if strings.Contains(failures, "fine-model") || strings.Contains(out, testKey) {
		t.Errorf("stderr names the model that answered, or shows the key:\n%s", out)
	}
	if len(s.Requests()) != 1 {
		t.Errorf("fine-model was warmed %d times, want once", len(s.Requests()))
	}
}

func TestOnceFailsFastOnRejectedKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`)
	}))
	t.Cleanup(ts.Close)
	var stderr lockedBuffer
	code := run(t.Context(), []string{"--once"}, envOf(map[string]string{
		"WARMER_BACKEND_URL": ts.URL + "/v1", "WARMER_MODELS": "qwen3-coder", "WARMER_API_KEY": testKey,
	}), &stderr)
	out := stderr.String()
	if code != 1 || !strings.Contains(out, "qwen3-coder at") || !strings.Contains(out, "401") {
		t.Errorf("exit %d, want 1 naming the model and the 401:\n%s", code, out)
	}
	// Counted, not timed: one call, as a 401 will not go away by waiting.
	if n := calls.Load(); n != 1 {
		t.Errorf("a 401 was sent %d times; it will not go away by waiting", n)
	}
	if strings.Contains(out, testKey) {
		t.Errorf("the key was printed:\n%s", out)
	}
}

const threeAliasesTwoModels = `model_list:
  - model_name: claude-opus-5-5
    proxy_params:
      model: vendorb/qwen3-coder
      api_base: BASE
      api_key: os.environ/WARMER_TEST_BACKEND_KEY
  - model_name: claude-sonnet-5
    proxy_params:
      model: vendorb/qwen3-coder
      api_base: BASE
      api_key: os.environ/WARMER_TEST_BACKEND_KEY
  - model_name: claude-haiku-5
    proxy_params:
      model: vendorb/qwen3-8b
      api_base: BASE
      api_key: os.environ/WARMER_TEST_BACKEND_KEY
general_settings:
  enable_vendora_pass_through: true
`

// TestDaemonWarmsEachBackendModelOncePerInterval runs the daemon on a proxy
// config whose three aliases share two backend models, with the key read
// from the environment as the proxy reads it, and checks the health
// endpoint and --healthcheck on the way.
func TestDaemonWarmsEachBackendModelOncePerInterval(t *testing.T) {
	const interval = 150 * time.Millisecond
	s, base := startStub(t, stub.Options{})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(threeAliasesTwoModels, "BASE", base)), 0o600); err != nil {
		t.Fatal(err)
	}
	health := freeAddr(t)
	t.Setenv("WARMER_TEST_BACKEND_KEY", testKey)
	t.Setenv("WARMER_CONFIG", cfg)
	t.Setenv("WARMER_INTERVAL", interval.String())
	t.Setenv("WARMER_HEALTH_ADDR", health)
	for _, v := range []string{"WARMER_BACKEND_URL", "WARMER_MODELS", "WARMER_API_KEY", "WARMER_TIMEOUT", "WARMER_DEADLINE"} {
		t.Setenv(v, "")
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr lockedBuffer
	exit := make(chan int, 1)
	start := time.Now()
	go func() { exit <- run(ctx, nil, os.LookupEnv, &stderr) }()

	perModel := func() map[string][]stub.Request {
		m := map[string][]stub.Request{}
		for _, r := range s.Requests() {
			b := decode(t, r, testKey)
			m[b.Model] = append(m[b.Model], r)
		}
		return m
	}
	waitFor(t, 10*time.Second, "5 requests per backend model", func() bool {
		m := perModel()
		return len(m["qwen3-coder"]) >= 5 && len(m["qwen3-8b"]) >= 5
	})

	resp, err := http.Get("http://" + health + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"ok": true`)) || bytes.Contains(body, []byte(testKey)) {
		t.Errorf("GET /healthz = %d %s, want 200 ok without the key", resp.StatusCode, body)
	}
	if code := run(t.Context(), []string{"--healthcheck"}, os.LookupEnv, io.Discard); code != 0 {
		t.Errorf("--healthcheck against the running daemon: exit %d", code)
	}
	checkWarmerMetrics(t, health, len(perModel()["qwen3-coder"]))

	cancel()
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("daemon exit %d after stop, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("daemon did not stop within 5s")
	}

	m := perModel()
	if got := keysOf(m); !slices.Equal(got, []string{"qwen3-8b", "qwen3-coder"}) {
		t.Errorf("models warmed = %q, want the two backend models and no alias", got)
	}
	// Both models are due at every tick; a model skips a tick only while its
	// previous request runs, and each skip is logged.
	skips := strings.Count(stderr.String(), "warm skipped")
	if d := len(m["qwen3-coder"]) - len(m["qwen3-8b"]); d < -1-skips || d > 1+skips {
		t.Errorf("qwen3-coder (2 aliases) warmed %d times, qwen3-8b (1 alias) %d, %d skips: want the same",
			len(m["qwen3-coder"]), len(m["qwen3-8b"]), skips)
	}
	// Ticks fall on a grid from the start: request k of a model may be late,
	// never before start + k×interval (two per tick, one per alias, would be).
	for model, rs := range m {
		slices.SortFunc(rs, func(a, b stub.Request) int { return a.Time.Compare(b.Time) })
		for k, r := range rs {
			if due := start.Add(time.Duration(k) * interval); r.Time.Before(due) {
				t.Errorf("%s: request %d arrived %s after start, before its tick at %s: warmed more than once per interval",
					model, k, r.Time.Sub(start), due.Sub(start))
			}
		}
	}
	if out := stderr.String(); strings.Contains(out, testKey) || !strings.Contains(out, "warm ok") {
		t.Errorf("logs show the key or no result:\n%s", out)
	}
	if code := run(t.Context(), []string{"--healthcheck"}, os.LookupEnv, io.Discard); code != 1 {
		t.Errorf("--healthcheck after the daemon stopped: exit %d, want 1", code)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestSignals runs the real binary (this test binary, through TestMain) and
// stops it with each signal while a warm request is in flight.
func TestSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			s, base := startStub(t, stub.Options{FirstTokenDelay: time.Minute})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "WARMER_TEST_RUN_MAIN=1",
				"WARMER_BACKEND_URL="+base, "WARMER_MODELS=m", "WARMER_API_KEY="+testKey,
				"WARMER_CONFIG=", "WARMER_INTERVAL=1h", "WARMER_HEALTH_ADDR=off")
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			waitFor(t, 10*time.Second, "the warm request", func() bool {
				select {
				case err := <-done:
					t.Fatalf("warmer exited before the signal: %v\n%s", err, &stderr)
				default:
				}
				return len(s.Requests()) == 1
			})
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("warmer exited with %v after %s, want 0; stderr:\n%s", err, sig, &stderr)
				}
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("warmer still running 5s after %s", sig)
			}
			waitFor(t, 5*time.Second, "the in-flight request to be cancelled", func() bool { return s.Requests()[0].Cancelled })
			if !strings.Contains(stderr.String(), "warmer stopped") {
				t.Errorf("no stop line:\n%s", &stderr)
			}
		})
	}
}

func TestStartupErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unsetKeyCfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(unsetKeyCfg, []byte(strings.ReplaceAll(threeAliasesTwoModels, "BASE", "http://127.0.0.1:9/v1")), 0o600); err != nil {
		t.Fatal(err)
	}
	direct := map[string]string{"WARMER_BACKEND_URL": "http://127.0.0.1:9/v1", "WARMER_MODELS": "m", "WARMER_API_KEY": "k"}
	plus := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range direct {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		want []string
	}{
		{"bad interval", []string{"--once"}, plus("WARMER_INTERVAL", "20"), 2, []string{`WARMER_INTERVAL is "20"`, "not a duration", "20s"}},
		{"bad deadline", []string{"--once"}, plus("WARMER_DEADLINE", "soon"), 2, []string{`WARMER_DEADLINE is "soon"`}},
		{"nothing set", nil, map[string]string{}, 2, []string{"nothing to warm", "WARMER_CONFIG", "WARMER_BACKEND_URL", "WARMER_MODELS", "WARMER_API_KEY"}},
		{"url without models and key", nil, map[string]string{"WARMER_BACKEND_URL": "http://127.0.0.1:9/v1"}, 2, []string{"WARMER_MODELS is not set", "WARMER_API_KEY is not set"}},
		{"both modes", nil, plus("WARMER_CONFIG", unsetKeyCfg), 2, []string{"both WARMER_CONFIG and WARMER_BACKEND_URL"}},
		{"bad url", nil, plus("WARMER_BACKEND_URL", "127.0.0.1:9"), 2, []string{`WARMER_BACKEND_URL is "127.0.0.1:9"`, "/v1"}},
		{"unset key variable", []string{"--once"}, map[string]string{"WARMER_CONFIG": unsetKeyCfg}, 2, []string{"WARMER_CONFIG", "WARMER_TEST_BACKEND_KEY", "not set"}},
		{"unknown flag", []string{"--forever"}, direct, 2, []string{"-forever"}},
		{"two modes of run", []string{"--once", "--healthcheck"}, direct, 2, []string{"give --once, --healthcheck or nothing"}},
		{"stray argument", []string{"now"}, direct, 2, []string{`"now"`}},
		{"help", []string{"--help"}, nil, 0, []string{"WARMER_CONFIG", "WARMER_INTERVAL", "default 20s", "default 60s", "default 5m"}},
		{"healthcheck off", []string{"--healthcheck"}, map[string]string{"WARMER_HEALTH_ADDR": "off"}, 2, []string{"WARMER_HEALTH_ADDR is off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(t.Context(), tc.args, envOf(tc.env), &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, &stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, &stderr)
				}
			}
		})
	}
}

func TestHealthcheckWithoutDaemon(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"--healthcheck"}, envOf(map[string]string{"WARMER_HEALTH_ADDR": freeAddr(t)}), &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "unhealthy") {
		t.Errorf("exit %d, want 1 unhealthy; stderr:\n%s", code, &stderr)
	}
}

func TestHealthAddrInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, base := startStub(t, stub.Options{})
	var stderr bytes.Buffer
	code := run(t.Context(), nil, envOf(map[string]string{
		"WARMER_BACKEND_URL": base, "WARMER_MODELS": "m", "WARMER_API_KEY": testKey, "WARMER_HEALTH_ADDR": ln.Addr().String(),
	}), &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "WARMER_HEALTH_ADDR") {
		t.Errorf("exit %d, want 1 naming WARMER_HEALTH_ADDR; stderr:\n%s", code, &stderr)
	}
}

// checkWarmerMetrics reads the daemon's GET /metrics on its health
// address: per model, the ok results (at least 5, at most what the backend
// got), no error or timeout, and as many latencies as results.
func checkWarmerMetrics(t *testing.T, health string, sent int) {
	t.Helper()
	resp, err := http.Get("http://" + health + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics does not parse: %v", err)
	}
	counts := map[string]float64{}
	for _, m := range mfs["dragoman_warmer_requests_total"].GetMetric() {
		counts[m.GetLabel()[0].GetValue()+" "+m.GetLabel()[1].GetValue()] = m.GetCounter().GetValue()
	}
	latencies := map[string]uint64{}
	for _, m := range mfs["dragoman_warmer_latency_seconds"].GetMetric() {
		latencies[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
	}
	for _, model := range []string{"qwen3-coder", "qwen3-8b"} {
		ok := counts[model+" ok"]
		if ok < 5 || (model == "qwen3-coder" && ok > float64(sent)) {
			t.Errorf("dragoman_warmer_requests_total{model=%s,result=ok} = %v, want 5 to %d", model, ok, sent)
		}
		for _, r := range []string{"error", "timeout"} {
			if v, found := counts[model+" "+r]; !found || v != 0 {
				t.Errorf("dragoman_warmer_requests_total{model=%s,result=%s} = %v (exported: %v), want 0", model, r, v, found)
			}
		}
		if float64(latencies[model]) < ok {
			t.Errorf("dragoman_warmer_latency_seconds{model=%s} count %d, want at least %v", model, latencies[model], ok)
		}
	}
}
