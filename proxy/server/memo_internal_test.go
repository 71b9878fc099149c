package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// TestMemoPerConnectionAndKey: the requests of one client connection
// with one key share a memo; another key on the same connection (a
// gateway carrying several users), and another connection, have memos of
// their own.
func TestMemoPerConnectionAndKey(t *testing.T) {
	alice, bob := &keys.Key{Name: "alice"}, &keys.Key{Name: "bob"}
	type seen struct{ master, alice, bob *memo.Memo }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{memoOf(r.Context(), nil), memoOf(r.Context(), alice), memoOf(r.Context(), bob)})
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
	if len(got) != 3 || got[0].master == nil {
		t.Fatalf("memos seen: %v", got)
	}
	if got[0] != got[1] {
		t.Errorf("two requests on one connection had other memos for the same keys")
	}
	if a := got[0]; a.master == a.alice || a.alice == a.bob || a.master == a.bob {
		t.Errorf("two keys on one connection shared a memo")
	}
	if got[2].master == got[0].master || got[2].alice == got[0].alice {
		t.Errorf("another connection shared the first one's memos")
	}
	if memoOf(httptest.NewRequest("GET", "/", nil).Context(), nil) != nil {
		t.Errorf("a request without ConnContext has a memo")
	}
}
