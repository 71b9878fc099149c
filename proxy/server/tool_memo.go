package server

import (
	"context"
	"net"

	"github.com/dragoman-dev/dragoman/proxy/translate"
)

// ConnContext is the proxy's http.Server ConnContext: each client
// connection gets a translate.ToolMemo of its own, so that the tools a
// coding client sends with every request are read once per connection,
// and nothing one connection sent shapes the work done for another. A
// server without it (tests, an embedding) computes everything for each
// request, with the same results.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, toolMemoKey{}, translate.NewToolMemo())
}

type toolMemoKey struct{}

// toolMemoOf is the memo of the connection ctx's request came on; nil
// when the server was not given ConnContext.
func toolMemoOf(ctx context.Context) *translate.ToolMemo {
	m, _ := ctx.Value(toolMemoKey{}).(*translate.ToolMemo)
	return m
}
