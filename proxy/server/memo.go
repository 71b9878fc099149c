package server

import (
	"context"
	"net"
	"sync"

	"github.com/dragoman-dev/dragoman/proxy/internal/memo"
	"github.com/dragoman-dev/dragoman/proxy/keys"
)

// ConnContext is the proxy's http.Server ConnContext: each client
// connection gets memos of its own (internal/memo), one for each key its
// requests come with, so that what a coding client sends again with every
// request (its system prompt, its tools, the conversation so far) is
// estimated once, and nothing one client sent shapes the work done for
// another, even when a gateway in front carries many users' requests on
// one connection. A server without it (an embedding) computes everything
// for each request, with the same results.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, memoKey{}, &connMemos{})
}

type memoKey struct{}

// connMemos are a connection's memos by key name ("": the master key).
type connMemos struct {
	mu    sync.Mutex
	byKey map[string]*memo.Memo
}

// maxMemoKeys bounds the keys one connection keeps memos for; past it the
// connection starts over.
const maxMemoKeys = 64

// memoOf is the memo of key (nil: the master key) on the connection ctx's
// request came on; nil when the server was not given ConnContext.
func memoOf(ctx context.Context, key *keys.Key) *memo.Memo {
	cm, _ := ctx.Value(memoKey{}).(*connMemos)
	if cm == nil {
		return nil
	}
	name := ""
	if key != nil {
		name = key.Name
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	m := cm.byKey[name]
	if m == nil {
		if cm.byKey == nil || len(cm.byKey) >= maxMemoKeys {
			cm.byKey = make(map[string]*memo.Memo)
		}
		m = memo.New()
		cm.byKey[name] = m
	}
	return m
}
