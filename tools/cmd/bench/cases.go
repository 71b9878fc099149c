package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dragoman-dev/dragoman/proxy/config"
	"github.com/dragoman-dev/dragoman/proxy/fixtures"
	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// alias is the model the bench's clients ask for; Dragoman routes it to
// the stub's backendModel.
const (
	alias        = "claude-opus-5-5"
	backendModel = "stub-model"
	clientKey    = "sk-proxy-test" // the fixture's key; Dragoman is started with it
	// nativeAlias routes to the same stub as vendora/: the stub serves
	// the Messages format too (--protocol messages), and Messages requests
	// to this alias pass through (issue 12).
	nativeAlias = "claude-native"
)

// kase is one row group of the table: one request shape sent to the stub
// directly, through the floor and through Dragoman.
type kase struct {
	name   string
	api    string // "chat" (pass-through), "messages" or "responses" (translation), "native" (Messages pass-through)
	large  bool
	stream bool
	size   int // bytes of the request Dragoman receives

	// Bodies: the stub and the floor take a Chat request (native cases: a
	// Messages request); Dragoman takes the case's own format. For
	// messages and native cases the stub's request is Dragoman's own
	// translation of the client's, so all three do the same backend work.
	chatBody []byte
	body     []byte
	header   http.Header
}

func (k *kase) targets(stub, floor, dragoman string) [3]target {
	path := "/v1/chat/completions"
	switch k.api {
	case "messages", "native":
		path = "/v1/messages"
	case "responses":
		path = "/v1/responses"
	}
	return [3]target{
		{name: "direct", url: stub + k.backendPath(), body: k.chatBody, header: k.header},
		{name: "floor", url: floor + k.backendPath(), body: k.chatBody, header: k.header},
		{name: "dragoman", url: dragoman + path, body: k.body, header: k.header},
	}
}

// backendPath is where the stub takes the case's backend request: the
// Messages endpoint for native cases, the Chat one for the others. Every
// floor and the direct target use it: the stub answers a Messages body
// sent to its Chat endpoint too, but with less work (about 290 µs less
// for the 54 KB request), which would flatter the floor that took it.
func (k *kase) backendPath() string {
	if k.api == "native" {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// clientRequest reads the captured coding-client request: its body as it
// is stored (byte for byte) and its headers.
func clientRequest(name string) ([]byte, http.Header, error) {
	f, err := fixtures.ClientCapture(name)
	if err != nil {
		return nil, nil, err
	}
	return []byte(f.Body), f.Header(), nil
}

// withStream returns body with its top-level "stream" member set to on.
// The fixture ends with `"stream": true`; the result is checked by
// decoding it.
func withStream(body []byte, on bool) ([]byte, error) {
	var probe struct {
		Stream *bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, err
	}
	if probe.Stream != nil && *probe.Stream == on {
		return body, nil
	}
	from, to := []byte(`"stream": true`), []byte(`"stream": false`)
	if !on {
		// from true to false: as above
	} else {
		from, to = to, from
	}
	i := bytes.LastIndex(body, from)
	if i < 0 {
		return nil, errors.New("no top-level stream member to change")
	}
	out := append(append(append([]byte(nil), body[:i]...), to...), body[i+len(from):]...)
	probe.Stream = nil
	if err := json.Unmarshal(out, &probe); err != nil || probe.Stream == nil || *probe.Stream != on {
		return nil, errors.New("changing stream did not take")
	}
	return out, nil
}

// buildCases makes the eight cases: {chat pass-through, messages
// translation} × {54 KB client request, small request} × {non-stream,
// stream}.
func buildCases() ([]*kase, error) {
	client, header, err := clientRequest("01-text-turn.json")
	if err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	header.Set("Authorization", "Bearer "+clientKey)
	small := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + clientKey}, "Anthropic-Version": {"2023-06-01"}}
	resolve := func(a string) (translate.Target, error) {
		if a != alias {
			return translate.Target{}, fmt.Errorf("unknown alias %q", a)
		}
		return translate.Target{Alias: alias, BackendModel: backendModel, SupportsSystemMessage: true}, nil
	}
	var cases []*kase
	for _, large := range []bool{true, false} {
		for _, stream := range []bool{false, true} {
			var msgBody []byte
			h := small
			if large {
				if msgBody, err = withStream(client, stream); err != nil {
					return nil, fmt.Errorf("fixture: %w", err)
				}
				h = header
			} else {
				s := ""
				if stream {
					s = `,"stream":true`
				}
				msgBody = []byte(`{"model":"` + alias + `","max_tokens":64,"messages":[{"role":"user","content":"Say hello in one short sentence."}]` + s + `}`)
			}
			br, err := translate.MessagesOnChatRequest(msgBody, resolve)
			if err != nil {
				return nil, fmt.Errorf("translating the bench request: %w", err)
			}
			if br.Stream != stream {
				return nil, errors.New("translated request has the wrong stream flag")
			}
			// The Chat request Dragoman sends to the backend, and, with the
			// model set back to the alias, the equivalent Chat request a
			// Chat client would send through Dragoman.
			backend := br.Body
			chatClient := bytes.Replace(backend, []byte(`"model":"`+backendModel+`"`), []byte(`"model":"`+alias+`"`), 1)
			if bytes.Equal(chatClient, backend) {
				return nil, errors.New("translated request does not name the backend model")
			}
			size := "small"
			if large {
				size = "54 KB"
			}
			mode := "non-stream"
			if stream {
				mode = "stream"
			}
			cases = append(cases,
				&kase{name: "chat " + size + " " + mode, api: "chat", large: large, stream: stream,
					size: len(chatClient), chatBody: chatClient, body: chatClient, header: h},
				&kase{name: "messages " + size + " " + mode, api: "messages", large: large, stream: stream,
					size: len(msgBody), chatBody: backend, body: msgBody, header: h},
			)
		}
	}
	nc, err := nativeCases(client, header)
	if err != nil {
		return nil, err
	}
	rc, err := responsesCases(resolve)
	if err != nil {
		return nil, err
	}
	// Order: the 54 KB cases first, chat then messages; the native and
	// Responses cases last.
	return append(append(cases, nc...), rc...), nil
}

// nativeCases are the real client's request sent to a backend that
// speaks the Messages format (issue 12's vendora/ pass-through),
// non-stream and stream. The stub and the floor take what Dragoman
// forwards: the same body with model rewritten and the billing block and
// drop_params members removed.
func nativeCases(client []byte, header http.Header) ([]*kase, error) {
	resolve := func(a string) (translate.Target, error) {
		if a != nativeAlias {
			return translate.Target{}, fmt.Errorf("unknown alias %q", a)
		}
		return translate.Target{Alias: nativeAlias, BackendModel: backendModel, DropParams: strings.Join(config.DefaultDropParams, ",")}, nil
	}
	from := []byte(`"model": "` + alias + `"`)
	if !bytes.Contains(client, from) {
		return nil, errors.New("fixture: no top-level model member to change")
	}
	var cases []*kase
	for _, stream := range []bool{false, true} {
		body, err := withStream(client, stream)
		if err != nil {
			return nil, fmt.Errorf("fixture: %w", err)
		}
		body = bytes.Replace(body, from, []byte(`"model": "`+nativeAlias+`"`), 1)
		br, err := translate.MessagesOnMessagesRequest(body, resolve)
		if err != nil {
			return nil, fmt.Errorf("the pass-through of the bench request: %w", err)
		}
		if br.Stream != stream || translate.RequestModel(br.Body) != backendModel {
			return nil, errors.New("the pass-through did not keep the stream flag or rewrite the model")
		}
		mode := "non-stream"
		if stream {
			mode = "stream"
		}
		cases = append(cases, &kase{name: "native 54 KB " + mode, api: "native", large: true, stream: stream,
			size: len(body), chatBody: br.Body, body: body, header: header})
	}
	return cases, nil
}

// responsesCases are the Responses translation of the recorded Codex CLI
// request (43 KB), non-stream and stream.
func responsesCases(resolve translate.Resolver) ([]*kase, error) {
	raw, err := fixtures.CodexRequest("01-text-turn.json")
	if err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("fixture: %w", err)
	}
	recorded := bytes.Replace(compact.Bytes(), []byte(`"model":"coder"`), []byte(`"model":"`+alias+`"`), 1)
	h := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + clientKey}}
	var cases []*kase
	for _, stream := range []bool{false, true} {
		body := recorded
		mode := "stream"
		if !stream {
			body, mode = bytes.Replace(recorded, []byte(`"stream":true`), []byte(`"stream":false`), 1), "non-stream"
		}
		br, _, err := translate.ResponsesOnChatRequest(body, resolve)
		if err != nil {
			return nil, fmt.Errorf("translating the Codex request: %w", err)
		}
		if br.Stream != stream || br.Target.Alias != alias {
			return nil, errors.New("the Codex request did not translate to the bench's stream flag and alias")
		}
		cases = append(cases, &kase{name: "responses 43 KB " + mode, api: "responses", large: true, stream: stream,
			size: len(body), chatBody: br.Body, body: body, header: h})
	}
	return cases, nil
}
