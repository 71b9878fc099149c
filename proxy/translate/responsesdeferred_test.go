package translate

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/responses"
)

// checkDeferred: ResponsesToChatDeferred, followed by its Check when it
// has one, gives what ResponsesToChat gives for body: the same request
// (body byte for byte, target, stream flag, estimate) and call, or an
// error with the same message; twice, the second time with the body's
// tools list (if the first decoded one) found in recentTools. deferred
// reports that the body went the deferred way (a Check came with it),
// failed whether either way refused it.
func checkDeferred(t *testing.T, body []byte, tgt Target) (deferred, failed bool) {
	t.Helper()
	want, wantCall, wantErr := ResponsesToChat(body, resolverFor(tgt))
	for range 2 {
		deferred = checkDeferredOnce(t, body, tgt, want, wantCall, wantErr)
	}
	return deferred, wantErr != nil
}

func checkDeferredOnce(t *testing.T, body []byte, tgt Target, want BackendRequest, wantCall *ResponsesCall, wantErr error) (deferred bool) {
	t.Helper()
	got, gotCall, err := ResponsesToChatDeferred(body, resolverFor(tgt))
	check := got.Check
	if check != nil {
		if err != nil {
			t.Fatalf("%q: an error (%v) with a Check", body, err)
		}
		err = check()
		got.Check = nil
	}
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%q: deferred (Check %v) gives error %v, ResponsesToChat %v", body, check != nil, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("%q: deferred (Check %v) gives error\n%v\nResponsesToChat\n%v", body, check != nil, err, wantErr)
		}
	case !bytes.Equal(got.Body, want.Body):
		t.Fatalf("%q: deferred (Check %v) writes\n%s\nResponsesToChat\n%s", body, check != nil, got.Body, want.Body)
	case !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotCall, wantCall):
		t.Fatalf("%q: deferred (Check %v) gives %+v %+v, ResponsesToChat %+v %+v", body, check != nil, got, gotCall, want, wantCall)
	}
	return check != nil
}

// badText are byte sequences that string text must not hold: invalid
// UTF-8 (a stray continuation byte, a lead byte alone, a surrogate, an
// overlong form, a byte never used) and raw control characters.
var badText = []string{"\x80", "\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xff", "\xf4\x90\x80\x80", "\x00", "\x01", "\x1f", "\n", "\t", "\r"}

// insertAfter returns body with bad inserted n bytes after the end of
// the first occurrence of at, and whether at occurs.
func insertAfter(body []byte, at string, n int, bad string) ([]byte, bool) {
	i := bytes.Index(body, []byte(at))
	if i < 0 {
		return nil, false
	}
	i += len(at) + n
	return append(append(append([]byte{}, body[:i]...), bad...), body[i:]...), true
}

// deferredTargets: a backend with a system role and one without (its
// Chat body is read again by ChatToChat), with a limit on max_tokens.
var deferredTargets = []Target{
	{BackendModel: "m", SupportsSystemMessage: true, SupportsReasoningEffort: true},
	{BackendModel: "m", SupportsSystemMessage: false, MaxOutputTokens: 100},
}

// TestResponsesToChatDeferredCodex: the recorded Codex requests go the
// deferred way and translate as ResponsesToChat translates them, compact
// as Codex sends them and indented as they are stored (whitespace, and so
// control characters, between the members: Check validates those whole).
func TestResponsesToChatDeferredCodex(t *testing.T) {
	for _, name := range fixtures.CodexRequests() {
		raw, err := fixtures.CodexRequest(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range [][]byte{codexBody(t, name), raw} {
			for _, tgt := range deferredTargets {
				if deferred, failed := checkDeferred(t, body, tgt); !deferred || failed {
					t.Errorf("%s: deferred %v, failed %v", name, deferred, failed)
				}
			}
		}
	}
}

// TestResponsesToChatDeferredBadText: invalid UTF-8 and raw control
// characters in the texts, instructions, tool descriptions, schemas,
// names and grammars of a request: the deferred translation takes the
// body and its Check refuses it with ResponsesToChat's error.
func TestResponsesToChatDeferredBadText(t *testing.T) {
	sample := []byte(responsesDecodeSamples[4]) // tools of every kind
	call := []byte(responsesDecodeSamples[3])   // calls and outputs
	// Codex sends its instructions as developer messages: a request with
	// an instructions member too.
	instructed := bytes.Replace(codexBody(t, "01-text-turn.json"), []byte(`"stream":true,`), []byte(`"stream":true,"instructions":"Be brief.\nBe kind.",`), 1)
	for _, c := range []struct {
		body []byte
		at   string
		// whole: decoded by jsonv2 in the translation, which refuses
		// the bad text, so the body goes through ResponsesToChat.
		whole bool
	}{
		{instructed, `"instructions":"`, false},
		{instructed, `"instructions":"Be brief.\n`, false},
		{codexBody(t, "01-text-turn.json"), `"text":"`, false},
		{codexBody(t, "01-text-turn.json"), `"description":"`, false},
		{codexBody(t, "01-text-turn.json"), `"parameters":{"type":"object","properties":{"`, false},
		{codexBody(t, "01-text-turn.json"), `"parameters":{"`, false},
		{codexBody(t, "01-text-turn.json"), `"name":"`, false},
		{codexBody(t, "05-apply-patch-result-turn.json"), `"output":"`, false},
		{codexBody(t, "04-apply-patch-turn.json"), `"definition":"`, false},
		{sample, `"description":"`, false},
		{sample, `"syntax":"`, false},
		{[]byte(`{"model":"m","input":"x","text":{"format":{"type":"json_schema","schema":{"description":"d"}}}}`), `"description":"`, true},
		{sample, `"user":"`, false},
		{sample, `"effort":"`, false},
		{sample, `"model":"`, false},
		{call, `"arguments":"`, false},
		{call, `"image_url":"`, false},
		{call, `"call_id":"`, false},
		{[]byte(`{"model":"m","instructions":"be \"brief\"\nabc","input":"x"}`), `"instructions":"be \"bri`, false},
	} {
		for _, bad := range badText {
			for _, n := range []int{0, 1} {
				body, ok := insertAfter(c.body, c.at, n, bad)
				if !ok {
					t.Fatalf("%q is not in %.80q", c.at, c.body)
				}
				if deferred, failed := checkDeferred(t, body, deferredTargets[0]); !failed {
					t.Errorf("%q after %s: ResponsesToChat takes it", bad, c.at)
				} else if deferred == c.whole {
					t.Errorf("%q after %s: deferred %v", bad, c.at, deferred)
				}
			}
		}
	}
}

// TestResponsesToChatDeferredMatches: the decoder's samples, the odd
// escapes, whitespace and repeated names of the one-pass test, and bad
// bytes at every 97th offset of a Codex request (inside strings, and
// between values, where the scanner refuses them), both targets.
func TestResponsesToChatDeferredMatches(t *testing.T) {
	var bodies [][]byte
	for _, s := range responsesDecodeSamples {
		bodies = append(bodies, []byte(s))
	}
	tool := `{"model":"m","input":[{"role":"user","content":"TEXT"}],"tools":[{"type":"function","name":"f","description":"d","parameters":SCHEMA}]}`
	for _, c := range []struct{ text, schema string }{
		{`a\/b`, `{"type":"object"}`},
		{`\u00e9 \u001F \u000a \ud83d\ude00`, `{"type":"object"}`},
		{`\ud83d`, `{"type":"object"}`},
		{`\q`, `{"type":"object"}`},
		{`hi`, `{"type": "object"}`},
		{`hi`, `{"type":"object","type":"string"}`},
		{`hi`, `{"type":"object","description":"a\/b"}`},
		{`hi`, "{\"type\":\"object\",\"description\":\"a\xffb\"}"},
		{`hi`, "{\"type\":\"object\",\"de\x01scription\":\"ab\"}"},
		{`hi`, `[1,2 ]`},
		{"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", `{"type":"object"}`},
	} {
		bodies = append(bodies, []byte(strings.NewReplacer("TEXT", c.text, "SCHEMA", c.schema).Replace(tool)))
	}
	codex := codexBody(t, "03-shell-result-turn.json")
	for i := 0; i < len(codex); i += 97 {
		bad := badText[i%len(badText)]
		bodies = append(bodies, append(append(append([]byte{}, codex[:i]...), bad...), codex[i:]...))
	}
	for _, body := range bodies {
		for _, tgt := range deferredTargets {
			checkDeferred(t, body, tgt)
		}
	}
}

// FuzzResponsesToChatDeferred: for any body, the deferred translation and
// its Check give ResponsesToChat's request or its error.
func FuzzResponsesToChatDeferred(f *testing.F) {
	for _, name := range fixtures.CodexRequests() {
		f.Add(codexBody(f, name), true, 0)
		if raw, err := fixtures.CodexRequest(name); err == nil {
			f.Add(raw, false, 64)
		}
	}
	for _, s := range responsesDecodeSamples {
		f.Add([]byte(s), true, 0)
	}
	f.Add([]byte("{\"model\":\"m\",\"instructions\":\"a\xffb\",\"input\":\"x\"}"), true, 0)
	f.Add([]byte("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\x01b\"}]}]}"), true, 0)
	f.Add([]byte("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"description\":\"\xc3\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"description\":\"\xed\xa0\x80\"}}}}]}"), false, 0)
	f.Add([]byte("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"custom\",\"name\":\"p\",\"format\":{\"type\":\"grammar\",\"syntax\":\"lark\",\"definition\":\"start:\tx\"}}]}"), true, 0)
	f.Add([]byte("{\"model\":\"m\",\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\",\"schema\":{\"description\":\"\x80\"}}}}"), true, 0)
	f.Fuzz(func(t *testing.T, body []byte, systemRole bool, maxOut int) {
		checkDeferred(t, body, Target{BackendModel: "m", SupportsSystemMessage: systemRole, SupportsReasoningEffort: true, MaxOutputTokens: maxOut})
	})
}

// TestRecentToolsAndPrompts: a request's tools list is kept once decoded, and a
// request with the same list (another turn of the session) takes it
// without decoding it, with the translation ResponsesToChat gives; a list
// of other bytes is not taken for it. A list that sets the odd flag (an
// escape jsonv2 writes otherwise, a schema with a space) keeps that.
// Codex's developer messages (its system prompt) are kept as well; a user
// message, or a small one, is not.
func TestRecentToolsAndPrompts(t *testing.T) {
	tgt := deferredTargets[0]
	turns := [][]byte{codexBody(t, "01-text-turn.json"), codexBody(t, "03-shell-result-turn.json"), codexBody(t, "05-apply-patch-result-turn.json")}
	odd := `{"model":"m","input":"x","tools":[{"type":"function","name":"f","description":"a\\/b","parameters":{"type": "object"}}]}`
	for _, body := range append(turns, []byte(odd)) {
		if _, failed := checkDeferred(t, body, tgt); failed {
			t.Fatalf("%.80q: refused", body)
		}
		if string(body) != odd {
			checkKeptPrompts(t, body)
		}
		start := bytes.Index(body, []byte(`"tools":[`)) + len(`"tools":`)
		e := recentTools.find(body[start:])
		if e == nil {
			t.Fatalf("%.80q: its tools list is not kept", body)
		}
		if e.canonical == (string(body) == odd) {
			t.Errorf("%.80q: kept with canonical %v", body, e.canonical)
		}
		other := bytes.Clone(body[start:])
		other[len(e.raw)-3]++ // within the list's last bytes
		if recentTools.find(other) == e {
			t.Errorf("%.80q: a list of other bytes is taken for it", body)
		}
	}
}

// checkKeptPrompts: the developer messages of a Codex request that was
// just translated are kept, its user messages and small ones not.
func checkKeptPrompts(t *testing.T, body []byte) {
	t.Helper()
	var req responses.Request
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	items := 0
	for at := bytes.Index(body, []byte(`{"type":"message"`)); at >= 0; {
		e := recentPrompts.find(body[at:])
		it := req.Input.Items[items]
		sc := scanner{b: body, i: at}
		raw, err := sc.value()
		if err != nil {
			t.Fatal(err)
		}
		if want := it.Role == "developer" && len(raw) >= minKeptPrompt; (e != nil) != want || e != nil && e.v.Role != it.Role {
			t.Errorf("%.200q: item %d (%s): kept %v", body[at:], items, it.Role, e != nil)
		}
		items++
		next := bytes.Index(body[at+1:], []byte(`{"type":"message"`))
		if next < 0 {
			break
		}
		at += 1 + next
	}
	if items < 3 {
		t.Fatalf("%d messages found", items)
	}
}

// TestRecentConcurrent: requests translated at once, which keep and take
// the same tools lists and prompts, each get ResponsesToChat's request
// (and, under -race, share nothing unguarded).
func TestRecentConcurrent(t *testing.T) {
	tgt := deferredTargets[0]
	var bodies, want [][]byte
	for _, name := range fixtures.CodexRequests() {
		body := codexBody(t, name)
		br, _, err := ResponsesToChat(body, resolverFor(tgt))
		if err != nil {
			t.Fatal(err)
		}
		bodies, want = append(bodies, body), append(want, br.Body)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for n := range 20 {
				i := (g + n) % len(bodies)
				br, _, err := ResponsesToChatDeferred(bodies[i], resolverFor(tgt))
				if err == nil {
					err = br.Check()
				}
				if err == nil && !bytes.Equal(br.Body, want[i]) {
					err = fmt.Errorf("%d: %s", i, br.Body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
