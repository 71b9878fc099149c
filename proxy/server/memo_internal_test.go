package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
)

// TestMemoPerConnection: the requests of one client connection share
// its memo; another connection has a memo of its own.
func TestMemoPerConnection(t *testing.T) {
	var mu sync.Mutex
	var seen []*memo.Memo
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, memoOf(r.Context()))
		mu.Unlock()
	}))
	srv.Config.ConnContext = ConnContext
	srv.Start()
	defer srv.Close()
	get := func(c *http.Client) {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	one := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	other := &http.Client{Transport: &http.Transport{}}
	get(one)
	get(one)
	get(other)
	if len(seen) != 3 || seen[0] == nil {
		t.Fatalf("memos seen: %v", seen)
	}
	if seen[0] != seen[1] {
		t.Errorf("two requests on one connection had two memos")
	}
	if seen[2] == seen[0] {
		t.Errorf("another connection shared the first one's memo")
	}
	if memoOf(httptest.NewRequest("GET", "/", nil).Context()) != nil {
		t.Errorf("a request without ConnContext has a memo")
	}
}
