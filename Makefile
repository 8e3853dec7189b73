# choir: the two set-up commands are `make demo` and `make test`.

GO      ?= go
BIN     := bin
GOFLAGS_BUILD := -trimpath

.PHONY: all build install demo test audit check bench bench-scale bench-headless bench-sim fmt vet clean

all: build

## build: bin/choird, bin/choirctl and a static bin/choir-agent
build:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/choird ./choird
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/choirctl ./choirctl
	CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/choir-agent ./agent

## install: the three binaries to $(DESTDIR)$(PREFIX)/bin and choird.service
## to $(DESTDIR)$(PREFIX)/lib/systemd/system (a directory systemd reads for
## PREFIX=/usr/local and PREFIX=/usr), its ExecStart naming $(PREFIX)/bin/choird
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  := $(PREFIX)/bin
UNITDIR := $(PREFIX)/lib/systemd/system
install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BIN)/choird $(BIN)/choirctl $(BIN)/choir-agent $(DESTDIR)$(BINDIR)/
	sed 's|/usr/local/bin/choird|$(BINDIR)/choird|' choird/systemd/choird.service > $(DESTDIR)$(UNITDIR)/choird.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/choird.service

## demo: the main job on embedded defaults: a whole agent, in a throwaway home
demo: build
	@$(GO) run ./testkit/demo

## test: install and start what the tests need, then run the whole suite
test:
	@bash testkit/ci.sh

## audit: for an air-gapped audit: build from the tree alone (vendor/, no
## network, an empty module cache), vet, the tests that need no backend,
## the inventory of third-party code with licences, and a second build in a
## fresh clone showing byte-identical binaries
audit:
	@bash testkit/audit.sh

## check: formatting, vet and the unit tests, with no backends
check: fmt vet
	$(GO) test ./...

## bench: the benchmarks the issues ask to measure
bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

## bench-scale: what N idle agents cost the host, on the real engine and
## Postgres (testkit/scale; not part of make test): N = 1, 10, 100 by default;
## ARGS='-n 1000' adds a larger N (with -one-build: one agent image built,
## the rest copies of it), ARGS='-quick' is for development
bench-scale: build
	@$(GO) run ./testkit/scale $(ARGS)

## bench-headless: what a headless run costs outside the model and the memory
## of runs at once, on the real engine and Postgres (issue 16; not part of make
## test): RUNS=4 runs held at once by default
RUNS ?= 4
bench-headless:
	$(GO) test -run='^$$' -bench='^BenchmarkHeadlessRun$$' -benchtime=5x -timeout=30m ./choirctl
	CHOIR_BENCH_RUNS=$(RUNS) $(GO) test -run='^$$' -bench='^BenchmarkHeadlessConcurrentRuns$$' -benchtime=1x -timeout=30m ./choirctl

## bench-sim: the simulation beyond one host (issue 26; not part of make
## test): a real choird on its HTTPS agent transport against a fake engine,
## N simulated agents speaking the agent RPC (testkit/sim); N = 1000 and
## 10000 by default, ARGS='-n 100,500 -window 30s' for others
bench-sim: build
	@$(GO) run ./testkit/sim $(ARGS)

fmt:
	@out=$$(gofmt -l $$(find . -path ./vendor -prune -o -name '*.go' -print)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
