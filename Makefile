# Drover — the index of what you can do here. `make help` lists it.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/drover
# Everything `make test` runs must finish well within CI's limit.
TEST_TIMEOUT ?= 25m
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-zA-Z_-]*:.*## / {printf "  make %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## install Redis, ZooKeeper, promtool (package prometheus), chromium (the console's browser tests), python3-redis (the Python client's suite, run with /usr/bin/python3) and nodejs with npm from Debian's packages when missing, then the Node client's and its BullMQ comparison's locked dependencies (npm ci)
	@if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null || [ ! -f /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null || ! command -v promtool >/dev/null || ! command -v chromium >/dev/null || ! /usr/bin/python3 -c 'import redis' 2>/dev/null; then \
		echo "installing redis-server, zookeeper, prometheus (for promtool), chromium and python3-redis (apt-get)"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server zookeeper python3-redis >/dev/null && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends prometheus chromium >/dev/null; \
	fi
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
		echo "installing nodejs and npm (apt-get): the Node client's suite"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm >/dev/null; \
	fi
	@# The Node client's dependencies, as locked (ioredis; typescript to build it): again whenever the lockfile changed.
	@if [ ! -f clients/node/node_modules/.package-lock.json ] || [ clients/node/package-lock.json -nt clients/node/node_modules/.package-lock.json ]; then \
		echo "npm ci (clients/node)"; (cd clients/node && npm ci --no-audit --no-fund --loglevel=error); \
	fi
	@# The BullMQ comparison's packages (bullmq and ioredis, pinned; e2e.BenchmarkNodeVsBullMQ and its smoke test).
	@if [ ! -f clients/node/bench/node_modules/.package-lock.json ] || [ clients/node/bench/package-lock.json -nt clients/node/bench/node_modules/.package-lock.json ]; then \
		echo "npm ci (clients/node/bench)"; (cd clients/node/bench && npm ci --no-audit --no-fund --loglevel=error); \
	fi
	@redis-server --version | head -1
	@ls /usr/share/java/zookeeper-3*.jar
	@echo "node $$(node --version)"

.PHONY: build
build: ## build bin/drover (drover --version: the module version, VCS revision and dirty flag)
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/drover

.PHONY: test
test: deps ## install what is missing, then go vet and go test -race against real servers
	$(GO) vet ./...
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The KEDA external scaler's Go code is generated from scaler/externalscaler/*.proto
# and committed; this regenerates it (protoc from apt, the plugins from the Go proxy).
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
TOOLS := $(CURDIR)/.tools

.PHONY: proto
proto: ## regenerate scaler/externalscaler from its .proto (installs protoc and the Go plugins when missing)
	@command -v protoc >/dev/null || (DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq protobuf-compiler >/dev/null)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO_GRPC)
	cd scaler/externalscaler && PATH=$(TOOLS):$$PATH protoc --proto_path=. \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative externalscaler.proto

.PHONY: bench
bench: deps ## run the benchmarks (medians of 5) and rewrite BENCHMARKS.md
	$(GO) run ./tools/benchreport -out BENCHMARKS.md

.PHONY: ab
ab: deps ## A/B one benchmark between two revisions, alternated on this machine: make ab BENCH=REGEXP PKG=./queue [A=HEAD~1 B=HEAD ROUNDS=5 ARGS='-benchtime 2s'] (docs/benchmarks.md)
	$(GO) run ./tools/abtool -a '$(or $(A),HEAD~1)' -b '$(or $(B),HEAD)' -bench '$(value BENCH)' -pkg '$(PKG)' -rounds $(or $(ROUNDS),5) $(ARGS)

.PHONY: demo
demo: deps build ## a local fleet with example tasks and a live status view (Ctrl-C or DEMO_SECONDS to stop)
	$(BIN) dev --workers 3 --demo $(if $(DEMO_SECONDS),--duration $(DEMO_SECONDS)s)

.PHONY: chaos
chaos: deps build ## the fault-injection run (CHAOS_DURATION, default 10m)
	$(GO) run ./tools/chaos -duration $(or $(CHAOS_DURATION),10m)
