package discover

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-json-experiment/json"
)

// HTTPError is a backend's non-2xx answer to a discovery request.
type HTTPError struct {
	Method, Path string
	Status       int
	Body         []byte // bounded
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s %s answered %d", e.Method, e.Path, e.Status)
}

// Probe asks the backend at apiBase (its URL ending in /v1) what it is and
// what it knows of model. Its error is that of GET /v1/models, the one
// request every server answers: an *HTTPError, or the transport's (the
// backend is down). Later requests that fail leave their part unknown.
// ctx bounds the whole probe.
func Probe(ctx context.Context, client *http.Client, apiBase, apiKey, model string) (Info, error) {
	if client == nil {
		client = http.DefaultClient
	}
	p := prober{ctx: ctx, client: client, key: apiKey, model: model, base: strings.TrimRight(apiBase, "/")}
	p.root = strings.TrimSuffix(p.base, "/v1")
	var info Info
	body, err := p.do(http.MethodGet, p.base+"/models", "/v1/models", nil)
	if err != nil {
		return info, err
	}
	list, err := ParseModels(body, model)
	if err != nil {
		return info, err
	}
	info.Server, info.Models = list.Server, list.IDs
	if list.MaxModelLen > 0 {
		info.ContextWindow, info.WindowSource = list.MaxModelLen, "GET /v1/models max_model_len"
		if info.Server == "" {
			info.Server = VLLM
		}
	}
	if info.Server == VLLM || info.Server == SGLang {
		return info, nil
	}
	asks := []func(*Info) bool{p.llamaCpp, p.ollama, p.lmStudio}
	switch info.Server {
	case LlamaCpp:
		asks = asks[:1]
	case Ollama:
		asks = asks[1:2]
	case LMStudio:
		asks = asks[2:]
	}
	for _, ask := range asks {
		if ctx.Err() != nil || ask(&info) {
			break
		}
	}
	return info, nil
}

type prober struct {
	ctx        context.Context
	client     *http.Client
	key, model string
	base, root string
}

// maxBody bounds a discovery answer.
const maxBody = 4 << 20

func (p *prober) do(method, url, path string, payload []byte) ([]byte, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(p.ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.key != "" {
		req.Header.Set("Authorization", "Bearer "+p.key)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		if len(b) > 2048 {
			b = b[:2048]
		}
		return nil, &HTTPError{Method: method, Path: path, Status: resp.StatusCode, Body: b}
	}
	return b, nil
}

func (p *prober) llamaCpp(info *Info) bool {
	body, err := p.do(http.MethodGet, p.root+"/props", "/props", nil)
	if err != nil {
		return false
	}
	window, vision, err := ParseLlamaProps(body)
	if err != nil {
		return false
	}
	info.Server, info.Vision = LlamaCpp, vision
	if window > 0 {
		info.ContextWindow, info.WindowSource = window, "GET /props default_generation_settings.n_ctx"
	}
	return true
}

func (p *prober) ollama(info *Info) bool {
	payload, _ := json.Marshal(map[string]string{"model": p.model})
	body, err := p.do(http.MethodPost, p.root+"/api/show", "/api/show", payload)
	if err != nil {
		return false
	}
	show, err := ParseOllamaShow(body)
	if err != nil {
		return false
	}
	info.Server, info.Vision = Ollama, show.Vision
	// The window is what Ollama loads the model with: its Modelfile's
	// num_ctx, else the server's default (OLLAMA_CONTEXT_LENGTH), which
	// only /api/ps tells, once the model is loaded. model_info's
	// context_length is the most the model can hold, not what Ollama
	// gives it: a prompt over the loaded window is cut, not refused, so a
	// window read from it would let such prompts through.
	if show.NumCtx > 0 {
		info.ContextWindow, info.WindowSource = show.NumCtx, "POST /api/show parameters num_ctx"
	} else {
		info.WindowSource = SourceOllamaNotLoaded
	}
	// A loaded model's window is what it runs with now.
	if body, err := p.do(http.MethodGet, p.root+"/api/ps", "/api/ps", nil); err == nil {
		if window, found, err := ParseOllamaPS(body, p.model); err == nil && found {
			info.ContextWindow, info.WindowSource = window, SourceOllamaPS
		}
	}
	return true
}

func (p *prober) lmStudio(info *Info) bool {
	for _, v := range []struct {
		path  string
		parse func([]byte, string) (LMStudioModel, bool, error)
	}{{"/api/v1/models", ParseLMStudioV1}, {"/api/v0/models", ParseLMStudioV0}} {
		body, err := p.do(http.MethodGet, p.root+v.path, v.path, nil)
		if err != nil {
			continue
		}
		m, found, err := v.parse(body, p.model)
		if err != nil {
			continue
		}
		info.Server = LMStudio
		if !found {
			return true
		}
		info.Vision = m.Vision
		switch {
		case m.Loaded > 0:
			info.ContextWindow, info.WindowSource = m.Loaded, "GET "+v.path+" loaded context length"
		case m.Max > 0:
			info.ContextWindow, info.WindowSource = m.Max, "GET "+v.path+" max_context_length (not loaded; LM Studio may load it with less)"
		}
		return true
	}
	return false
}
