package server_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/server"
	"github.com/dragoman-dev/dragoman/proxy/stub"
)

const admissionStream = `{"model":"local-model","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

// firstEvent opens a Messages stream and returns when its first event
// came, with the rest of the stream's body read to its end on done.
func firstEvent(t *testing.T, h *harness, body io.Reader, done *sync.WaitGroup) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/messages", body)
	req.Header.Set("Authorization", "Bearer "+clientKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		resp.Body.Close()
		return 0, err
	}
	took := time.Since(start)
	done.Add(1)
	go func() {
		defer done.Done()
		io.Copy(io.Discard, br)
		resp.Body.Close()
	}()
	return took, nil
}

// TestAdmissionGivesTheShareBackOnceAnswered: with a budget of one
// request at a time, each share held up to 10 s, three streams of 3 s
// each all start within two seconds: each gives its share back once the
// backend answered, not at the stream's end or at the hold's.
func TestAdmissionGivesTheShareBackOnceAnswered(t *testing.T) {
	h := newHarness(t, harnessOptions{stub: stub.Options{Events: 6, PadEvents: true, EventDelay: 500 * time.Millisecond}})
	defer server.SetAdmission(h.server, 1, 10*time.Second)()
	var done sync.WaitGroup
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := firstEvent(t, h, strings.NewReader(admissionStream), &done)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			took = append(took, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	done.Wait()
	for _, d := range took {
		if d > 2*time.Second {
			t.Errorf("a stream's first event after %s (all: %v): the share was not given back once the backend answered", d, took)
		}
	}
	if len(took) != 3 {
		t.Fatalf("%d of 3 streams started", len(took))
	}
}

// TestAdmissionSlowUploader: a client that sends half its body and
// stalls holds its share no longer than the hold: the next request is
// served, and the slow one too once its body is whole.
func TestAdmissionSlowUploader(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	defer server.SetAdmission(h.server, 1, 200*time.Millisecond)()
	pr, pw := io.Pipe()
	var done sync.WaitGroup
	slow := make(chan error, 1)
	go func() {
		_, err := firstEvent(t, h, pr, &done)
		slow <- err
	}()
	half := len(admissionStream) / 2
	if _, err := pw.Write([]byte(admissionStream[:half])); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the slow one holds its share, reading
	start := time.Now()
	if _, err := firstEvent(t, h, strings.NewReader(admissionStream), &done); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the request behind a slow uploader waited %s", d)
	}
	if _, err := pw.Write([]byte(admissionStream[half:])); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-slow; err != nil {
		t.Errorf("the slow uploader: %v", err)
	}
	done.Wait()
}

// TestAdmissionClientGoneWhileWaiting: a request whose client goes away
// while it waits for a share ends without an answer, and takes none.
func TestAdmissionClientGoneWhileWaiting(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	defer server.SetAdmission(h.server, 1, time.Minute)()
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/messages", pr)
		req.Header.Set("Authorization", "Bearer "+clientKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write([]byte(`{"model":`)) // holds the whole budget for its minute
	time.Sleep(100 * time.Millisecond)
	ctxReq, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/messages", strings.NewReader(admissionStream))
	ctxReq.Header.Set("Authorization", "Bearer "+clientKey)
	client := &http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := client.Do(ctxReq); err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d while the whole budget was held", resp.StatusCode)
	}
	// The slow client goes away too: its share comes back, and the next
	// request is served.
	pw.CloseWithError(io.ErrUnexpectedEOF)
	var done sync.WaitGroup
	if _, err := firstEvent(t, h, strings.NewReader(admissionStream), &done); err != nil {
		t.Fatal(err)
	}
	done.Wait()
}
