package server

import (
	"context"
	"net"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
)

// ConnContext is the proxy's http.Server ConnContext: each client
// connection gets a memo.Memo of its own, so that what a coding
// client sends again with every request (its system prompt, its tools,
// the conversation so far) is estimated once per connection, and nothing
// one connection sent shapes the work done for another. A
// server without it (tests, an embedding) computes everything for each
// request, with the same results.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, memoKey{}, memo.New())
}

type memoKey struct{}

// memoOf is the memo of the connection ctx's request came on; nil
// when the server was not given ConnContext.
func memoOf(ctx context.Context) *memo.Memo {
	m, _ := ctx.Value(memoKey{}).(*memo.Memo)
	return m
}
