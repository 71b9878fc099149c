package translate

import (
	"bytes"
	"testing"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
)

// TestChatBodyFoldAgreesWithChatToChat: the writer's fold of the system
// role gives, byte for byte, what ChatOnChatRequest makes of the same body
// written with the system role, for every recorded Codex request and for
// the edge cases of a run (empty texts, images, system between users).
func TestChatBodyFoldAgreesWithChatToChat(t *testing.T) {
	bodies := map[string][]byte{
		"empty user":         []byte(`{"model":"a","instructions":"be brief","input":[{"role":"user","content":""}]}`),
		"empty system":       []byte(`{"model":"a","input":[{"role":"system","content":""},{"role":"assistant","content":"hi"},{"role":"user","content":"x"}]}`),
		"between users":      []byte(`{"model":"a","input":[{"role":"user","content":"a"},{"role":"developer","content":"d"},{"role":"user","content":"b"},{"role":"assistant","content":"c"},{"role":"system","content":"s"}]}`),
		"image":              []byte(`{"model":"a","instructions":"i","input":[{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://x/y.png"}]},{"role":"system","content":"s"},{"role":"user","content":"more"}]}`),
		"tool output images": []byte(`{"model":"a","instructions":"i","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"data:image/png;base64,AA=="}]},{"role":"system","content":"s"}]}`),
	}
	for _, name := range fixtures.CodexRequests() {
		bodies[name] = codexBody(t, name)
	}
	folded := Target{BackendModel: "m", MaxOutputTokens: 100}
	withSystem := folded
	withSystem.SupportsSystemMessage = true
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			got, _, err := ResponsesOnChatRequest(body, resolverFor(folded))
			if err != nil {
				t.Fatal(err)
			}
			sys, _, err := ResponsesOnChatRequest(body, resolverFor(withSystem))
			if err != nil {
				t.Fatal(err)
			}
			want, err := ChatOnChatRequest(sys.Body, resolverFor(folded))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Body, want.Body) {
				t.Errorf("the writer's fold differs from ChatOnChatRequest's:\n got: %s\nwant: %s", got.Body, want.Body)
			}
			if bytes.Contains(got.Body, []byte(`"role":"system"`)) {
				t.Errorf("a system role is left: %s", got.Body)
			}
		})
	}
}
