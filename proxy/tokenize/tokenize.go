// Package tokenize asks a backend's own tokenizer how many tokens a
// prompt is, in the body the backend's server expects:
//
//	vLLM, SGLang, a server not recognized  POST {root}/tokenize {"model","prompt"} → {"count"} (or {"tokens":[…]})
//	llama.cpp (llama-server)               POST {root}/tokenize {"content"}        → {"tokens":[…]}
//
// llama-server answers vLLM's body with {"tokens":[]}: the body is chosen
// by the server discovery found (package discover's names). Ollama and LM
// Studio serve no tokenizer: Count says so without asking. A backend that
// answers 404 or 405 has none and is not asked again; an empty token list
// for a text that is not empty is no count, but no proof of an absent
// tokenizer either.
//
// A session sends its whole conversation every turn: Count takes the
// prompt in parts (the system prompt and tools, then each message) and
// remembers the count of each prompt it counted, keyed by the backend and
// a hash of the exact bytes of its parts; a later prompt that starts with
// a counted one has only its new parts tokenized.
package tokenize

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/discover"
)

// maxEntries bounds the counts kept: at about 100 bytes each, 8192 of them
// are under a megabyte.
const maxEntries = 8192

// timeout bounds one call of a backend's tokenizer.
const timeout = 5 * time.Second

// Counter counts prompts with backends' tokenizers. Its zero value is not
// ready: use New. It is safe for concurrent use.
type Counter struct {
	client *http.Client

	mu     sync.Mutex
	absent map[string]bool // root → answered 404/405
	// counts holds the count of each prompt counted, by backend and the
	// hash of its parts' exact bytes. Why it may be shared by every
	// client: the value is a pure function of its key (the backend's
	// tokenizer applied to those bytes), so a hit answers exactly what
	// asking the backend would have, and no request's answer depends on
	// who sent a prompt before; a hit only saves the call. It holds no
	// text, and is bounded (maxEntries, the oldest first out).
	counts map[key]int
	order  []key
	next   int
}

type key struct {
	backend string
	sum     [sha256.Size]byte
}

// New returns a Counter that calls backends with client (nil:
// http.DefaultClient).
func New(client *http.Client) *Counter {
	if client == nil {
		client = http.DefaultClient
	}
	return &Counter{client: client, absent: map[string]bool{}, counts: map[key]int{}}
}

// Backend is the tokenizer of one backend model.
type Backend struct {
	Server string // as discovery named it; "" when not known
	Root   string // the server's root URL (api_base without /v1)
	APIKey string
	Model  string
}

// Has says whether the backend's server is one with a tokenizer, and it
// has not said it has none.
func (c *Counter) Has(b Backend) bool {
	switch b.Server {
	case discover.Ollama, discover.LMStudio:
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.absent[b.Root]
}

// Count counts the prompt made of parts with the backend's tokenizer; ok
// is false when the backend has none or gave no count.
func (c *Counter) Count(ctx context.Context, b Backend, parts []string) (int, bool) {
	if !c.Has(b) {
		return 0, false
	}
	id := b.Server + "\x00" + b.Root + "\x00" + b.Model
	sums := prefixSums(parts)
	known, from := 0, 0
	c.mu.Lock()
	for i := len(sums) - 1; i >= 0; i-- {
		if n, ok := c.counts[key{id, sums[i]}]; ok {
			known, from = n, i+1
			break
		}
	}
	c.mu.Unlock()
	if from == len(parts) {
		return known, true
	}
	n, ok := c.ask(ctx, b, strings.Join(parts[from:], ""))
	if !ok {
		return 0, false
	}
	total := known + n
	if len(sums) > 0 {
		c.remember(key{id, sums[len(sums)-1]}, total)
	}
	return total, true
}

// prefixSums are the hashes of parts[:1], parts[:2], …: each part's
// length and bytes, chained.
func prefixSums(parts []string) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, len(parts))
	var prev [sha256.Size]byte
	for i, p := range parts {
		h := sha256.New()
		h.Write(prev[:])
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		io.WriteString(h, p)
		h.Sum(out[i][:0])
		prev = out[i]
	}
	return out
}

func (c *Counter) remember(k key, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.counts[k]; ok {
		return
	}
	if len(c.order) < maxEntries {
		c.order = append(c.order, k)
	} else {
		delete(c.counts, c.order[c.next])
		c.order[c.next] = k
		c.next = (c.next + 1) % maxEntries
	}
	c.counts[k] = n
}

// ask tokenizes text with the backend's /tokenize.
func (c *Counter) ask(ctx context.Context, b Backend, text string) (int, bool) {
	var payload []byte
	var err error
	if b.Server == discover.LlamaCpp {
		payload, err = json.Marshal(struct {
			Content string `json:"content"`
		}{text})
	} else {
		payload, err = json.Marshal(struct {
			Model  string `json:"model"`
			Prompt string `json:"prompt"`
		}{b.Model, text})
	}
	if err != nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.Root+"/tokenize", bytes.NewReader(payload))
	if err != nil {
		return 0, false
	}
	req.Header.Set("Content-Type", "application/json")
	if b.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+b.APIKey)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		c.mu.Lock()
		c.absent[b.Root] = true
		c.mu.Unlock()
		return 0, false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	var out struct {
		Count  *int             `json:"count"`
		Tokens []jsontext.Value `json:"tokens"`
	}
	if json.Unmarshal(body, &out) != nil {
		return 0, false
	}
	switch {
	case out.Count != nil:
		return *out.Count, true
	case len(out.Tokens) > 0 || text == "":
		return len(out.Tokens), true
	}
	return 0, false // {"tokens":[]} for a text: the body was not the server's
}
