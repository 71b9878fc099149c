// Command soak runs many concurrent Messages streams through the proxy for
// minutes and checks that it loses nothing and holds steady: every stream
// well formed and whole, no errors, goroutines and memory flat.
//
// It runs the real binaries, bin/proxy and bin/stub-backend (make build),
// as processes of their own on loopback ports. The proxy's goroutines are
// counted through its --pprof endpoint; its threads and resident memory
// come from /proc/PID/status.
//
//	soak --bin bin --duration 2m --streams 200
//
// Some clients hang up mid-stream on purpose (--hangup-every), the way a
// user interrupts a coding client: those streams are counted apart, and
// exercise the cancellation paths the soak watches for leaks.
//
// It exits 1 when a request failed or the proxy grew: goroutines or RSS at
// the end of the load more than a margin above their highest in the first
// half of the load (after warm-up), or goroutines still well above the
// idle baseline once the load is over.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/tools/internal/procs"
)

func main() {
	os.Exit(run())
}

type options struct {
	bin         string
	duration    time.Duration
	streams     int
	warmup      time.Duration
	sample      time.Duration
	events      int
	eventDelay  time.Duration
	hangupEvery int
	keepDir     bool
}

func run() int {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory holding proxy and stub-backend (make build)")
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "how long the load runs")
	flag.IntVar(&o.streams, "streams", 200, "concurrent Messages streams")
	flag.DurationVar(&o.warmup, "warmup", 0, "load before the first measurement (default: a tenth of -duration, 5–20 s)")
	flag.DurationVar(&o.sample, "sample", 0, "interval between progress lines (default: a tenth of -duration, at least 5 s)")
	flag.IntVar(&o.events, "events", 40, "text events in each stub answer")
	flag.DurationVar(&o.eventDelay, "event-delay", 25*time.Millisecond, "delay between the stub's events (a stream lasts about events × delay)")
	flag.IntVar(&o.hangupEvery, "hangup-every", 20, "each client hangs up mid-stream on every Nth of its requests (0: never)")
	flag.BoolVar(&o.keepDir, "keep", false, "keep the work directory (config, logs)")
	flag.Parse()
	if o.warmup <= 0 {
		o.warmup = min(max(o.duration/10, 5*time.Second), 20*time.Second)
	}
	if o.sample <= 0 {
		o.sample = max(o.duration/10, 5*time.Second)
	}
	if o.warmup >= o.duration {
		fmt.Fprintln(os.Stderr, "soak: -warmup must be shorter than -duration")
		return 2
	}
	ok, err := soak(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

const (
	clientKey  = "sk-soak-client-key"
	backendKey = "sk-soak-backend-key"
	alias      = "claude-opus-5-5"
)

func soak(o options) (bool, error) {
	dir, err := os.MkdirTemp("", "dragoman-soak-")
	if err != nil {
		return false, err
	}
	if o.keepDir {
		fmt.Println("work directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	stub, stubURL, err := procs.StartOnFreePort(dir, "stub-backend", "/healthz", nil,
		filepath.Join(o.bin, "stub-backend"), "--host", "127.0.0.1", "--port", "PORT",
		"--events", strconv.Itoa(o.events), "--event-delay", o.eventDelay.String())
	if err != nil {
		return false, err
	}
	defer stub.Stop(10 * time.Second)

	cfg := fmt.Sprintf("model_list:\n  - model_name: %s\n    proxy_params:\n      model: vendorb/stub-model\n      api_base: %s/v1\n      api_key: os.environ/SOAK_BACKEND_KEY\ngeneral_settings:\n  enable_vendora_pass_through: true\n", alias, stubURL)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return false, err
	}
	pprofPort, err := procs.FreePort()
	if err != nil {
		return false, err
	}
	pprofURL := "http://127.0.0.1:" + strconv.Itoa(pprofPort)
	proxy, proxyURL, err := procs.StartOnFreePort(dir, "proxy", "/healthz", []string{"PROXY_API_KEY=" + clientKey, "SOAK_BACKEND_KEY=" + backendKey},
		filepath.Join(o.bin, "proxy"), "--config", cfgPath, "--host", "127.0.0.1", "--port", "PORT",
		"--pprof", "127.0.0.1:"+strconv.Itoa(pprofPort), "--log-level", "warn")
	if err != nil {
		return false, err
	}
	defer proxy.Stop(10 * time.Second)

	fmt.Printf("soak: %d concurrent Messages streams for %s through %s (pid %d) in front of %s (pid %d)\n",
		o.streams, o.duration, proxy.Path, proxy.PID(), stub.Path, stub.PID())
	fmt.Printf("      each stream %d events %s apart; every %dth request of a client hangs up mid-stream; warm-up %s\n\n",
		o.events, o.eventDelay, o.hangupEvery, o.warmup)

	start := time.Now()
	base, err := measure(proxy, pprofURL)
	if err != nil {
		return false, err
	}
	fmt.Printf("  %-9s %9s %7s %8s %11s %8s %9s\n", "time", "done", "errors", "hung-up", "goroutines", "threads", "rss")
	row := func(label string, m sample, c counts) {
		fmt.Printf("  %-9s %9d %7d %8d %11d %8d %9s\n", label, c.done, c.errors, c.hungUp, m.goroutines, m.threads, mb(m.rss))
	}
	row("idle", base, counts{})

	var st stats
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: o.streams, MaxConnsPerHost: 0, DisableCompression: true}
	client := &http.Client{Transport: transport}
	var wg sync.WaitGroup
	for w := range o.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(ctx, client, proxyURL, w, o.hangupEvery, &st)
		}()
	}

	var warm, last sample
	var firstHalf sample // the highest of each, from warm-up to half-time
	half := start.Add(o.duration / 2)
	note := func(at time.Time, m sample) {
		if at.After(half) {
			return
		}
		firstHalf.goroutines = max(firstHalf.goroutines, m.goroutines)
		firstHalf.threads = max(firstHalf.threads, m.threads)
		firstHalf.rss = max(firstHalf.rss, m.rss)
	}
	warmed := false
	tick := time.NewTicker(time.Second)
	nextRow := start.Add(o.sample)
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
			continue
		case <-tick.C:
		}
		now := time.Now()
		label := fmt.Sprintf("%ds", int(now.Sub(start).Round(time.Second).Seconds()))
		switch {
		case !warmed && now.Sub(start) >= o.warmup:
			if warm, err = measure(proxy, pprofURL); err != nil {
				return false, err
			}
			warmed = true
			note(now, warm)
			row(label+" warm", warm, st.snapshot())
			nextRow = now.Add(o.sample)
		case warmed && now.After(nextRow):
			nextRow = nextRow.Add(o.sample)
			m, err := measure(proxy, pprofURL)
			if err != nil {
				return false, err
			}
			note(now, m)
			row(label, m, st.snapshot())
			procs.ClearStub(stubURL)
		}
	}
	// The last measurement under load, before the clients stop.
	if last, err = measure(proxy, pprofURL); err != nil {
		return false, err
	}
	tick.Stop()
	loadTime := time.Since(start)
	wg.Wait()
	final := st.snapshot()
	row("end", last, final)

	// Idle again: the clients' connections closed, in-flight work gone.
	transport.CloseIdleConnections()
	var after sample
	for i := 0; i < 20; i++ {
		time.Sleep(250 * time.Millisecond)
		if after, err = measure(proxy, pprofURL); err != nil {
			return false, err
		}
		if after.goroutines <= base.goroutines+idleSlack(o.streams) {
			break
		}
	}
	row("after", after, final)

	logs, _ := os.ReadFile(proxy.LogPath)
	keyInLogs := bytes.Contains(logs, []byte(clientKey)) || bytes.Contains(logs, []byte(backendKey))
	proxy.Stop(10 * time.Second)
	exitCode := proxy.ExitCode()

	fmt.Println()
	fmt.Printf("requests done: %d (%.1f/s), errors: %d, client hang-ups: %d\n", final.done, float64(final.done)/loadTime.Seconds(), final.errors, final.hungUp)
	fmt.Printf("goroutines: %d idle, %d at most in the first half of the load, %d at its end, %d idle again\n", base.goroutines, firstHalf.goroutines, last.goroutines, after.goroutines)
	fmt.Printf("threads:    %d idle, %d at most in the first half of the load, %d at its end\n", base.threads, firstHalf.threads, last.threads)
	fmt.Printf("RSS:        %s idle, %s at most in the first half of the load, %s at its end, %s idle again\n", mb(base.rss), mb(firstHalf.rss), mb(last.rss), mb(after.rss))

	var failures []string
	if final.errors > 0 {
		failures = append(failures, fmt.Sprintf("%d errors; the first: %s", final.errors, strings.Join(st.firstErrors(), " | ")))
	}
	if final.done == 0 {
		failures = append(failures, "no request completed")
	}
	if limit := firstHalf.goroutines + firstHalf.goroutines/10 + 50; last.goroutines > limit {
		failures = append(failures, fmt.Sprintf("goroutines grew under steady load: %d at most in the first half, %d at the end (limit %d)", firstHalf.goroutines, last.goroutines, limit))
	}
	if limit := base.goroutines + idleSlack(o.streams); after.goroutines > limit {
		failures = append(failures, fmt.Sprintf("goroutines left once idle: %d, idle baseline %d (limit %d, for the proxy's pooled backend connections)", after.goroutines, base.goroutines, limit))
	}
	if limit := firstHalf.rss + firstHalf.rss/4 + 16<<20; last.rss > limit {
		failures = append(failures, fmt.Sprintf("RSS grew under steady load: %s at most in the first half, %s at the end (limit %s)", mb(firstHalf.rss), mb(last.rss), mb(limit)))
	}
	if keyInLogs {
		failures = append(failures, "a key reached the proxy's log")
	}
	if exitCode != 0 {
		failures = append(failures, fmt.Sprintf("the proxy exited %d on SIGTERM", exitCode))
	}
	if len(failures) > 0 {
		fmt.Println("\nFAIL")
		for _, f := range failures {
			fmt.Println("  -", f)
		}
		fmt.Println("  proxy log:", proxy.LogPath, "(run with -keep to keep it)")
		return false, nil
	}
	fmt.Println("\nPASS: no errors; goroutines and RSS flat under load; back to idle after it; the proxy exited 0 on SIGTERM")
	return true, nil
}

// idleSlack is how far above the idle baseline the goroutine count may
// stay once the load ends: the proxy keeps idle connections to the backend
// for reuse, two goroutines each.
func idleSlack(streams int) int { return 2*streams + 20 }

// counts are the clients' tallies.
type counts struct{ done, errors, hungUp int64 }

type stats struct {
	done, errors, hungUp atomic.Int64
	mu                   sync.Mutex
	first                []string
}

func (s *stats) snapshot() counts {
	return counts{s.done.Load(), s.errors.Load(), s.hungUp.Load()}
}

func (s *stats) fail(err error) {
	s.errors.Add(1)
	s.mu.Lock()
	if len(s.first) < 3 {
		s.first = append(s.first, err.Error())
	}
	s.mu.Unlock()
}

func (s *stats) firstErrors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.first...)
}

// worker sends streams one after another until ctx ends; the stream in
// flight then runs to its end.
func worker(ctx context.Context, client *http.Client, url string, w, hangupEvery int, st *stats) {
	for n := 1; ctx.Err() == nil; n++ {
		hangUp := hangupEvery > 0 && n%hangupEvery == 0
		want := fmt.Sprintf("soak %d-%d", w, n)
		err := stream(client, url, want, hangUp)
		switch {
		case errors.Is(err, errHungUp):
			st.hungUp.Add(1)
		case err != nil:
			st.fail(fmt.Errorf("client %d request %d: %w", w, n, err))
		default:
			st.done.Add(1)
		}
	}
}

var errHungUp = errors.New("hung up")

// stream sends one streaming Messages request and checks the answer: 200,
// a well-formed event stream ending in message_stop, the whole text.
func stream(client *http.Client, url, text string, hangUp bool) error {
	body := `{"model":"` + alias + `","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("x-api-key", clientKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if hangUp {
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadSlice('\n')
			if err != nil {
				return fmt.Errorf("before hanging up: %w", err)
			}
			if bytes.Contains(line, []byte("text_delta")) {
				return errHungUp // Close (deferred) drops the connection mid-stream
			}
		}
	}
	events, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading the stream: %w", err)
	}
	if err := ssecheck.Check(events); err != nil {
		return fmt.Errorf("malformed stream: %w", err)
	}
	evs, _ := ssecheck.Parse(events)
	if last := evs[len(evs)-1]; last.Name != "message_stop" {
		return fmt.Errorf("the stream ends with %s: %s", last.Name, last.Data)
	}
	if got, want := ssecheck.Text(evs), "Hello from stub-backend. You said: "+text; got != want {
		return fmt.Errorf("text %q, want %q", got, want)
	}
	return nil
}

// sample is the proxy's state at one moment.
type sample struct {
	goroutines   int
	threads, rss int64
}

func measure(p *procs.Process, pprofURL string) (sample, error) {
	var s sample
	var err error
	if s.goroutines, err = procs.Goroutines(pprofURL + "/debug/pprof/goroutine?debug=1"); err != nil {
		return s, err
	}
	status, err := procs.ReadStatus(p.PID())
	if err != nil {
		return s, err
	}
	s.rss, s.threads = status.RSS, status.Threads
	return s, nil
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
