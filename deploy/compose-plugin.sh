#!/usr/bin/env bash
# Installs the `docker compose` v2 CLI plugin when `docker compose version`
# fails. Debian 12's docker.io has no compose v2 and no image or release
# binary can be downloaded here, so it is built from source fetched through
# the Go module proxy (about two minutes on two cores).
#
#   deploy/compose-plugin.sh            install into ~/.docker/cli-plugins
#   COMPOSE_VERSION=v2.40.3 deploy/compose-plugin.sh
set -euo pipefail

version=${COMPOSE_VERSION:-v2.40.3}
if docker compose version >/dev/null 2>&1; then
	exit 0
fi
dest=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
echo "docker compose is missing: building github.com/docker/compose/v2@$version into $dest (about 2 minutes)"
dir=$(GOWORK=off GOFLAGS=-mod=mod go mod download -json "github.com/docker/compose/v2@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
	echo "compose-plugin: could not download github.com/docker/compose/v2@$version through the Go module proxy" >&2
	exit 1
fi
mkdir -p "$dest"
(
	cd "$dir"
	GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
		-ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$version" \
		-o "$dest/docker-compose" ./cmd
)
docker compose version
