# Dragoman — build, test and run the proxy, warmer and notify-chat.
#
#   make build   static binaries in bin/
#   make test    every test of every module, integration tests included
#   make lint    gofmt, go vet, staticcheck

GO        ?= go
BIN       := bin
MODULES   := ./proxy/... ./warmer/... ./notifier/...
LDFLAGS   := -s -w
GOBUILD   := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'
STATICCHECK_VERSION := v0.8.2

# testcontainers-go on this kind of machine: its reaper image cannot be pulled,
# and the Docker host must be reached on loopback.
export TESTCONTAINERS_RYUK_DISABLED := true
export TESTCONTAINERS_HOST_OVERRIDE := 127.0.0.1

.PHONY: all build test lint clean

all: build

build:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/proxy ./proxy/cmd/proxy
	$(GOBUILD) -o $(BIN)/stub-backend ./proxy/cmd/stub-backend
	$(GOBUILD) -o $(BIN)/warmer ./warmer/cmd/warmer
	$(GOBUILD) -o $(BIN)/notify-chat ./notifier/cmd/notify-chat

test: build
	$(GO) test -count=1 $(MODULES)

lint:
	@out=$$(gofmt -l proxy warmer notifier); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(MODULES)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(MODULES)

clean:
	rm -rf $(BIN)
