// Package floorproxy is the bench's floor: the no-op reverse proxy that stands
// for what any Go proxy pays for one extra hop, httputil.ReverseProxy with
// nothing but the target URL set (and the inbound body read no further than
// its announced length: see New). bin/bench floor serves it, and the
// in-process benchmarks put it in front of their backends, so that both
// compare Dragoman with the same floor.
package floorproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// New is the floor in front of target. Its transport keeps enough idle
// connections for the bench's 256 concurrent clients (http.DefaultTransport
// keeps 2 per host, which would make the floor dial under load and flatter
// every proxy compared with it). It streams text/event-stream answers as
// they come, as ReverseProxy does by default.
//
// The body it forwards ends at its announced length without a last read of
// the inbound body. The transport reads a body once more after its length,
// to check that it ends there; when the backend answered first, writing
// the answer's head has closed the inbound body, that read fails, and the
// transport drops the backend connection under the answer it is relaying
// (go.dev/issue/40747): 3-4 % of the bench's streams were cut.
func New(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			if n := pr.In.ContentLength; n > 0 && pr.Out.Body != nil {
				pr.Out.Body = &announced{rc: pr.Out.Body, left: n}
			}
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
		},
	}
}

// announced reads a body of a known length and ends there.
type announced struct {
	rc   io.ReadCloser
	left int64
}

func (a *announced) Read(p []byte) (int, error) {
	if a.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.rc.Read(p)
	a.left -= int64(n)
	if a.left == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

func (a *announced) Close() error { return a.rc.Close() }
