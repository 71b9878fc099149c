package server

import (
	"errors"
	"net/http"
	"sync"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/overflow"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
)

// RetryMaxTokens is the reason a request is sent again with a smaller
// max_tokens (dragoman_backend_retries_total{reason="max_tokens"}).
const RetryMaxTokens = "max_tokens"

// refit answers a backend's refusal of a request whose prompt fits its
// window when the output asked for beside it does not, by the backend's
// own numbers (vLLM's "you requested N output tokens and your prompt
// contains at least P input tokens", SGLang's total): the proxy's
// estimate of the prompt put max_tokens too high. It makes the request
// again for the backend held, once, with max_tokens = window - prompt -
// a margin (translate.RoomFor); the client has seen no byte of the
// first answer (a status, or an overflow at the start of a stream:
// streamStartError). It reports whether there is a request to send.
func (x *exchange) refit(err error) bool {
	if x.refitted || x.lease == nil {
		return false
	}
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Kind != upstream.Status {
		return false
	}
	o, ok := overflow.Detect(ue.Status, ue.Body)
	if !ok {
		return false
	}
	prompt, fits := o.PromptFits()
	if !fits {
		return false
	}
	n := translate.RoomFor(o.Maximum, prompt)
	if n < 1 || (x.req.MaxTokens > 0 && n >= x.req.MaxTokens) {
		return false
	}
	x.refitted = true
	if x.retranslate() != nil {
		return false
	}
	body, ok := translate.WithMaxTokens(x.req.Body, n)
	bufpool.Put(x.req.Body)
	x.req.Body, x.req.MaxTokens = body, n
	if !ok {
		return false
	}
	if x.obs != nil {
		x.obs.maxTokens = n
	}
	x.s.log.Info("backend refused the output asked for beside the prompt; sent again with what fits",
		"model", x.alias, "backend", x.lease.Backend.Name, "prompt_tokens", prompt, "context_window", o.Maximum, "max_tokens", n)
	return true
}

// inWindow refuses a translated request whose prompt cannot fit the
// window of the backend held (configured or discovered), whatever the
// client's format and the backend's kind, before it is sent: some servers
// (Ollama) cut such a prompt silently, keeping its first tokens and its
// tail (the system prompt and the tools are what goes), and answer 200
// from what is left. The prompt is the translation's estimate of it (a
// Chat backend's body), or the estimate of the Messages body a Messages
// backend (vendora/) gets.
func (x *exchange) inWindow(req translate.BackendRequest, err error) (translate.BackendRequest, error) {
	w := x.route.window
	if err != nil || w <= 0 || x.lease == nil {
		return req, err
	}
	prompt := x.route.target.ScalePrompt(req.InputTokens)
	if x.route.Protocol == config.ProtocolMessages {
		if n, cerr := translate.CountTokens(req.Body); cerr == nil {
			prompt = n
		}
	}
	if prompt >= w {
		bufpool.Put(req.Body)
		return translate.BackendRequest{}, &translate.ContextOverflowError{Tokens: prompt, Window: w}
	}
	return req, nil
}

// promptScales holds, for each backend model, the ratio (per mille) of the
// prompt tokens it reported (usage.prompt_tokens) to the proxy's estimate
// of the same prompts: a moving average (each request a quarter) within
// [minScale, maxScale], given to the window's checks as
// Target.PromptScale, so that a backend whose tokenizer counts more than
// the estimate gets a max_tokens that fits beside the prompt at the first
// attempt. It is a property of the backend's tokenizer against the
// estimator, averaged over requests, and holds nothing of any one.
type promptScales struct {
	mu sync.Mutex
	m  map[backendModel]int
}

const (
	minScale = 500
	maxScale = 3000
)

func (p *promptScales) get(k backendModel) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m[k]
}

func (p *promptScales) learn(k backendModel, reported, estimate int) {
	sample := min(max(int(int64(reported)*1000/int64(estimate)), minScale), maxScale)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[backendModel]int{}
	}
	if old, ok := p.m[k]; ok {
		sample = (3*old + sample) / 4
	}
	p.m[k] = sample
}

// noteUsage notes the usage a backend reported for the exchange (for the
// metrics and the trace), and learns from a Chat backend's prompt count
// how its tokenizer compares with the estimate (promptScales).
func (x *exchange) noteUsage(w http.ResponseWriter, u *chat.Usage) {
	noteUsage(w, u)
	if u == nil || u.PromptTokens <= 0 || x.req.InputTokens <= 0 || x.route.Protocol == config.ProtocolMessages {
		return
	}
	x.s.scales.learn(backendModel{x.route.apiBase, x.route.BackendModel}, u.PromptTokens, x.req.InputTokens)
}
