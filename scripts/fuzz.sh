#!/usr/bin/env bash
# make fuzz: every fuzz target for FUZZTIME executions, from its checked-in
# corpus (testdata/fuzz/NAME), two at a time with one worker each (the CI
# machines have two cores). The targets are found by their declarations in
# the test files rather than by 'go test -list' per package, which built
# every package's test binary once more only to list them. Each package's
# fuzzing test binary is built once (go test -c -fuzz) and run for each of
# its targets from the package's directory, as go test -fuzz would, with
# go test's fuzz cache: linking a test binary per target cost more than
# most targets' executions. Each run logs to its own temporary file (two
# make fuzz may overlap), shown when it fails; FUZZTIMES=1 prints each
# target's time.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-100000x}
bin=$(mktemp -d "${TMPDIR:-/tmp}/keyrelay-fuzz.XXXXXX")
trap 'rm -rf "$bin"' EXIT
FUZZCACHE=${FUZZCACHE:-$("$GO" env GOCACHE)/fuzz}
export GO FUZZTIME FUZZCACHE bin
targets=$(grep -rl --include='*_test.go' '^func Fuzz' . |
  while read -r f; do
    for name in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f"); do
      echo "./$(dirname "${f#./}") $name"
    done
  done | sort -u)
# One binary per package, two packages built at a time.
echo "$targets" | awk '{print $1}' | sort -u |
  xargs -P 2 -I{} sh -c '
    out="$bin/$(echo "$1" | tr / _).test"
    if ! "$GO" test -c -fuzz . -o "$out" "$1" >"$out.log" 2>&1; then
      cat "$out.log"; exit 255
    fi' sh {}
echo "$targets" |
  xargs -P 2 -L 1 sh -c '
    log=$(mktemp "${TMPDIR:-/tmp}/keyrelay-fuzz.XXXXXX")
    echo "fuzz $0 $1"
    start=$(date +%s)
    if ! (cd "$0" && "$bin/$(echo "$0" | tr / _).test" -test.run "^\$" -test.fuzz "^$1\$" \
        -test.fuzztime "$FUZZTIME" -test.parallel 1 \
        -test.fuzzcachedir "$FUZZCACHE/$(cd "$0" && "$GO" list .)") >"$log" 2>&1; then
      cat "$log"; rm -f "$log"; exit 255
    fi
    [ -z "${FUZZTIMES:-}" ] || echo "  $0 $1: $(( $(date +%s) - start )) s"
    rm -f "$log"'
