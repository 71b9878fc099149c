package translate

import "github.com/dragoman-dev/dragoman/proxy/internal/bufpool"

// ResponsesOnMessagesRequest translates a Responses request for a backend
// that speaks the Messages format: to the Chat format (instructions as a
// system message, which the Messages format has as its system prompt),
// then to the Messages format. Pure, as every translation here is.
func ResponsesOnMessagesRequest(body []byte, resolve Resolver) (BackendRequest, *ResponsesCall, error) {
	var target Target
	chatReq, call, err := ResponsesOnChatRequest(body, func(alias string) (Target, error) {
		t, err := resolve(alias)
		target = t
		t.SupportsSystemMessage = true
		return t, err
	})
	if err != nil {
		return chatReq, call, err
	}
	defer bufpool.Put(chatReq.Body)
	req, err := ChatOnMessagesRequest(chatReq.Body, func(string) (Target, error) { return target, nil })
	return req, call, err
}
