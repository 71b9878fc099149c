# Dragoman — build, test and run the proxy, warmer and notify-chat.
#
#   make build   static binaries in bin/
#   make test    every test of every module, integration tests included
#   make lint    gofmt, go vet, staticcheck, repolint (no tracked binaries or
#                large files; the docs' links and anchors), promtool check
#                metrics (lint-metrics)
#   make images  the proxy and warmer images, tagged with the version
#   make chart   the Helm chart's checks (also part of make test)

GO        ?= go
BIN       := bin
MODULES   := ./proxy/... ./warmer/... ./notifier/... ./tools/...
LDFLAGS   := -s -w
GOBUILD   := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'
STATICCHECK_VERSION := v0.8.2

# testcontainers-go on this kind of machine: its reaper image cannot be pulled,
# and the Docker host must be reached on loopback.
export TESTCONTAINERS_RYUK_DISABLED := true
export TESTCONTAINERS_HOST_OVERRIDE := 127.0.0.1

.PHONY: all build test fuzz lint clean

# Every fuzz target of the proxy module runs for FUZZTIME inside `make test`.
FUZZTIME ?= 3s
# Minimizing each new interesting input can outlast a short FUZZTIME, and
# the fuzzer then fails with "context deadline exceeded" although nothing
# failed: off by default (a crasher is still reported and saved whole).
# Go 1.26's fuzz coordinator can also report "context deadline exceeded"
# as its time runs out (go.dev/issue/75804, fixed in Go 1.27): a target
# that fails so, with no failing input written, is run once more; any
# other failure, or that one twice, fails the run.
FUZZMINIMIZE ?= 0

all: build

build:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/proxy ./proxy/cmd/proxy
	$(GOBUILD) -o $(BIN)/stub-backend ./proxy/cmd/stub-backend
	$(GOBUILD) -o $(BIN)/warmer ./warmer/cmd/warmer
	$(GOBUILD) -o $(BIN)/notify-chat ./notifier/cmd/notify-chat

test: build
	$(GO) test -count=1 $$($(GO) list $(MODULES) | grep -v '/proxy/integration$$')
	@$(MAKE) --no-print-directory fuzz
	$(GO) test -count=1 -v -timeout 20m ./proxy/integration/  # the Docker stack, test names shown
	@$(MAKE) --no-print-directory chart

fuzz:
	@for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' proxy | xargs -n1 dirname | sort -u); do \
	  for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -c6-); do \
	    echo "fuzz $$fn in ./$$dir ($(FUZZTIME))"; \
	    for try in 1 2; do \
	      out=$$($(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) ./$$dir 2>&1); rc=$$?; \
	      echo "$$out"; \
	      if [ $$rc -eq 0 ]; then break; fi; \
	      if [ $$try -eq 1 ] && echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
	        echo "fuzz $$fn: the fuzzer's own race at the end of -fuzztime (go.dev/issue/75804, fixed in Go 1.27), no failing input: once more"; \
	        continue; \
	      fi; \
	      exit 1; \
	    done; \
	  done; \
	done

lint:
	$(GO) run ./tools/cmd/repolint
	@out=$$(gofmt -l proxy warmer notifier tools deploy/helm/chartcheck); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(MODULES)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(MODULES)
	cd $(CHARTCHECK) && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	@$(MAKE) --no-print-directory lint-metrics

clean:
	rm -rf $(BIN)

# lint-metrics: Prometheus's own lint, `promtool check metrics`, on the real
# expositions of bin/proxy and bin/warmer after known traffic (successes,
# streams, an unknown alias, a backend 503, a client hang-up): see
# tools/cmd/metricslint, which fails on any finding. promtool is built from
# the Go module proxy at PROMTOOL_VERSION (Prometheus's Go module versions
# are v0.3xx.y for its v3.x.y releases) into bin/tools. Its first build
# with an empty Go build cache took 9m57s on two nearly idle cores (12m13s
# user + 3m06s sys; 68 min under a load of ~20); later ones come from Go's build
# cache in seconds, and the whole target then takes ~10 s.
PROMTOOL_VERSION := v0.316.0
.PHONY: lint-metrics
lint-metrics: build
	GOWORK=off GOFLAGS=-mod=mod GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)
	$(GO) run ./tools/cmd/metricslint --bin $(BIN) --promtool $(BIN)/tools/promtool

# install-hook: build notify-chat and register it as Claude Code's Stop and
# Notification hook in $CLAUDE_CONFIG_DIR (else ~/.claude)/settings.json.
# ARGS: --project (.claude/settings.local.json), --client codex
# ($CODEX_HOME, else ~/.codex/config.toml), --config-dir DIR, --dry-run
# (see bin/notify-chat install --help and docs/notifier.md).
.PHONY: install-hook
install-hook:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/notify-chat ./notifier/cmd/notify-chat
	$(BIN)/notify-chat install $(ARGS)

# uninstall-hook: remove what install-hook added (the settings entries, an
# older install's in ~/.client too, and the copied binary).
# ARGS: --project, --client codex, --config-dir DIR, --dry-run.
.PHONY: uninstall-hook
uninstall-hook:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/notify-chat ./notifier/cmd/notify-chat
	$(BIN)/notify-chat uninstall $(ARGS)

# bench: what Dragoman adds to a request, beside the stub backend answered
# directly and a no-op reverse proxy (the floor), in one run; prints the
# table and writes it into docs/performance.md (tools/cmd/bench, a module of its own so that the
# load generator and plotting libraries stay out of proxy/go.mod).
# Then the curves (issue 18: request size, tools, concurrent slow streams,
# connections), as tables and SVG plots next to the doc.
# BENCH_ARGS: --quick (a short smoke run), --cases TEXT, --profile DIR,
# --curves size,tools,streams,conns|none, --curves-only, --streams-at 1000 (the
# slow-streams curve's points), --pool=false (no pool comparison).
.PHONY: bench
bench: build
	$(GOBUILD) -o $(BIN)/bench ./tools/cmd/bench
	$(BIN)/bench --proxy $(BIN)/proxy --stub $(BIN)/stub-backend --out docs/performance.md $(BENCH_ARGS)

# soak: SOAK_STREAMS (200) concurrent Messages streams through bin/proxy
# and bin/stub-backend, run as processes, for SOAK_DURATION (2m); some
# clients hang up mid-stream. Reports requests done, errors, and the
# proxy's goroutines (its --pprof endpoint), threads and RSS
# (/proc/PID/status) from idle to the end; fails on any error or growth
# (tools/cmd/soak). SOAK_ARGS: more flags (see go run ./tools/cmd/soak -h).
SOAK_DURATION ?= 2m
SOAK_STREAMS  ?= 200
.PHONY: soak
soak: build
	$(GOBUILD) -o $(BIN)/soak ./tools/cmd/soak
	$(BIN)/soak --bin $(BIN) --duration $(SOAK_DURATION) --streams $(SOAK_STREAMS) $(SOAK_ARGS)

# ---- Docker: the demo stack of docker-compose.yml (deploy/, .env) ----
#
#   make up     build bin/ and the images, start backend stub + proxy + warmer,
#               wait until healthy, print what each client reads (Claude Code,
#               Codex, Chat clients)
#   make down   stop the stack; remove its containers, network and images

COMPOSE := docker compose

.PHONY: up down docker-check compose-plugin

docker-check:
	@docker info >/dev/null 2>&1 || { echo "make: no Docker engine answers: start dockerd, as root: dockerd >/tmp/dockerd.log 2>&1 &  (.ci/run does it)" >&2; exit 1; }

# docker compose v2 is not in Debian 12: built from the Go module proxy when missing.
compose-plugin:
	@deploy/compose-plugin.sh

# A fresh .env from .env.example, with a random proxy key (never overwritten).
.env: | .env.example
	@key="sk-dragoman-$$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; \
	sed "s/<PROXY_API_KEY>/$$key/g" .env.example > .env.tmp && chmod 600 .env.tmp && mv .env.tmp .env
	@echo "created .env from .env.example (PROXY_API_KEY is a new random key)"

up: docker-check compose-plugin build .env
	@$(COMPOSE) build --quiet
	@$(COMPOSE) up --detach --no-build --wait --wait-timeout 120 --remove-orphans || \
	  { $(COMPOSE) ps --all; $(COMPOSE) logs --tail 40; exit 1; }
	@$(COMPOSE) ps
	@url="http://localhost:$$($(COMPOSE) port proxy 4000 | sed 's/.*://')"; \
	key=$$(grep '^PROXY_API_KEY=' .env | tail -n 1 | cut -d= -f2- | tr -d "\"'"); \
	echo; \
	echo "Dragoman is up at $$url (stub backend, warmer running). For Claude Code:"; \
	echo "  export ANTHROPIC_BASE_URL=$$url"; \
	echo "  export ANTHROPIC_AUTH_TOKEN='$$key'"; \
	echo "  export DISABLE_PROMPT_CACHING=1 DISABLE_INTERLEAVED_THINKING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"; \
	echo "For Codex, in ~/.codex/config.toml: model = \"local-model\" and openai_base_url = \"$$url/v1\"; then:"; \
	echo "  export CODEX_API_KEY='$$key'"; \
	echo "For a Chat Completions client (OpenAI SDKs; OpenCode: see README.md):"; \
	echo "  export OPENAI_BASE_URL=$$url/v1 OPENAI_API_KEY='$$key'"; \
	echo "Try: curl -s $$url/v1/messages -H 'Authorization: Bearer $$key' -d '{\"model\":\"claude-opus-5-5\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'"; \
	echo "Stop: make down"

down: docker-check compose-plugin
	$(COMPOSE) down --rmi local --volumes --remove-orphans

# race: the tests of the packages whose memory crosses goroutines (pooled
# buffers, stream relays, the backend transport), under the race
# detector. tidy-check: every module's go.mod and go.sum as go mod tidy
# leaves them. .ci/run runs both, with lint, before make test.
RACE_PACKAGES := ./proxy/server/ ./proxy/upstream/ ./proxy/translate/
.PHONY: race tidy-check
race:
	$(GO) test -race -count=1 $(RACE_PACKAGES)

tidy-check:
	@for m in proxy warmer notifier tools; do (cd $$m && $(GO) mod tidy -diff) || { echo "go.mod/go.sum of $$m need go mod tidy"; exit 1; }; done

# ---- Kubernetes: the Helm chart (deploy/helm/dragoman) and its images ----
#
#   make images  build bin/ and the proxy and warmer images, tagged
#                $(IMAGE_PREFIX)/proxy:$(VERSION) and $(IMAGE_PREFIX)/warmer:$(VERSION):
#                the chart's default images (VERSION: the chart's appVersion)
#   make chart   helm lint + helm template of the chart (default values and
#                every examples/*.yaml) through the Helm SDK, strict decoding
#                into the Kubernetes API types, the chart's invariants, and
#                the rendered pods' commands run against bin/

CHART        := deploy/helm/dragoman
CHARTCHECK   := deploy/helm/chartcheck
VERSION      ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' $(CHART)/Chart.yaml)
IMAGE_PREFIX ?= dragoman

.PHONY: images chart

images: docker-check build
	docker build --quiet --label org.opencontainers.image.version=$(VERSION) \
	  -f deploy/proxy.Dockerfile -t $(IMAGE_PREFIX)/proxy:$(VERSION) .
	docker build --quiet --label org.opencontainers.image.version=$(VERSION) \
	  -f deploy/warmer.Dockerfile -t $(IMAGE_PREFIX)/warmer:$(VERSION) .
	@echo "built $(IMAGE_PREFIX)/proxy:$(VERSION) and $(IMAGE_PREFIX)/warmer:$(VERSION)"

# A module of its own, outside go.work (GOWORK=off): Helm and the Kubernetes
# API modules must not take part in the workspace's version selection.
chart: build
	cd $(CHARTCHECK) && GOWORK=off DRAGOMAN_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 ./...
