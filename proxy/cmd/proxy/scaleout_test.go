package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestReplicasShareNothing: three proxy processes with one config in front
// of a pool of three stub backends, as three pods of the Helm chart behind
// a Service. 300 sessions send their requests through all three proxies;
// each session always reaches the same backend, though the proxies share
// nothing, and the session header reaches the backend. Mid-load one proxy is taken out as Kubernetes does it: its
// endpoint leaves the Service (the load stops choosing it), then SIGTERM
// while its streams are still flowing. Its streams drain, new requests go
// to the other two, no request fails, and it exits 0.
func TestReplicasShareNothing(t *testing.T) {
	const (
		sessions  = 300
		replicas  = 3
		followUps = 2 // streamed requests per session after the first
	)
	var stubs [3]*stub.Server
	cfg := "model_list:\n"
	for i := range stubs {
		stubs[i] = stub.New(stub.Options{Events: 8, EventDelay: 10 * time.Millisecond}) // a stream lasts about 80 ms
		cfg += fmt.Sprintf("  - model_name: claude-opus-5-5\n    proxy_params:\n      name: gpu-%d\n      model: vendorb/qwen3-coder\n      api_base: %s\n      api_key: os.environ/DRAIN_BACKEND_KEY\n", i, serveBackend(t, stubs[i]))
	}
	// A pool of its own holds one stream open through the drain, so the
	// drain cannot end before the test asks /readyz (the 80 ms streams
	// alone ended first in 2 of 3 runs under -race at load 7: connection
	// refused). Its own pool leaves the session pool's load untouched.
	holdArrived, holdRelease := make(chan struct{}), make(chan struct{})
	cfg += fmt.Sprintf("  - model_name: hold-model\n    proxy_params:\n      model: vendorb/qwen3-coder\n      api_base: %s\n      api_key: os.environ/DRAIN_BACKEND_KEY\n",
		serveBackend(t, holdingBackend(stub.New(stub.Options{}), holdArrived, holdRelease)))
	cfg += "router_settings:\n  routing_strategy: session-affinity\ngeneral_settings:\n  enable_vendora_pass_through: true\n"
	var procs [replicas]*proxyProc
	for i := range procs {
		procs[i] = startProxyConfig(t, cfg, "--grace", "20s")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	// First request of every session, session s through proxy s%3, one
	// request at a time per proxy: where each session lands is its home.
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // no worker outlives the test, whatever stops it
	var failed atomic.Int64
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := p; s < sessions; s += replicas {
				if err := sessionRequest(client, procs[p].url, s, 0, false); err != nil {
					failed.Add(1)
					t.Errorf("session %d request 0 via proxy %d: %v", s, p, err)
				}
			}
		}()
	}
	waitGroup(t, &wg, 60*time.Second, "the first request of every session")
	if failed.Load() > 0 {
		t.FailNow()
	}
	home := make([]int, sessions)
	var groups [3][]int
	counts := sessionCounts(t, stubs[:])
	if len(counts) != sessions {
		t.Fatalf("the backends saw %d sessions, want %d", len(counts), sessions)
	}
	for s, perBackend := range counts {
		home[s] = -1
		for b, n := range perBackend {
			if n == 0 {
				continue
			}
			if home[s] >= 0 {
				t.Fatalf("session %d reached backends %d and %d", s, home[s], b)
			}
			home[s] = b
		}
		if home[s] < 0 {
			t.Fatalf("session %d reached no backend", s)
		}
		groups[home[s]] = append(groups[home[s]], s)
	}
	for b, g := range groups {
		// Rendezvous hashing spreads sessions about evenly (100 each).
		if len(g) < sessions/replicas/2 {
			t.Errorf("backend %d is home to %d sessions of %d: the sessions are not spread", b, len(g), sessions)
		}
	}
	t.Logf("homes: %d, %d, %d sessions", len(groups[0]), len(groups[1]), len(groups[2]))

	// The follow-ups: streams, request n of session s through proxy
	// (s+n)%3, so every session goes through all three. One worker per proxy
	// and home backend: no proxy ever has two requests in flight to one
	// backend, so the load bound never overrides affinity.
	type job struct{ session, n int }
	var queues [3][replicas]chan job
	total := 0
	for b, g := range groups {
		for p := range replicas {
			queues[b][p] = make(chan job, len(g)*followUps)
		}
		for n := 1; n <= followUps; n++ {
			for _, s := range g {
				queues[b][(s+n)%replicas] <- job{s, n}
				total++
			}
		}
		for p := range replicas {
			close(queues[b][p])
		}
	}
	var (
		removed atomic.Bool // proxy 0 is out of the Service
		done    atomic.Int64
		mu      sync.Mutex
		sigterm time.Time
		drained int // streams through proxy 0 started before SIGTERM, ended after
		via     [replicas]int
		errs    []string // of the workers, reported once they are done
	)
	trigger := make(chan struct{})
	var once sync.Once
	run := func(p int, j job) {
		start := time.Now()
		err := sessionRequest(client, procs[p].url, j.session, j.n, true)
		end := time.Now()
		mu.Lock()
		via[p]++
		if p == 0 && !sigterm.IsZero() && start.Before(sigterm) && end.After(sigterm) {
			drained++
		}
		if err != nil {
			failed.Add(1)
			errs = append(errs, fmt.Sprintf("session %d request %d via proxy %d: %v", j.session, j.n, p, err))
		}
		mu.Unlock()
		if done.Add(1) >= int64(total*2/5) {
			once.Do(func() { close(trigger) })
		}
	}
	var leftover [3]chan job   // the job proxy 0's worker held when it left the Service
	var proxy0Out [3]chan bool // closed when proxy 0's worker of a group is gone
	for b := range groups {
		leftover[b] = make(chan job, 1)
		proxy0Out[b] = make(chan bool)
		for p := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p == 0 {
					defer close(proxy0Out[b])
				}
				for j := range queues[b][p] {
					if p == 0 && removed.Load() {
						leftover[b] <- j // proxy 0 left the Service: the others take its jobs
						return
					}
					run(p, j)
				}
				if p == 0 {
					return
				}
				<-proxy0Out[b]
				select {
				case j := <-leftover[b]:
					run(p, j)
				default:
				}
				for j := range queues[b][0] {
					run(p, j)
				}
			}()
		}
	}

	held := make(chan error, 1)
	go func() { held <- heldStream(client, procs[0].url) }()
	<-holdArrived
	<-trigger
	removed.Store(true)               // the endpoint leaves the Service...
	time.Sleep(10 * time.Millisecond) // ...the preStop sleep (shorter than a stream)...
	mu.Lock()
	sigterm = time.Now()
	mu.Unlock()
	if err := procs[0].cmd.Process.Signal(syscall.SIGTERM); err != nil { // ...then SIGTERM
		t.Fatal(err)
	}
	procs[0].waitLog(t, `(shutting down)`)
	if r, err := http.Get(procs[0].url + "/readyz"); err != nil || r.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz of the draining proxy: %v %v, want 503", r, err)
	} else {
		r.Body.Close()
	}
	close(holdRelease)
	if err := <-held; err != nil {
		t.Errorf("the stream held open through the drain: %v", err)
	}
	waitGroup(t, &wg, 90*time.Second, "the follow-up requests")
	for _, e := range errs {
		t.Error(e)
	}
	if code := procs[0].exitCode(t, 25*time.Second); code != 0 {
		t.Errorf("the SIGTERMed proxy exited %d:\n%s", code, procs[0].stderr.String())
	}

	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d requests failed", n, sessions+total)
	}
	// The drain is shown by the held stream: in flight through proxy 0
	// when it got SIGTERM, ended whole after (checked above). Whether a
	// session stream was flowing too depends on where the 10 ms pause
	// fell in the 80 ms streams (none, once in CI): it is logged, not
	// required.
	moved := 0
	counts = sessionCounts(t, stubs[:])
	if len(counts) != sessions {
		t.Fatalf("the backends saw %d sessions, want %d", len(counts), sessions)
	}
	for s, perBackend := range counts {
		for b, n := range perBackend {
			switch {
			case b == home[s] && n != 1+followUps:
				t.Errorf("session %d: %d of its %d requests reached its home backend %d", s, n, 1+followUps, b)
			case b != home[s] && n > 0:
				moved++
				t.Errorf("session %d: %d request(s) reached backend %d, not its home %d", s, n, b, home[s])
			}
		}
	}
	t.Logf("%d sessions, %d requests through proxies %v; proxy 0 SIGTERMed after 40%% of the streams with the held stream and %d session streams flowing, all drained; %d sessions moved; 0 failed",
		sessions, sessions+total, via, drained, moved)
}

// holdingBackend serves backend, except that it holds a request saying
// "hold the drain open" until release is closed (or its client is gone),
// having said on arrived that it has it.
func holdingBackend(backend http.Handler, arrived, release chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte("hold the drain open")) {
			close(arrived)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		backend.ServeHTTP(w, r)
	})
}

// heldStream sends the stream holdingBackend holds and checks it ends
// whole.
func heldStream(client *http.Client, url string) error {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(`{"model":"hold-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hold the drain open"}]}`))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d, %v: %s", resp.StatusCode, err, b)
	}
	if err := ssecheck.Check(b); err != nil {
		return fmt.Errorf("%v\n%s", err, b)
	}
	if evs, _ := ssecheck.Parse(b); evs[len(evs)-1].Name != "message_stop" {
		return fmt.Errorf("it ends with %s", evs[len(evs)-1].Name)
	}
	return nil
}

// sessionRequest sends request n of session s, a Messages request with the
// coding client's session header, and checks the answer is whole.
func sessionRequest(client *http.Client, url string, s, n int, stream bool) error {
	body := fmt.Sprintf(`{"model":"claude-opus-5-5","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"session s%03d request %d"}]}`, stream, s, n)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("X-Claude-Code-Session-Id", sessionID(s))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the answer: %w (%d bytes read)", err, len(b))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	want := fmt.Sprintf("You said: session s%03d request %d", s, n)
	if !stream {
		if !bytes.Contains(b, []byte(want)) {
			return fmt.Errorf("answer lacks %q: %s", want, b)
		}
		return nil
	}
	if err := ssecheck.Check(b); err != nil {
		return fmt.Errorf("stream: %v\n%s", err, b)
	}
	evs, _ := ssecheck.Parse(b)
	if last := evs[len(evs)-1].Name; last != "message_stop" {
		return fmt.Errorf("stream ends with %s", last)
	}
	if got := ssecheck.Text(evs); !strings.Contains(got, want) {
		return fmt.Errorf("stream text %q lacks %q", got, want)
	}
	return nil
}

var sessionText = regexp.MustCompile(`session s(\d{3}) request \d`)

// sessionCounts counts, for each session, the chat requests each stub
// backend saw of it; each must carry the session's header, forwarded.
func sessionCounts(t *testing.T, backends []*stub.Server) map[int][]int {
	t.Helper()
	out := map[int][]int{}
	for b, srv := range backends {
		for _, r := range srv.Requests() {
			m := sessionText.FindSubmatch(r.Body)
			if r.Path != "/v1/chat/completions" || m == nil {
				continue
			}
			s, _ := strconv.Atoi(string(m[1]))
			if got, want := r.Header.Get("X-Claude-Code-Session-Id"), sessionID(s); got != want {
				t.Errorf("backend %d got session %d's request with session header %q, want %q", b, s, got, want)
			}
			if out[s] == nil {
				out[s] = make([]int, len(backends))
			}
			out[s][b]++
		}
	}
	return out
}

func sessionID(s int) string { return "0d6a1c52-" + strconv.Itoa(s) }
