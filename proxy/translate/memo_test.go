package translate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/internal/bufpool"
	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/messages"
	"github.com/dragoman-dev/dragoman/proxy/textcall"
)

// memoCase is one client request and the translation that reads it.
type memoCase struct {
	name      string
	body      []byte
	translate func(body []byte, resolve Resolver) (BackendRequest, error)
}

func memoCases(t *testing.T) []memoCase {
	t.Helper()
	var cases []memoCase
	for _, name := range []string{"01-text-turn.json", "02-tool-turn-request.json", "03-tool-result-turn.json"} {
		c, err := fixtures.ClientCapture(name)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, memoCase{"messages on chat " + name, []byte(c.Body), MessagesOnChatRequest},
			memoCase{"messages on messages " + name, []byte(c.Body), MessagesOnMessagesRequest})
		chatBody, err := MessagesOnChatRequest([]byte(c.Body), func(string) (Target, error) {
			return Target{BackendModel: "chat-alias", SupportsSystemMessage: true}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, memoCase{"chat on chat " + name, bytes.Clone(chatBody.Body), ChatOnChatRequest})
	}
	for _, name := range fixtures.CodexRequests() {
		body, err := fixtures.CodexRequest(name)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, memoCase{"responses on chat " + name, body, func(body []byte, resolve Resolver) (BackendRequest, error) {
			br, _, err := ResponsesOnChatRequest(body, resolve)
			return br, err
		}})
	}
	return cases
}

// TestMemoChangesNoResult: a request translated with its connection's
// memo, empty or holding what the same request left in it, gives what it
// gives without one: the same body, estimate, output limit and offered
// tools.
func TestMemoChangesNoResult(t *testing.T) {
	for _, c := range memoCases(t) {
		t.Run(c.name, func(t *testing.T) {
			connMemo := memo.New()
			with := func(m *memo.Memo) BackendRequest {
				br, err := c.translate(bytes.Clone(c.body), func(string) (Target, error) {
					return Target{BackendModel: "m", ContextWindow: 200_000, TextCalls: textcall.All, Memo: m}, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				br.Target.Memo = nil
				return br
			}
			want := with(nil)
			if len(want.Tools) == 0 && !strings.Contains(c.name, "01-") {
				t.Fatalf("the fixture offers no tools: the memo is not tried")
			}
			for i, label := range []string{"an empty memo", "the memo it filled"} {
				got := with(connMemo)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("with %s (%d): the translation differs from the one without a memo:\ngot  tokens %d, %d tools, %d bytes\nwant tokens %d, %d tools, %d bytes",
						label, i, got.InputTokens, len(got.Tools), len(got.Body), want.InputTokens, len(want.Tools), len(want.Body))
				}
				bufpool.Put(got.Body)
			}
		})
	}
}

// TestMemoSeesChangedTools: a connection that sends other tools after
// the first ones (a new MCP server, an edited schema) gets the estimate
// and the parameter types of those, not what the memo holds of the first.
func TestMemoSeesChangedTools(t *testing.T) {
	c, err := fixtures.ClientCapture("03-tool-result-turn.json")
	if err != nil {
		t.Fatal(err)
	}
	first := []byte(c.Body)
	// A schema made longer and its first property retyped: the estimate
	// grows and the compact types change.
	second := first
	for _, typ := range []string{`"type":"string"`, `"type": "string"`} {
		second = bytes.Replace(second, []byte(typ), []byte(`"type":"integer","description":"a count of the things it counts, the more the better"`), 1)
	}
	if bytes.Equal(first, second) {
		t.Fatal("the fixture has no string property to retype")
	}
	connMemo := memo.New()
	translate := func(body []byte, m *memo.Memo) BackendRequest {
		br, err := MessagesOnChatRequest(bytes.Clone(body), func(string) (Target, error) {
			return Target{BackendModel: "m", TextCalls: textcall.All, Memo: m}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return br
	}
	translate(first, connMemo)
	got, want := translate(second, connMemo), translate(second, nil)
	if got.InputTokens != want.InputTokens || !reflect.DeepEqual(got.Tools, want.Tools) {
		t.Errorf("after other tools: estimate %d, tools %q; computed afresh: %d, %q", got.InputTokens, toolParams(got.Tools), want.InputTokens, toolParams(want.Tools))
	}
	if before := translate(first, nil); before.InputTokens == want.InputTokens || reflect.DeepEqual(before.Tools, want.Tools) {
		t.Errorf("the changed schema changed neither the estimate (%d) nor the tools: the test checks nothing", want.InputTokens)
	}
}

func toolParams(tools []textcall.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name+" "+string(tl.Parameters))
	}
	return out
}

// TestMessagesTextsRemembered: the estimate of each long text of a
// Messages request (its turns, not only its tools) is remembered in the
// connection's memo, so that the next request of the session, which sends
// them again, counts them no more.
func TestMessagesTextsRemembered(t *testing.T) {
	c, err := fixtures.ClientCapture("03-tool-result-turn.json")
	if err != nil {
		t.Fatal(err)
	}
	connMemo := memo.New()
	if _, err := MessagesOnChatRequest([]byte(c.Body), func(string) (Target, error) {
		return Target{BackendModel: "m", Memo: connMemo}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var req messages.Request
	if err := json.Unmarshal([]byte(c.Body), &req); err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, m := range req.Messages {
		for _, blk := range m.Content.Blocks {
			in := inner(blk.Text)
			if blk.Type != "text" || len(in) < memoMin {
				continue
			}
			var e promptEstimate
			e.unescaped(in)
			got, ok := memo.Find[int](connMemo, memoText, in)
			if !ok || got != e.n {
				t.Errorf("messages.%d: a text of %d bytes: remembered %v (%d), want its estimate %d", i, len(in), ok, got, e.n)
			}
			found++
		}
	}
	if found == 0 {
		t.Fatal("the fixture has no long text block in its messages: the test checks nothing")
	}
}
