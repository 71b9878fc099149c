package translate

import "github.com/dragoman-dev/dragoman/proxy/chat"

// ResponsesOnMessagesStream translates a Messages backend's stream for a
// Responses client: its events become Chat chunks (ChatOnMessagesStream), which
// become Responses events (ResponsesOnChatStream).
type ResponsesOnMessagesStream struct {
	rs     *ChatOnMessagesStream
	st     *ResponsesOnChatStream
	chunks []byte // the Chat chunks of the latest Feed
}

// NewResponsesOnMessagesStream chains rs (Messages events → Chat chunks)
// into st (Chat chunks → Responses events).
func NewResponsesOnMessagesStream(rs *ChatOnMessagesStream, st *ResponsesOnChatStream) *ResponsesOnMessagesStream {
	return &ResponsesOnMessagesStream{rs: rs, st: st}
}

// Start, Ping and Done are those of the Responses answer and the Messages
// stream.
func (m *ResponsesOnMessagesStream) Start(dst []byte) []byte { return m.st.Start(dst) }
func (m *ResponsesOnMessagesStream) Ping(dst []byte) []byte  { return m.st.Ping(dst) }
func (m *ResponsesOnMessagesStream) Done() bool              { return m.rs.Done() }

// BackendUsage is the usage the backend reported, as Chat usage.
func (m *ResponsesOnMessagesStream) BackendUsage() *chat.Usage { return m.st.BackendUsage() }

// Feed translates one piece of the Messages stream into Responses events.
func (m *ResponsesOnMessagesStream) Feed(dst, p []byte) ([]byte, error) {
	var err error
	m.chunks, err = m.rs.Feed(m.chunks[:0], p)
	dst, ferr := m.st.Feed(dst, m.chunks)
	if err == nil {
		err = ferr
	}
	return dst, err
}

// Finish ends the response; a backend stream that broke off before
// message_stop ends it with response.failed.
func (m *ResponsesOnMessagesStream) Finish(dst []byte) []byte {
	chunks, err := m.rs.Finish(m.chunks[:0])
	dst, _ = m.st.Feed(dst, chunks)
	switch {
	case err != nil:
		return m.st.Fail(dst, "", err.Error())
	case !m.rs.Ended():
		return m.st.Fail(dst, "", "the backend stream broke off before message_stop")
	}
	return m.st.Finish(dst)
}
