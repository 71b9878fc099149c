package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// The curves' requests are grown from the real client's request
// (proxy/fixtures/coding-client/03-tool-result-turn.json: a user turn, the
// client's mid-conversation system turn, a tool call and its result, 12
// tools, a 7 KB system prompt). A longer session re-sends more turns, so
// the conversation grows, not padding: each added exchange is the
// fixture's own tool call and result (with a fresh id) followed by the
// fixture's user turn. More tools are the client's own schemas again,
// renamed (Bash_2, ...), so each tool is the size the client sends.

// fixtureBody is the fixture's request as ordered members.
type fixtureBody struct {
	keys    []string
	members map[string]json.RawMessage
}

func loadFixtureBody() (*fixtureBody, error) {
	raw, _, err := clientRequest("03-tool-result-turn.json")
	if err != nil {
		return nil, err
	}
	fb := &fixtureBody{members: map[string]json.RawMessage{}}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		k := t.(string)
		fb.keys = append(fb.keys, k)
		fb.members[k] = v
	}
	return fb, nil
}

// encode writes the members in the fixture's order with some replaced
// (a nil value drops the member).
func (fb *fixtureBody) encode(repl map[string]json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, k := range fb.keys {
		v, ok := repl[k]
		if !ok {
			v = fb.members[k]
		}
		if v == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// messagesBody builds a Messages request of about size bytes (0: the
// fixture's conversation as it is; small: the system prompt and the
// first user turn only, without tools) with tools tools (0: the client's
// 12), stream on or off.
func (fb *fixtureBody) messagesBody(size int, small bool, tools int, stream bool) ([]byte, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(fb.members["messages"], &msgs); err != nil || len(msgs) != 4 {
		return nil, errors.New("fixture: expected 4 messages (user, system, tool call, tool result)")
	}
	repl := map[string]json.RawMessage{"stream": json.RawMessage(strconv.FormatBool(stream))}
	if small {
		repl["tools"] = nil
		repl["messages"] = mustJSON([]json.RawMessage{msgs[0]})
		return fb.encode(repl), nil
	}
	if tools > 0 {
		var ts []map[string]json.RawMessage
		if err := json.Unmarshal(fb.members["tools"], &ts); err != nil || len(ts) == 0 {
			return nil, errors.New("fixture: no tools")
		}
		out := make([]map[string]json.RawMessage, 0, tools)
		for i := 0; i < tools; i++ {
			t := map[string]json.RawMessage{}
			for k, v := range ts[i%len(ts)] {
				t[k] = v
			}
			if i >= len(ts) {
				var name string
				if err := json.Unmarshal(t["name"], &name); err != nil {
					return nil, fmt.Errorf("fixture tool name: %w", err)
				}
				t["name"] = mustJSON(name + "_" + strconv.Itoa(i/len(ts)+1))
			}
			out = append(out, t)
		}
		repl["tools"] = mustJSON(out)
	}
	conv := func(k int) json.RawMessage {
		all := append([]json.RawMessage{}, msgs[:2]...)
		for i := 1; i <= k; i++ {
			id := "toolu_bench_" + strconv.Itoa(i)
			call := bytes.Replace(msgs[2], []byte(`"toolu_01"`), []byte(`"`+id+`"`), 1)
			result := bytes.Replace(msgs[3], []byte(`"toolu_01"`), []byte(`"`+id+`"`), 1)
			all = append(all, call, result, msgs[0])
		}
		return mustJSON(append(all, msgs[2:]...))
	}
	repl["messages"] = conv(0)
	base := len(fb.encode(repl))
	if size > base {
		repl["messages"] = conv(1)
		per := len(fb.encode(repl)) - base
		repl["messages"] = conv((size - base + per/2) / per)
	}
	return fb.encode(repl), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// chatPair returns, for a Messages request, the Chat request Dragoman
// sends its backend (what the stub and the floor get) and the same
// request with the alias as its model (what a Chat client sends
// Dragoman).
func chatPair(msgBody []byte) (backend, client []byte, err error) {
	br, err := translate.MessagesOnChatRequest(msgBody, func(a string) (translate.Target, error) {
		if a != alias {
			return translate.Target{}, fmt.Errorf("unknown alias %q", a)
		}
		return translate.Target{Alias: alias, BackendModel: backendModel, SupportsSystemMessage: true}, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("translating the bench request: %w", err)
	}
	backend = append([]byte(nil), br.Body...)
	client = bytes.Replace(backend, []byte(`"model":"`+backendModel+`"`), []byte(`"model":"`+alias+`"`), 1)
	if bytes.Equal(client, backend) {
		return nil, nil, errors.New("translated request does not name the backend model")
	}
	return backend, client, nil
}

// curveCase makes a kase (direct and floor take Chat; Dragoman the api's
// own format) from the Messages request of that shape (messagesBody).
func (fb *fixtureBody) curveCase(name, api string, size int, small bool, tools int, stream bool, h map[string][]string) (*kase, error) {
	msgBody, err := fb.messagesBody(size, small, tools, stream)
	if err != nil {
		return nil, err
	}
	backend, client, err := chatPair(msgBody)
	if err != nil {
		return nil, err
	}
	k := &kase{name: name, api: api, large: true, stream: stream, chatBody: backend, header: h}
	switch api {
	case "chat":
		k.body, k.size = client, len(client)
	case "messages":
		k.body, k.size = msgBody, len(msgBody)
	default:
		return nil, fmt.Errorf("no curve for api %q", api)
	}
	return k, nil
}
