package translate

// A Messages backend's non-stream answer relayed as it is: its model
// rewritten and its usage read, by the scanner, without decoding it.

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/dragoman-dev/dragoman/proxy/chat"
	"github.com/dragoman-dev/dragoman/proxy/messages"
)

// MessagesUsage finds the top-level usage of a Messages response body, in
// the Chat form (ChatUsage); nil when there is none or it is malformed.
func MessagesUsage(body []byte) *chat.Usage {
	top, err := scanObject(body, false, func(name []byte) bool { return string(name) == "usage" })
	if err != nil {
		return nil
	}
	return usageOf(&top)
}

// MessagesResponseModel rewrites the model of a non-stream Messages
// response to the alias, every other byte as the backend sent it (a
// response without a model gets one), and reads its usage as
// MessagesUsage does, in the same pass.
func MessagesResponseModel(body []byte, alias string) ([]byte, *chat.Usage, error) {
	top, err := scanObject(body, false, func(name []byte) bool { return string(name) == "model" || string(name) == "usage" })
	if err != nil {
		return nil, nil, fmt.Errorf("translate: backend response is not a JSON object: %w", err)
	}
	return withModel(body, &top, alias), usageOf(&top), nil
}

// usageOf reads the usage member of a scanned Messages response (or
// message_start's message) in the Chat form; nil when there is none or it
// is malformed.
func usageOf(top *object) *chat.Usage {
	v, ok := top.get("usage")
	if !ok {
		return nil
	}
	u, ok := messagesUsage(v.value)
	if !ok {
		return nil
	}
	return ChatUsage(u)
}

// messagesUsage reads a Messages usage object (valid JSON) as
// json.Unmarshal into messages.Usage does, without its decoder: each
// count an integer or null, the last of a repeated name; other members
// are not read. ok is false when it is not an object or a count is
// something else.
func messagesUsage(v []byte) (u messages.Usage, ok bool) {
	if jsontext.Value(v).Kind() != '{' {
		return u, false
	}
	counts := [...]struct {
		name string
		n    *int
	}{
		{"input_tokens", &u.InputTokens},
		{"output_tokens", &u.OutputTokens},
		{"cache_read_input_tokens", &u.CacheReadInputTokens},
		{"cache_creation_input_tokens", &u.CacheCreationInputTokens},
	}
	top, err := scanObject(v, false, func(name []byte) bool {
		for _, c := range counts {
			if c.name == string(name) {
				return true
			}
		}
		return false
	})
	if err != nil {
		return u, false
	}
	for _, m := range top.list {
		for _, c := range counts {
			if c.name != m.name {
				continue
			}
			switch m.value.Kind() {
			case 'n':
				*c.n = 0
			case '0':
				n, err := strconv.Atoi(string(m.value))
				if err != nil {
					return u, false
				}
				*c.n = n
			default:
				return u, false
			}
		}
	}
	return u, true
}
