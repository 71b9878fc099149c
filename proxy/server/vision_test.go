package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// describer is a vision model's stub: it answers every Chat request with
// one description and counts the requests, and the images in them.
type describer struct {
	calls  atomic.Int32
	images atomic.Int32
}

func (d *describer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d.calls.Add(1)
	if strings.Contains(string(body), `"image_url":{"url":"data:image/png;base64,`) {
		d.images.Add(1)
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"c","object":"chat.completion","model":"vl","choices":[{"index":0,"message":{"role":"assistant","content":"a red square with the word HELLO"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
}

func visionYAML(eyes string) string {
	return "model_list:\n" +
		"  - model_name: blind\n    proxy_params: {model: vendorb/blind-model, api_base: '{base}', api_key: os.environ/TEST_BACKEND_KEY, supports_vision: false, vision_fallback: eyes}\n" +
		"  - model_name: eyes\n    proxy_params: {model: vendorb/vl-model, api_base: '" + eyes + "', api_key: os.environ/TEST_BACKEND_KEY, num_retries: 0}\n"
}

// lastUserText is the text the backend got in the last request's last
// message, its parts joined.
func lastUserText(t *testing.T, h *harness) string {
	t.Helper()
	reqs := h.backendRequests()
	if len(reqs) == 0 {
		t.Fatal("the backend got no request")
	}
	msgs := reqs[len(reqs)-1]["messages"].([]any)
	b, _ := json.Marshal(msgs[len(msgs)-1].(map[string]any)["content"])
	return string(b)
}

// TestVisionFallbackDescribesOnce: an image sent to a text-only alias
// reaches it as the fallback's description, on each endpoint; the same
// image again is not described again.
func TestVisionFallbackDescribesOnce(t *testing.T) {
	d := &describer{}
	eyes := httptest.NewServer(d)
	t.Cleanup(eyes.Close)
	h := newHarness(t, harnessOptions{routesYAML: visionYAML(eyes.URL + "/v1")})
	for i, endpoint := range []string{"/v1/messages", "/v1/messages", "/v1/chat/completions", "/v1/responses"} {
		resp := h.post(endpoint, kindBody(endpoint, "blind", false, imageContent(endpoint), ""))
		if body := drain(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", endpoint, resp.StatusCode, body)
		}
		got := lastUserText(t, h)
		if !strings.Contains(got, "Image description") || !strings.Contains(got, "a red square with the word HELLO") || strings.Contains(got, "base64") {
			t.Errorf("request %d, %s: the text-only model got %s, want the description in place of the image", i, endpoint, got)
		}
		if strings.Contains(got, translate.ImagePlaceholder) {
			t.Errorf("%s: the placeholder beside the description: %s", endpoint, got)
		}
	}
	if n := d.calls.Load(); n != 1 || d.images.Load() != 1 {
		t.Errorf("the fallback was asked %d times (%d with the image), want once for one image sent four times", n, d.images.Load())
	}
}

// TestVisionFallbackDownGivesPlaceholder: with the fallback unreachable
// the request still succeeds, with today's placeholder.
func TestVisionFallbackDownGivesPlaceholder(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL + "/v1"
	gone.Close()
	h := newHarness(t, harnessOptions{routesYAML: visionYAML(url)})
	resp := h.post("/v1/messages", kindBody("/v1/messages", "blind", false, imageContent("/v1/messages"), ""))
	if body := drain(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := lastUserText(t, h); !strings.Contains(got, translate.ImagePlaceholder) || strings.Contains(got, "Image description") {
		t.Errorf("the text-only model got %s, want the placeholder", got)
	}
}
