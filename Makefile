# keyrelay: see README.md. Every target works from a clean clone.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin:$(shell go env GOPATH 2>/dev/null)/bin
GO ?= go
# The binary make build writes; make install installs it (a test sets its
# own, so that two runs do not share one).
BIN ?= bin/keyrelay
# Where make man writes the man pages (make install and dist take them there).
MANOUT ?= man
# keyrelay version reports this as the build date; SOURCE_DATE_EPOCH (the
# reproducible-builds convention) pins it, else it is now.
# Evaluated once (:=), so every binary of one make run has the same date.
ifndef BUILD_DATE
BUILD_DATE := $(shell date -u -d @$${SOURCE_DATE_EPOCH:-$$(date +%s)} +%Y-%m-%dT%H:%M:%SZ)
endif
# The commit and its time, stamped too: the toolchain records them only with
# VCS stamping on, and GOFLAGS=-buildvcs=false (or a git that refuses the
# checkout) turns it off. "+dirty" as the toolchain says it: uncommitted or
# untracked files. Empty outside a git checkout: version says "commit unknown".
GIT_COMMIT := $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && echo "$$c$$([ -z "$$(git status --porcelain 2>/dev/null)" ] || echo +dirty)")
GIT_TIME := $(shell TZ=UTC git show -s --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD 2>/dev/null)
VERSION_LDFLAGS := -X github.com/keyrelay/keyrelay/cmd.buildDate=$(BUILD_DATE) \
  -X github.com/keyrelay/keyrelay/cmd.commit=$(GIT_COMMIT) -X github.com/keyrelay/keyrelay/cmd.commitTime=$(GIT_TIME)
# Property tests run at least this many cases per property.
export RAPID_CHECKS ?= 1000
# Counted, not timed: Go 1.26's fuzz coordinator can fail a timed run with a
# spurious "context deadline exceeded" (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 100000x

.PHONY: all build deps test unit e2e wine-test vmtest fuzz bench bench-peers measure measure-acks measure-start lint demo clean robotgo-bench cross dist man readme x11-soak install install-files install-windows uninstall

# What make test needs beyond Go (>= 1.26, from go.dev/dl): gcc for -race,
# the X tools (the README's CI recipe: xvfb, xterm, xdotool), tmux and
# iproute2 for the end-to-end tests, sway and wev for recv --inject
# wayland's (a headless compositor and a client that logs its keys),
# chromium for recv --inject wayland typing into Chromium on sway, man-db
# to render the man pages as a reader does (MANWIDTH=80 man -l), qemu, a
# kernel,
# busybox and xz-utils (compressed kernel modules) for the VM test, wine and
# the MinGW-w64 C compiler (the ProcessPrng shim) for the Windows capture
# and injector under Wine (e2e TestWine), chromium and firefox-esr for the
# browsers recv --inject x11 types into (e2e TestBrowserCharacters). The one
# list: .ci/run installs it with make deps too. Tests whose tool is missing
# are skipped, and the summary at the end of make unit/e2e names them.
DEPS := make gcc libc6-dev git ca-certificates iproute2 xvfb x11-utils xdotool xinput \
  x11-xkb-utils xkb-data libx11-data xterm x11proto-dev tmux sway wev man-db bash-completion qemu-system-x86 busybox-static xz-utils \
  wine wine64 gcc-mingw-w64-x86-64 chromium firefox-esr
# The kernel: Debian's linux-image-amd64, Ubuntu's (and its derivatives') linux-image-generic.
KERNEL_PKG ?= $(shell grep -qsE '^ID(_LIKE)?=.*ubuntu' /etc/os-release && echo linux-image-generic || echo linux-image-amd64)

all: build

# Install DEPS with apt-get (Debian/Ubuntu; through sudo unless root).
deps:
	@command -v apt-get >/dev/null || { echo "make deps: needs apt-get (Debian/Ubuntu); elsewhere install the equivalents of: $(DEPS) $(KERNEL_PKG)" >&2; exit 1; }
	@sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; set -x; \
	  $$sudo apt-get update -qq && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEPS) $(KERNEL_PKG)

build:
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BIN) .

# The README's test command: lint, unit and property tests under the race
# detector, a short run of every fuzz target (FUZZTIME 20000x: a longer one
# is make fuzz's), the plain cross builds, and the end-to-end tests, on this
# machine and in a VM (e2e's TestMakeDist runs make dist twice and compares).
test: FUZZTIME = 20000x
test: lint unit fuzz cross e2e vmtest

# gotestsum (pinned; go run fetches it, go.mod is untouched) runs go test
# and ends with a "=== Skipped" list: each test skipped here and why (a
# missing tool). Its exit status is go test's.
GOTESTSUM := $(GO) run gotest.tools/gotestsum@v1.12.3
unit:
	$(GOTESTSUM) --format pkgname -- -race -shuffle on -count=1 ./...

# End-to-end: the built binary over real loopback UDP (e2e/). Most tests
# run in parallel, four at a time: they mostly wait (on timeouts, and the
# race detector's second before each keyrelay exits), so the suite takes
# about a third of the time it does serially on 2 cores;
# the timed ones run first, serially and alone (e2e/e2e_test.go says how
# the tests are kept apart).
e2e:
	$(GOTESTSUM) --format testname -- -count=1 -tags e2e -parallel 4 ./e2e/

# The Windows capture and injector under Wine on Xvfb alone, and
# keyrelay.exe's send and recv over loopback UDP to and from the Linux
# keyrelay (part of e2e: about a minute, 15 s of it making the Wine prefix).
wine-test:
	$(GO) test -count=1 -tags e2e -v -run '^TestWine$$' ./e2e/

# The built binary in a small Linux VM booted with QEMU (vmtest/): evdev
# capture and uinput injection on a real kernel.
# Skipped without qemu-system-x86, a kernel image and busybox-static; in CI
# (CI=true) their absence fails.
vmtest:
	set -o pipefail; $(GO) test -count=1 -tags vmtest -v -run '^TestVM$$' ./vmtest/ 2>&1 | grep -vE '^=== (RUN|PAUSE|CONT)'

# Each fuzz target for FUZZTIME executions, from the checked-in corpus
# (scripts/fuzz.sh: two at a time).
fuzz:
	GO='$(GO)' FUZZTIME='$(FUZZTIME)' scripts/fuzz.sh

# A plain build works everywhere with no tags and no C compiler
# (CGO_ENABLED=0, as go install does without gcc): every release target,
# and every package, tests included (vet type-checks them), for Windows
# and macOS. robotgo's macOS and Windows backend is the one opt-in (-tags
# robotgo, cgo there; its pure-Go form, -tags purego, is built here).
# -trimpath as make dist builds: dist reuses the packages compiled here.
CROSS_TARGETS := linux/amd64 linux/arm64 linux/arm windows/amd64 windows/arm64 darwin/amd64 darwin/arm64
cross:
	@set -e; for t in $(CROSS_TARGETS); do echo "cross $$t"; \
	  CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -trimpath -o /dev/null . ; done
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build -trimpath ./...
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) vet -trimpath ./...
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) vet -trimpath ./...
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) vet -trimpath -tags robotgo,purego ./inject
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) vet -trimpath -tags robotgo,purego ./inject

# Static release binaries (no cgo: every source and injector of each system
# is pure Go) for the usual receivers and senders: Linux, macOS and Windows.
# Linux and macOS: each binary also as a tarball of what make install
# installs there (binary, man pages, completions, README; the systemd units
# on Linux, the launchd agents on macOS) laid out as under PREFIX=/usr/local,
# so that
#   sudo tar -C /usr/local --strip-components=1 -xzf keyrelay-linux-amd64.tar.gz
# installs it. Windows: a zip of a folder holding keyrelay.exe, the README
# and PowerShell's completion (make install-windows). With SHA-256
# checksums. The archives are reproducible: files sorted, owned by root,
# dated BUILD_DATE, gzip without a name or time (internal/tools/distzip for the
# zip). DIST is where they go (a test makes its own).
DIST ?= dist
DIST_TARGETS ?= linux/amd64 linux/arm64 linux/arm/7 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
dist: build man
	@rm -rf $(DIST) && mkdir -p $(DIST)
	@set -e; for t in $(DIST_TARGETS); do \
	  os=$${t%%/*}; rest=$${t#*/}; arch=$${rest%%/*}; arm=$${rest#*/}; [ "$$arm" = "$$rest" ] && arm=; \
	  name=keyrelay-$$os-$$arch$${arm:+v$$arm}; exe=; [ $$os = windows ] && exe=.exe; out=$(DIST)/$$name$$exe; echo "build $$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch GOARM=$$arm $(GO) build -trimpath -ldflags '-s -w $(VERSION_LDFLAGS)' -o $$out . ; \
	  stage=$(DIST)/stage-$$name; \
	  if [ $$os = windows ]; then \
	    $(MAKE) --no-print-directory -s install-windows BIN_FILE=$$out WINDIR=$$stage/$$name; \
	    $(GO) run ./internal/tools/distzip -date '$(BUILD_DATE)' -o $(DIST)/$$name.zip -C $$stage $$name; \
	    rm -rf $$stage; echo "dist $(DIST)/$$name.zip"; continue; \
	  fi; \
	  $(MAKE) --no-print-directory -s install-files BIN_FILE=$$out DESTDIR=$(abspath $(DIST))/stage-$$name PREFIX=/usr/local SERVICES=$$([ $$os = darwin ] && echo launchd || echo systemd); \
	  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='$(BUILD_DATE)' \
	    -C $$stage/usr/local --transform "s,^\.,$$name," -cf - . | gzip -9n > $$out.tar.gz; \
	  rm -rf $$stage; echo "dist $$out.tar.gz"; \
	done
	@if [ "$$(uname -sm)" = "Linux x86_64" ] && [ -x $(DIST)/keyrelay-linux-amd64 ]; then v=$$($(DIST)/keyrelay-linux-amd64 version) && echo "$$v" && { grep -q ' built $(BUILD_DATE) ' <<<"$$v" || { echo "dist: expected build date $(BUILD_DATE)" >&2; exit 1; }; }; fi
	@# Each archive holds what make install (install-windows) puts there on its system.
	@set -e; for f in $(DIST)/*.tar.gz $(DIST)/*.zip; do [ -e "$$f" ] || continue; \
	  name=$${f##*/}; name=$${name%.tar.gz}; name=$${name%.zip}; os=$${name#keyrelay-}; os=$${os%%-*}; \
	  rm -rf $(DIST)/check; \
	  if [ $$os = windows ]; then \
	    $(MAKE) --no-print-directory -s install-windows BIN_FILE=$(DIST)/$$name.exe WINDIR=$(DIST)/check; \
	    got=$$($(GO) run ./internal/tools/distzip -l $$f | sed 's,^[^/]*/,,' | sort); \
	  else \
	    $(MAKE) --no-print-directory -s install-files BIN_FILE=$(DIST)/$$name DESTDIR=$(abspath $(DIST))/check PREFIX=/usr/local SERVICES=$$([ $$os = darwin ] && echo launchd || echo systemd); \
	    mv $(DIST)/check/usr/local $(DIST)/check.tmp && rm -rf $(DIST)/check && mv $(DIST)/check.tmp $(DIST)/check; \
	    got=$$(tar -tzf $$f | grep -v '/$$' | sed 's,^[^/]*/,,' | sort); \
	  fi; \
	  want=$$(cd $(DIST)/check && find . -type f | sed 's,^\./,,' | sort); rm -rf $(DIST)/check; \
	  [ "$$got" = "$$want" ] || { echo "dist: $$f does not hold what make install puts on $$os:"; diff <(echo "$$want") <(echo "$$got"); exit 1; }; \
	  echo "dist: $$f holds the $$(wc -l <<<"$$want") files make install puts on $$os"; \
	done
	cd $(DIST) && sha256sum keyrelay-* > SHA256SUMS && cat SHA256SUMS

# Installs the binary, the man pages (one per command, and keyrelay-script(5),
# the key script format), bash, zsh and fish completions, the services that
# start keyrelay with the session (SERVICES: systemd, contrib/systemd's user
# units and keyrelay-hidg's system unit, their ExecStart pointed at BINDIR;
# on macOS launchd, contrib/launchd's agents and their README in LAUNCHDDIR,
# ProgramArguments pointed at BINDIR) and the README with docs/ beside it
# (the README's links lead there), under DESTDIR PREFIX where each kind
# usually goes. make uninstall removes them. Both are run by the e2e test
# TestMakeInstall.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
SYSTEMDUSERDIR ?= $(PREFIX)/lib/systemd/user
SYSTEMDSYSTEMDIR ?= $(PREFIX)/lib/systemd/system
DOCDIR ?= $(PREFIX)/share/doc/keyrelay
LAUNCHDDIR ?= $(PREFIX)/share/keyrelay/launchd
SERVICES ?= $(if $(filter Darwin,$(shell uname -s)),launchd,systemd)
AGENTS := $(wildcard contrib/launchd/*.plist)
# The hidg receiver is a system service (the gadget needs root); the others
# are a user's, started with the desktop session.
SYSTEM_UNITS := contrib/systemd/keyrelay-hidg.service
UNITS := $(filter-out $(SYSTEM_UNITS),$(wildcard contrib/systemd/*.service))
install: build man
	@$(MAKE) --no-print-directory install-files BIN_FILE=$(BIN)
	@if [ '$(SERVICES)' = launchd ]; then echo "make install: installed under $(DESTDIR)$(PREFIX); launchd agents: see $(LAUNCHDDIR)/README.md"; \
	else echo "make install: installed under $(DESTDIR)$(PREFIX); systemd user units: systemctl --user daemon-reload, then enable keyrelay-recv.service (see its header)"; fi

# What install installs, from BIN_FILE (make dist: a cross-built binary) and
# MANOUT; completions come from BIN, which runs here.
BIN_FILE ?= $(BIN)
install-files:
	@set -e; d='$(DESTDIR)'; \
	install -Dm755 '$(BIN_FILE)' "$$d$(BINDIR)/keyrelay"; \
	install -d "$$d$(MANDIR)/man1" "$$d$(MANDIR)/man5" "$$d$(BASHCOMPDIR)" "$$d$(ZSHCOMPDIR)" "$$d$(FISHCOMPDIR)" "$$d$(DOCDIR)"; \
	install -m644 $(MANOUT)/*.1 "$$d$(MANDIR)/man1/"; \
	install -m644 $(MANOUT)/*.5 "$$d$(MANDIR)/man5/"; \
	'$(BIN)' completion bash > "$$d$(BASHCOMPDIR)/keyrelay"; \
	'$(BIN)' completion zsh > "$$d$(ZSHCOMPDIR)/_keyrelay"; \
	'$(BIN)' completion fish > "$$d$(FISHCOMPDIR)/keyrelay.fish"; \
	chmod 644 "$$d$(BASHCOMPDIR)/keyrelay" "$$d$(ZSHCOMPDIR)/_keyrelay" "$$d$(FISHCOMPDIR)/keyrelay.fish"; \
	case '$(SERVICES)' in systemd|launchd) ;; *) echo "make install: SERVICES=$(SERVICES): want systemd or launchd" >&2; exit 1;; esac; \
	[ '$(SERVICES)' = systemd ] || { \
	  install -d "$$d$(LAUNCHDDIR)"; \
	  for a in $(AGENTS); do \
	    sed 's,<string>/usr/local/bin/keyrelay</string>,<string>$(BINDIR)/keyrelay</string>,' "$$a" > "$$d$(LAUNCHDDIR)/$${a##*/}"; \
	    chmod 644 "$$d$(LAUNCHDDIR)/$${a##*/}"; \
	  done; \
	  install -m644 contrib/launchd/README.md "$$d$(LAUNCHDDIR)/README.md"; }; \
	[ '$(SERVICES)' = launchd ] || install -d "$$d$(SYSTEMDUSERDIR)" "$$d$(SYSTEMDSYSTEMDIR)"; \
	[ '$(SERVICES)' = launchd ] || for u in $(UNITS); do \
	  { echo "# Installed by make install: ExecStart runs $(BINDIR)/keyrelay, not ~/.local/bin's."; \
	    sed 's,%h/\.local/bin/keyrelay,$(BINDIR)/keyrelay,' "$$u"; } > "$$d$(SYSTEMDUSERDIR)/$${u##*/}"; \
	  chmod 644 "$$d$(SYSTEMDUSERDIR)/$${u##*/}"; \
	done; \
	[ '$(SERVICES)' = launchd ] || for u in $(SYSTEM_UNITS); do \
	  { echo "# Installed by make install: ExecStart runs $(BINDIR)/keyrelay."; \
	    sed 's,/usr/local/bin/keyrelay,$(BINDIR)/keyrelay,' "$$u"; } > "$$d$(SYSTEMDSYSTEMDIR)/$${u##*/}"; \
	  chmod 644 "$$d$(SYSTEMDSYSTEMDIR)/$${u##*/}"; \
	done; \
	install -m644 README.md "$$d$(DOCDIR)/README.md"; \
	install -d "$$d$(DOCDIR)/docs"; install -m644 docs/*.md "$$d$(DOCDIR)/docs/"

# What make dist's Windows zip holds, in the folder WINDIR: keyrelay.exe
# (BIN_FILE), the README and docs/, and PowerShell's completion (from BIN;
# dot-source it in $$PROFILE). Windows has no man pages; autostart is a command
# (keyrelay autostart add recv).
install-windows:
	@set -e; install -Dm755 '$(BIN_FILE)' '$(WINDIR)/keyrelay.exe'; \
	install -m644 README.md '$(WINDIR)/README.md'; \
	install -d '$(WINDIR)/docs'; install -m644 docs/*.md '$(WINDIR)/docs/'; \
	'$(BIN)' completion powershell > '$(WINDIR)/keyrelay-completion.ps1'; \
	chmod 644 '$(WINDIR)/keyrelay-completion.ps1'

uninstall:
	@set -e; d='$(DESTDIR)'; \
	rm -f "$$d$(BINDIR)/keyrelay" "$$d$(MANDIR)/man1/keyrelay.1" "$$d$(MANDIR)"/man1/keyrelay-*.1 "$$d$(MANDIR)"/man5/keyrelay-*.5 \
	  "$$d$(BASHCOMPDIR)/keyrelay" "$$d$(ZSHCOMPDIR)/_keyrelay" "$$d$(FISHCOMPDIR)/keyrelay.fish" "$$d$(DOCDIR)/README.md" "$$d$(DOCDIR)"/docs/*.md \
	  $(foreach u,$(UNITS),"$$d$(SYSTEMDUSERDIR)/$(notdir $(u))") \
	  $(foreach u,$(SYSTEM_UNITS),"$$d$(SYSTEMDSYSTEMDIR)/$(notdir $(u))") \
	  $(foreach a,$(AGENTS),"$$d$(LAUNCHDDIR)/$(notdir $(a))") "$$d$(LAUNCHDDIR)/README.md"; \
	rmdir "$$d$(DOCDIR)/docs" "$$d$(DOCDIR)" "$$d$(LAUNCHDDIR)" 2>/dev/null || true; rmdir "$$(dirname "$$d$(LAUNCHDDIR)")" 2>/dev/null || true; \
	echo "make uninstall: removed keyrelay from $(DESTDIR)$(PREFIX)"

# The generated tables of the README (a status line per system) and docs/
# (keys.md: each injector and layouts; platforms.md: every source and
# injector), from capture/backends.go and inject/backends.go (cmd's
# TestREADMEBackendTables fails when they drift).
readme:
	$(GO) test -count=1 -run '^TestREADMEBackendTables$$' ./cmd/ -update-readme

# Man pages from the command tree (man/keyrelay.1, man/keyrelay-send.1, ...,
# and man/keyrelay-script.5, the key script format).
man:
	$(GO) run ./cmd/mangen -dir $(MANOUT)

# Every benchmark into bench.out, then internal/tools/report's simulation (plain
# queue against the defaults), loopback latency and idle CPU: together they
# write BENCHMARKS.md and benchmarks.png (docs/how-it-works.md: Performance). The
# desktop-to-desktop benchmark needs Xvfb (make deps) and is skipped without.
bench:
	set -o pipefail; { $(GO) test -run '^$$' -bench . -benchmem ./... && \
	  $(GO) test -tags e2e -run '^$$' -bench HookToDisplay -benchtime 300x ./e2e/ && \
	  $(GO) test -tags e2e -run '^$$' -bench IdlePair -benchtime 1x ./e2e/; } 2>&1 | tee bench.out
	KEYRELAY_REPORT=1 KEYRELAY_BENCH_OUT=$(CURDIR)/bench.out $(GO) test -count=1 -timeout 30m -run '^TestWriteReport$$' -v ./internal/tools/report/
	@echo "make bench: wrote BENCHMARKS.md and benchmarks.png"

# keyrelay and Barrier side by side (e2e/peers_test.go): the same
# two Xvfb desktops and a veth pair between two network namespaces, at 0, 5
# and 10 % loss, CPU, bytes, idle and latency of both, into BENCHMARKS.md's
# section between its bench-peers markers. Not part of make test: it needs
# root (namespaces, nftables) and about 3 minutes. It installs Debian's
# barrier and nftables where missing (without barrier it measures keyrelay
# alone and says so).
bench-peers:
	@command -v barriers >/dev/null && command -v nft >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "make bench-peers: needs barrier and nftables (apt-get install barrier nftables on Debian/Ubuntu)" >&2; exit 1; }; \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; set -x; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends barrier nftables; }
	set -o pipefail; $(GO) test -count=1 -timeout 30m -tags 'e2e peers' -run '^TestBenchPeers$$' -v ./e2e/ $(PEERS_FLAGS) | grep -vE '^=== (RUN|PAUSE|CONT)'

# BENCHMARKS.md's figures for the receiver's allowance (PROTOCOL.md
# §7.2), over more seeds than CI runs (about a minute): no 20 s hold released at 70-90 %
# loss in 1,000 runs, and when a killed sender's key is released.
measure:
	set -o pipefail; KEYRELAY_MEASURE=1 $(GO) test -count=1 -timeout 30m -run '^TestMeasureHolds$$' -v ./internal/testutil/relaytest/ | grep -vE '^=== (RUN|PAUSE|CONT)'

# recv's ack interval (receiver.MinAckInterval) against longer ones on a
# simulated LAN at 5-40 % loss, in virtual time (internal/tools/report's
# TestMeasureAckInterval): key-down and key-up latency tails, lost keys and
# packets per second, MEASURE_SEEDS seeds each (2 to 4 minutes for 300 on
# 2 shared cores).
MEASURE_SEEDS ?= 300
measure-acks:
	set -o pipefail; KEYRELAY_MEASURE=1 MEASURE_SEEDS=$(MEASURE_SEEDS) $(GO) test -count=1 -timeout 30m -run '^TestMeasureAckInterval$$' -v ./internal/tools/report/ | grep -vE '^=== |^ *--- PASS: TestMeasureAckInterval/'

# The keys typed at the start of a session, while the handshake runs, on
# the report's link (20 ms ± 5 ms one way) at 10, 30, 50 % and bursty loss,
# in virtual time (internal/tools/report's TestMeasureStart): key-down tails, the
# first five key-downs, lost keys and packets per second, MEASURE_SEEDS
# seeds each (25 to 80 s for 300 on 2 shared cores).
measure-start:
	set -o pipefail; KEYRELAY_MEASURE=1 MEASURE_SEEDS=$(MEASURE_SEEDS) $(GO) test -count=1 -timeout 30m -run '^TestMeasureStart$$' -v ./internal/tools/report/ | grep -vE '^=== |^ *--- PASS: TestMeasureStart/'

# DESIGN.md's "RECORD's recording client gets only the recording", at
# length (some 15 minutes; not part of make test, whose e2e runs 12
# sessions): 50 sessions of send --input x11 against one Xvfb, stopped by
# SIGTERM, SIGKILL and the display going away, with layout changes,
# first on a plain server, then with every server under valgrind, failing
# on any invalid access it reports. Needs valgrind (apt-get install valgrind).
x11-soak:
	X11_SOAK_SESSIONS=50 $(GO) test -count=1 -tags e2e -timeout 10m -run '^TestRecordSoakLeavesServerHealthy$$' -v ./e2e/
	X11_SOAK_SESSIONS=50 X11_SOAK_VALGRIND=1 $(GO) test -count=1 -tags e2e -timeout 60m -run '^TestRecordSoakLeavesServerHealthy$$' -v ./e2e/

lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e
	$(GO) vet -tags vmtest ./vmtest
	@# Dead code: nothing unreachable from main or any test, the
	@# e2e and vmtest ones included. Pinned, fetched by go run like gotestsum.
	@out=$$($(GO) run golang.org/x/tools/cmd/deadcode@v0.39.0 -test -tags e2e,vmtest ./...); \
	  if [ -n "$$out" ]; then echo "dead code:"; echo "$$out"; exit 1; fi
	@# go.mod and go.sum are tidy: -diff changes nothing and needs no copies,
	@# so overlapping runs cannot trip over each other.
	@if ! out=$$($(GO) mod tidy -diff 2>&1); then \
	  echo "go mod tidy would change go.mod/go.sum (run go mod tidy):"; echo "$$out"; exit 1; fi
	@# Comments say what the code does and why: no Go file
	@# cites an issue or a must-have; cite DESIGN.md and PROTOCOL.md, and
	@# put figures in BENCHMARKS.md or commit bodies.
	@out=$$(grep -rnIiE --include='*.go' 'issues? #?[0-9]+|must-haves?|must haves? [0-9]' .); \
	  if [ -n "$$out" ]; then echo "issue references in Go files (cite DESIGN.md or PROTOCOL.md instead):"; echo "$$out"; exit 1; fi
	@# Commit messages since the convention was adopted: "pkg: phrase" in
	@# at most 72 characters, then a blank line (scripts/commitlint.sh).
	@scripts/commitlint.sh

# robotgo's cgo and pure-Go X11 backends side by side on $$DISPLAY (needs
# libxtst-dev libx11-dev, and an X server: e.g. Xvfb :9 -noreset & DISPLAY=:9).
robotgo-bench:
	$(GO) run -tags robotgobench ./internal/tools/robotgobench -n 3000

# A receiver and a sender on loopback relaying the demo script.
demo: build
	./scripts/demo.sh

clean:
	rm -rf bin dist man bench.out
