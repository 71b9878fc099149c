package server

import (
	"context"
	"net/http"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/balance"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/keys"
	reqkind "github.com/dragoman-dev/dragoman/proxy/kind"
	"github.com/dragoman-dev/dragoman/proxy/translate"
	"github.com/dragoman-dev/dragoman/proxy/upstream"
	"github.com/dragoman-dev/dragoman/proxy/vision"
)

// maxDescriptions bounds the descriptions kept (vision.MaxDescription
// bytes each at most).
const maxDescriptions = 1024

// describeImages gives a text-only model the images of a client's body
// as text: when the pool the request goes to cannot read images
// (supports_vision: false, or discovery says so) and names a
// proxy_params.vision_fallback, each image is described once by that
// alias (a background request) and replaced by its description. An image
// the fallback could not describe stays, and becomes the translator's
// placeholder. The body returned replaces body (given back to bufpool).
func (s *Server) describeImages(w http.ResponseWriter, r *http.Request, body []byte) []byte {
	if s.descriptions == nil {
		return body
	}
	model := translate.RequestModel(body)
	pool, _, _ := s.poolFor(r.Header, model, body)
	route, ok := s.bal.Route(pool)
	if !ok || route.VisionFallback == "" || !s.withDiscovered(newRouteInfo(model, route)).target.NoVision {
		return body
	}
	images := vision.Images(body)
	if len(images) == 0 {
		return body
	}
	client := clientOf(keyOf(w))
	described := map[string]string{}
	for _, img := range images {
		d, ok := s.descriptions.Describe(client, img.Hash, func() (string, bool) {
			return s.describe(r.Context(), route.VisionFallback, img)
		})
		if ok {
			described[img.Hash] = d
		}
	}
	if len(described) == 0 {
		return body
	}
	out, err := vision.Replace(body, described)
	if err != nil {
		return body
	}
	bufpool.Put(body)
	return out
}

// clientOf names the client whose descriptions are kept together: its
// per-user key, or the proxy's own key.
func clientOf(k *keys.Key) string {
	if k == nil {
		return keys.ReservedName
	}
	return "key:" + k.Name
}

// describeRequest is the Chat request that asks the fallback for a
// description.
type describeRequest struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	Messages  []describeMessage `json:"messages"`
}

type describeMessage struct {
	Role    string         `json:"role"`
	Content []describePart `json:"content"`
}

type describePart struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	ImageURL map[string]string `json:"image_url,omitempty"`
}

// describe asks a backend of the fallback pool, in the queue's background
// place, to describe one image; false when it could not.
func (s *Server) describe(ctx context.Context, fallback string, img vision.Image) (string, bool) {
	lease, err := s.bal.Acquire(ctx, balance.Request{Alias: fallback, Priority: reqkind.PriorityBackground})
	if err != nil {
		return "", false
	}
	route := lease.Route
	body, err := json.Marshal(describeRequest{Model: route.BackendModel, MaxTokens: 400, Messages: []describeMessage{{
		Role: "user",
		Content: []describePart{
			{Type: "text", Text: vision.Prompt},
			{Type: "image_url", ImageURL: map[string]string{"url": img.URL}},
		},
	}}})
	if err != nil {
		lease.Done(balance.Abandoned, "")
		return "", false
	}
	resp, err := s.pool.Do(ctx, upstream.Call{BaseURL: route.APIBase, Path: "/chat/completions", APIKey: route.APIKey, Body: body, Timeout: route.Timeout})
	if err != nil {
		lease.Done(backendResult(err), clipMessage(scrubRoute(err.Error(), route)))
		s.log.Warn("the vision fallback could not describe an image: the model gets a placeholder", "fallback", fallback, "error", scrubRoute(err.Error(), route))
		return "", false
	}
	answer, err := readResponse(resp)
	defer bufpool.Put(answer)
	if err != nil {
		lease.Done(balance.Failed, clipMessage(scrubRoute(err.Error(), route)))
		return "", false
	}
	lease.Done(balance.Succeeded, "")
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(answer, &out) != nil || len(out.Choices) == 0 || out.Choices[0].Message.Content == "" {
		s.log.Warn("the vision fallback's answer holds no description: the model gets a placeholder", "fallback", fallback)
		return "", false
	}
	return out.Choices[0].Message.Content, true
}
