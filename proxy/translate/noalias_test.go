package translate

import (
	"bytes"
	"testing"
)

// The server gives a request body back to the pool as soon as it is
// translated, and a backend's answer once it is rewritten: nothing
// translate returns may share memory with its input. Each output must
// survive its input being overwritten.
func TestOutputsDoNotShareTheInputsMemory(t *testing.T) {
	res := resolverFor(Target{BackendModel: "qwen3-coder"})
	chatReq, err := MessagesOnChatRequest(clientBody(t, "01-text-turn.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(in []byte) ([]byte, error){
		"MessagesOnChatRequest": func(in []byte) ([]byte, error) {
			br, err := MessagesOnChatRequest(in, res)
			return br.Body, err
		},
		"ChatOnChatRequest": func(in []byte) ([]byte, error) {
			br, err := ChatOnChatRequest(in, res)
			return br.Body, err
		},
		"ChatResponseModel":      func(in []byte) ([]byte, error) { return ChatResponseModel(in, "claude-x") },
		"MessagesOnChatResponse": func(in []byte) ([]byte, error) { return MessagesOnChatResponse(in, "claude-x") },
	} {
		in := clientBody(t, "02-tool-turn-request.json")
		switch name {
		case "ChatOnChatRequest":
			in = bytes.Clone(chatReq.Body)
		case "ChatResponseModel", "MessagesOnChatResponse":
			in = []byte(chatResp(`{"role":"assistant","content":"hello","tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]}`, `"tool_calls"`, ""))
		}
		out, err := f(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := bytes.Clone(out)
		for i := range in {
			in[i] = 'x'
		}
		if !bytes.Equal(out, want) {
			t.Errorf("%s: the output changed when its input was overwritten", name)
		}
	}
}
