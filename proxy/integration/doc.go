// Package integration holds the end-to-end tests of the Docker stack: they
// start the repository's own docker-compose.yml (stub backend, proxy,
// warmer) with testcontainers-go's compose module, drive the proxy container
// with the official Chat Completions and Messages SDKs, watch the warmer's
// requests reach the backend, restart the proxy, and tear everything down.
//
// They need a Docker engine and the static binaries of `make build` in bin/;
// run them with `make test` (or `go test -v ./proxy/integration/` after
// `make build`). Without an engine they fail, saying so.
package integration
