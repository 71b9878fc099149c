package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/internal/logbuf"
	"github.com/dragoman-dev/dragoman/proxy/internal/pgtest"
	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// The tests run the proxy as a process of its own: this test binary,
// re-executed with runProxyEnv set, calls run as main does, so signals,
// listeners and the exit code are the real ones.
const runProxyEnv = "DRAGOMAN_TEST_RUN_PROXY"

func TestMain(m *testing.M) {
	if os.Getenv(runProxyEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stderr, os.LookupEnv))
	}
	pgtest.Main(m) // m.Run, then the test Postgres (keys_test.go) stopped
}

const (
	clientKey  = "sk-drain-client-key-5e1b"
	backendKey = "sk-drain-backend-key-77aa"
)

// proxyProc is a running proxy process.
type proxyProc struct {
	cmd    *exec.Cmd
	stderr *logbuf.Buffer
	url    string
	exited chan struct{}
	err    error // of Wait, once exited is closed
	exitAt time.Time
}

// startProxy starts the proxy in front of backendURL (a base URL ending in
// /v1) on a free loopback port, with extra flags, and waits until it
// listens.
func startProxy(t *testing.T, backendURL string, flags ...string) *proxyProc {
	t.Helper()
	cfg := "model_list:\n" +
		"  - model_name: claude-opus-5-5\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: " + backendURL + "\n      api_key: os.environ/DRAIN_BACKEND_KEY\n" +
		"general_settings:\n  enable_vendora_pass_through: true\n"
	return startProxyConfig(t, cfg, flags...)
}

// startProxyConfig starts the proxy on a config of its own.
func startProxyConfig(t *testing.T, cfg string, flags ...string) *proxyProc {
	t.Helper()
	args := append([]string{"--config", writeFile(t, "config.yaml", cfg), "--host", "127.0.0.1", "--port", "0"}, flags...)
	p := spawnProxy(t, nil, args...)
	p.url = "http://" + p.waitLog(t, `msg="proxy listening" addr=(\S+)`)
	return p
}

// serveBackend serves backend on a loopback port until the test ends; it
// returns its api_base.
func serveBackend(t *testing.T, backend http.Handler) string {
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// writeFile writes content to a file name in a directory of the test's
// own, and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// spawnProxy runs the proxy process with args, and in its environment the
// test's client and backend keys, then env (which may set them again).
// It is killed at the test's end if it still runs, and its log must
// hold neither key.
func spawnProxy(t *testing.T, env []string, args ...string) *proxyProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), runProxyEnv+"=1", "PROXY_API_KEY="+clientKey, "DRAIN_BACKEND_KEY="+backendKey), env...)
	p := &proxyProc{cmd: cmd, stderr: &logbuf.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		p.exitAt = time.Now()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
		logs := p.stderr.String()
		if strings.Contains(logs, clientKey) || strings.Contains(logs, backendKey) {
			t.Errorf("a key reached the proxy's log:\n%s", logs)
		}
	})
	return p
}

// waitLog waits for a log line matching re and returns its first group.
func (p *proxyProc) waitLog(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := rx.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.exited:
			// It may have written the line just before it exited (a
			// proxy told to stop with nothing in flight stops at once).
			if m := rx.FindStringSubmatch(p.stderr.String()); m != nil {
				return m[1]
			}
			t.Fatalf("the proxy exited (%v) without a log line %q:\n%s", p.err, re, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("no log line %q:\n%s", re, p.stderr.String())
	return ""
}

func (p *proxyProc) post(t *testing.T, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// exitCode waits for the process to end and returns its exit code.
func (p *proxyProc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("the proxy did not exit within %s:\n%s", within, p.stderr.String())
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("wait: %v", p.err)
	return -1
}

type streamResult struct {
	events []byte
	err    error
	end    time.Time
}

// TestDrainOnSIGTERM: SIGTERM with 50 live Messages streams. Every stream
// runs to its message_stop within the grace period, requests arriving
// within the drain delay are served, /readyz says draining at once, and
// the proxy exits 0 as soon as the last stream ends.
func TestDrainOnSIGTERM(t *testing.T) {
	t.Parallel()
	const streams = 50
	backend := stub.New(stub.Options{Events: 30, EventDelay: 100 * time.Millisecond}) // 3 s a stream
	p := startProxy(t, serveBackend(t, backend), "--grace", "20s", "--drain-delay", "1s")

	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: streams}}
	var live sync.WaitGroup
	live.Add(streams)
	results := make([]streamResult, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			liveOnce := sync.OnceFunc(live.Done)
			defer liveOnce()
			body := fmt.Sprintf(`{"model":"claude-opus-5-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"stream %d"}]}`, i)
			req, _ := http.NewRequest(http.MethodPost, p.url+"/v1/messages", strings.NewReader(body))
			req.Header.Set("x-api-key", clientKey)
			resp, err := client.Do(req)
			if err != nil {
				results[i] = streamResult{err: err, end: time.Now()}
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				results[i] = streamResult{err: fmt.Errorf("status %d: %s", resp.StatusCode, b), end: time.Now()}
				return
			}
			var all bytes.Buffer
			rd := bufio.NewReader(resp.Body)
			for {
				line, err := rd.ReadBytes('\n')
				all.Write(line)
				if bytes.Contains(line, []byte("text_delta")) {
					liveOnce()
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					results[i] = streamResult{events: all.Bytes(), err: err, end: time.Now()}
					return
				}
			}
			results[i] = streamResult{events: all.Bytes(), end: time.Now()}
		}()
	}
	waitGroup(t, &live, 10*time.Second, "streams to go live")

	sigterm := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, `(shutting down)`)

	// /readyz says the proxy is leaving at once; requests that still come
	// within the drain delay are served.
	if r, err := http.Get(p.url + "/readyz"); err != nil || r.StatusCode != 503 {
		t.Errorf("/readyz during the drain: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	resp, b := p.post(t, "/v1/messages", `{"model":"claude-opus-5-5","max_tokens":8,"messages":[{"role":"user","content":"late"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "You said: late") {
		t.Errorf("Messages request during the drain: %d %s", resp.StatusCode, b)
	}
	resp, b = p.post(t, "/v1/chat/completions", `{"model":"claude-opus-5-5","messages":[{"role":"user","content":"late"}]}`)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "You said: late") {
		t.Errorf("Chat request during the drain: %d %s", resp.StatusCode, b)
	}

	waitGroup(t, &wg, 20*time.Second, "streams to end")
	var lastEnd time.Time
	for i, r := range results {
		if r.err != nil {
			t.Errorf("stream %d: %v\n%s", i, r.err, r.events)
			continue
		}
		if err := ssecheck.Check(r.events); err != nil {
			t.Errorf("stream %d: %v\n%s", i, err, r.events)
			continue
		}
		evs, _ := ssecheck.Parse(r.events)
		if last := evs[len(evs)-1].Name; last != "message_stop" {
			t.Errorf("stream %d ends with %s", i, last)
		}
		if want := fmt.Sprintf("You said: stream %d", i); !strings.Contains(ssecheck.Text(evs), want) {
			t.Errorf("stream %d: text %q lacks %q", i, ssecheck.Text(evs), want)
		}
		if !r.end.After(sigterm) {
			t.Errorf("stream %d ended before SIGTERM: the test did not drain it", i)
		}
		if r.end.After(lastEnd) {
			lastEnd = r.end
		}
	}
	if code := p.exitCode(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d:\n%s", code, p.stderr.String())
	}
	if lag := p.exitAt.Sub(lastEnd); lag > 2500*time.Millisecond {
		t.Errorf("the proxy exited %s after the last stream ended", lag)
	}
	if took := p.exitAt.Sub(sigterm); took > 20*time.Second {
		t.Errorf("the drain took %s, over the 20 s grace", took)
	}
	if n := len(backend.Requests()); n != streams+2 {
		t.Errorf("the backend saw %d requests, want %d (the streams and the two served during the drain)", n, streams+2)
	}
	t.Logf("drained %d streams in %s after SIGTERM", streams, lastEnd.Sub(sigterm).Round(time.Millisecond))
}

// TestDrainGraceExpires: streams longer than --grace are cut when it
// ends; the proxy still exits 0, promptly, and the backend requests it
// leaves are cancelled.
func TestDrainGraceExpires(t *testing.T) {
	t.Parallel()
	backend := stub.New(stub.Options{Events: 30, EventDelay: time.Second}) // 30 s a stream
	p := startProxy(t, serveBackend(t, backend), "--grace", "1s")
	var live, wg sync.WaitGroup
	for i := range 3 {
		live.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			liveOnce := sync.OnceFunc(live.Done)
			defer liveOnce()
			req, _ := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(`{"model":"claude-opus-5-5","stream":true,"messages":[{"role":"user","content":"long %d"}]}`, i)))
			req.Header.Set("Authorization", "Bearer "+clientKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			for {
				line, err := rd.ReadString('\n')
				if strings.Contains(line, `"content"`) {
					liveOnce()
				}
				if err != nil {
					return
				}
			}
		}()
	}
	waitGroup(t, &live, 10*time.Second, "streams to go live")
	sigterm := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	// The streams last 30 s: an exit well before that, with the log
	// saying the grace ran out and the backend requests cancelled, is the
	// cut. Not how soon after the 1 s grace a loaded machine got there
	// (the bound was 3.5 s); 20 s only ends a hang.
	if code := p.exitCode(t, 20*time.Second); code != 0 {
		t.Errorf("exit code %d:\n%s", code, p.stderr.String())
	}
	if took := p.exitAt.Sub(sigterm); took < time.Second {
		t.Errorf("exit %s after SIGTERM, before the 1 s --grace ran out", took)
	}
	if !strings.Contains(p.stderr.String(), "grace period over") {
		t.Errorf("the log does not say the grace period ran out:\n%s", p.stderr.String())
	}
	waitGroup(t, &wg, 10*time.Second, "cut streams to end")
	deadline := time.Now().Add(10 * time.Second)
	for {
		reqs := backend.Requests()
		cancelled := 0
		for _, r := range reqs {
			if r.Cancelled && !r.Done.IsZero() {
				cancelled++
			}
		}
		if len(reqs) == 3 && cancelled == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend requests left running after the proxy exited: %+v", reqs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSlowHeadersCutOff: a client that sends its headers slowly, or
// never finishes them, is disconnected after ReadHeaderTimeout (10 s);
// others are served meanwhile.
func TestSlowHeadersCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 10 s ReadHeaderTimeout")
	}
	t.Parallel()
	p := startProxy(t, serveBackend(t, stub.New(stub.Options{})))
	addr := strings.TrimPrefix(p.url, "http://")

	type cut struct {
		name  string
		after time.Duration
		err   error
	}
	cuts := make(chan cut, 2)
	for _, name := range []string{"stalled", "trickle"} {
		go func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				cuts <- cut{name, 0, err}
				return
			}
			defer conn.Close()
			start := time.Now()
			conn.Write([]byte("POST /v1/messages HTTP/1.1\r\nHost: proxy\r\n"))
			closed := make(chan struct{})
			if name == "trickle" {
				// One byte of a header every 200 ms: never a whole request.
				go func() {
					for _, c := range []byte("X-Slow: " + strings.Repeat("a", 200)) {
						select {
						case <-closed:
							return
						case <-time.After(200 * time.Millisecond):
						}
						if _, err := conn.Write([]byte{c}); err != nil {
							return
						}
					}
				}()
			}
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			b, err := io.ReadAll(conn)
			close(closed)
			if err == nil && len(b) > 0 && !bytes.HasPrefix(b, []byte("HTTP/1.1 408")) {
				err = fmt.Errorf("answered %q", b)
			}
			cuts <- cut{name, time.Since(start), err}
		}()
	}
	// Served meanwhile.
	time.Sleep(time.Second)
	if resp, b := p.post(t, "/v1/messages", `{"model":"claude-opus-5-5","max_tokens":8,"messages":[{"role":"user","content":"meanwhile"}]}`); resp.StatusCode != 200 {
		t.Errorf("a request while slow clients hang on: %d %s", resp.StatusCode, b)
	}
	for range 2 {
		c := <-cuts
		if c.err != nil {
			t.Errorf("%s: %v", c.name, c.err)
		} else if c.after < 9*time.Second {
			// No upper bound: the 20 s read deadline would have made err a
			// timeout, so the proxy did the cutting; how late past 10 s a
			// loaded machine did it is not this test's to bound.
			t.Errorf("%s: disconnected after %s, before the 10 s header timeout", c.name, c.after)
		} else {
			t.Logf("%s: disconnected after %s", c.name, c.after.Round(time.Millisecond))
		}
	}
}

// TestPprofFlag: --pprof serves the runtime's profiles on its own address,
// and only there.
func TestPprofFlag(t *testing.T) {
	t.Parallel()
	p := startProxy(t, serveBackend(t, stub.New(stub.Options{})), "--pprof", "127.0.0.1:0", "--drain-delay", "0s")
	addr := p.waitLog(t, `msg="pprof listening" addr=(\S+)`)
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !regexp.MustCompile(`^goroutine profile: total \d+`).Match(b) {
		t.Errorf("pprof goroutines: %d %.100s", resp.StatusCode, b)
	}
	resp, err = http.Get(p.url + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("the API port serves pprof: %d", resp.StatusCode)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, within time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("timed out waiting for %s", what)
	}
}
