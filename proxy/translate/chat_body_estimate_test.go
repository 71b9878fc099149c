package translate

import "testing"

// TestResponsesEstimateCountsWhatIsWritten: the writer's one walk over the
// turns it was handed (raw JSON strings, decoded strings, arguments kept
// as a JSON string) counts what the backend gets: each text's inside as
// written, a function_call's arguments as the JSON they hold, a custom
// tool's grammar after its note.
func TestResponsesEstimateCountsWhatIsWritten(t *testing.T) {
	body := `{"model":"a","instructions":"Be \"brief\".","input":[
		{"role":"user","content":[{"type":"input_text","text":"look\nhere"},{"type":"input_image","image_url":"https://x/y.png"}]},
		{"role":"assistant","content":[{"type":"refusal","refusal":"no \"way\"\n"}]},
		{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":[\"ls\",\"-l\"]}"},
		{"type":"function_call_output","call_id":"c1","output":"a\tb"}],
		"tools":[{"type":"custom","name":"apply_patch","description":"Patch \"files\".","format":{"type":"grammar","syntax":"lark","definition":"start: \"x\"\n"}}]}`
	br, _, err := ResponsesOnChatRequest([]byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	var e promptEstimate
	e.message() // system
	e.escaped([]byte(`Be \"brief\".`))
	e.message() // user
	e.escaped([]byte(`look\nhere`))
	e.image()
	e.message() // assistant: the refusal, then the call
	e.escaped(quoteInner("no \"way\"\n"))
	e.toolCall("shell", []byte(`{"cmd":["ls","-l"]}`))
	e.message() // tool
	e.escaped([]byte(`a\tb`))
	e.n += toolOverhead + EstimateTokens("apply_patch")
	e.escaped([]byte(`Patch \"files\".`))
	e.escaped(quoteInner("\n\nThe input is free text (not JSON) in this lark grammar:\n"))
	e.escaped([]byte(`start: \"x\"\n`))
	e.json(customParameters)
	if want := e.total(); br.InputTokens != want {
		t.Errorf("InputTokens = %d, want %d", br.InputTokens, want)
	}
}
