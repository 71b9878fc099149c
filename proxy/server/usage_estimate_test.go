package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dragoman-dev/dragoman/proxy/keys"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// TestUsageEstimateIsCountTokens: a backend that answers without usage
// gets the key's row marked as an estimate whose input is the prompt's
// one estimate, the count count_tokens gives for the same request (196
// for 24,000 spaces), not four bytes a token of the body (6,000 and more).
func TestUsageEstimateIsCountTokens(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(backend.Close)
	c := &testClock{t: time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)}
	g := newGate(t, "sqlite://"+filepath.Join(t.TempDir(), "dragoman.db"), c)
	h := newHarness(t, harnessOptions{gate: g, backendURL: backend.URL + "/v1"})
	bob := createKey(t, g, keys.Spec{Name: "bob", TPM: 1 << 30})
	body := `{"model":"local-model","max_tokens":32,"messages":[{"role":"user","content":"` + strings.Repeat(" ", 24000) + `"}]}`
	if resp, b := h.do(http.MethodPost, "/v1/messages", body, []string{"Authorization", "Bearer " + bob}, false); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	want, err := translate.CountTokens([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var rows []keys.Record
	waitFor(t, func() bool {
		if err := g.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rows, err = g.Store().Rows(ctx, time.Time{})
		return err == nil && len(rows) >= 1
	})
	if r := rows[0]; !r.Estimated || r.Input != int64(want) {
		t.Errorf("row: estimated %v, input %d; want an estimate of %d (count_tokens)", r.Estimated, r.Input, want)
	}
}
