// Package floorproxy is the bench's floor: the no-op reverse proxy that stands
// for what any Go proxy pays for one extra hop, httputil.ReverseProxy with
// nothing but the target URL set. bin/bench floor serves it, and the
// in-process benchmarks put it in front of their backends, so that both
// compare Dragoman with the same floor.
package floorproxy

import (
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
func New(target *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
		},
	}
}
