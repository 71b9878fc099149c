package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/ssecheck"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

// TestSigtermOneOfThreeUnderLoad: three proxy processes, 24 clients
// streaming Messages requests through them in turn, each request on a new
// connection, a refused connection sent to the next proxy (a client's own
// list of proxies, as compose or a plain TCP balancer does). One proxy
// gets SIGTERM mid-load: no request fails (it serves every request it
// accepts, through its drain delay, then refuses connections), every
// stream in flight ends whole, and it exits 0.
func TestSigtermOneOfThreeUnderLoad(t *testing.T) {
	const (
		replicas = 3
		clients  = 24
	)
	backend := stub.New(stub.Options{Events: 16, EventDelay: 10 * time.Millisecond}) // a stream lasts about 160 ms
	base := serveBackend(t, backend)
	var procs [replicas]*proxyProc
	for i := range procs {
		procs[i] = startProxy(t, base, "--grace", "20s", "--drain-delay", "1s")
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	var (
		stopAt             atomic.Pointer[time.Time]
		sigterm            atomic.Pointer[time.Time]
		done, refused      atomic.Int64
		servedAfterSigterm atomic.Int64 // by the proxy told to stop
		mu                 sync.Mutex
		failures           []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				if at := stopAt.Load(); at != nil && time.Now().After(*at) {
					return
				}
				text := fmt.Sprintf("client %d request %d", c, n)
				// The next proxy in turn; a refused connection goes to the
				// one after it.
				for try := range replicas {
					p := (c + n + try) % replicas
					began := time.Now()
					events, err := messagesStream(client, procs[p].url, text)
					if isRefused(err) {
						refused.Add(1)
						continue
					}
					if err != nil {
						fail("%s via proxy %d: %v\n%s", text, p, err, events)
					} else {
						done.Add(1)
						if s := sigterm.Load(); p == 0 && s != nil && began.After(*s) {
							servedAfterSigterm.Add(1)
						}
					}
					break
				}
			}
		}()
	}
	time.Sleep(time.Second)
	now := time.Now()
	sigterm.Store(&now)
	if err := procs[0].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Load through the drain delay (1 s) and after, when proxy 0 refuses.
	time.Sleep(3 * time.Second)
	end := time.Now()
	stopAt.Store(&end)
	waitGroup(t, &wg, 60*time.Second, "the clients")
	if code := procs[0].exitCode(t, 25*time.Second); code != 0 {
		t.Errorf("the proxy told to stop exited %d:\n%s", code, procs[0].stderr.String())
	}
	for _, f := range failures {
		t.Error(f)
	}
	if len(failures) > 0 {
		t.Logf("the log of the proxy told to stop:\n%s", procs[0].stderr.String())
	}
	t.Logf("%d requests done, %d failed; proxy 0 served %d that began after its SIGTERM; %d connections refused and sent to the next proxy",
		done.Load(), len(failures), servedAfterSigterm.Load(), refused.Load())
	if done.Load() < 100 {
		t.Errorf("only %d requests done: the load did not run", done.Load())
	}
	if refused.Load() == 0 {
		t.Error("no connection was refused: the proxy told to stop kept accepting")
	}
}

// messagesStream sends one streamed Messages request and checks that its
// answer is a whole stream with the stub's answer to text.
func messagesStream(client *http.Client, url, text string) ([]byte, error) {
	body := fmt.Sprintf(`{"model":"claude-opus-5-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":%q}]}`, text)
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", clientKey)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	events, err := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode != http.StatusOK:
		return events, fmt.Errorf("status %d", resp.StatusCode)
	case err != nil:
		return events, fmt.Errorf("the stream broke off: %w", err)
	}
	if err := ssecheck.Check(events); err != nil {
		return events, err
	}
	evs, _ := ssecheck.Parse(events)
	if last := evs[len(evs)-1].Name; last != "message_stop" {
		return events, fmt.Errorf("the stream ends with %s", last)
	}
	if got := ssecheck.Text(evs); got != "Hello from stub-backend. You said: "+text {
		return events, fmt.Errorf("text %q", got)
	}
	return events, nil
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
