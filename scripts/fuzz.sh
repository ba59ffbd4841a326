#!/usr/bin/env bash
# make fuzz: every fuzz target for FUZZTIME executions, from its checked-in
# corpus (testdata/fuzz/NAME), two at a time with one worker each (the CI
# machines have two cores). The targets are found by their declarations in
# the test files rather than by 'go test -list' per package, which built
# every package's test binary once more only to list them. Each run logs to
# its own temporary file (two make fuzz may overlap), shown when it fails.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-100000x}
export GO FUZZTIME
grep -rl --include='*_test.go' '^func Fuzz' . |
  while read -r f; do
    for name in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$f"); do
      echo "./$(dirname "${f#./}") $name"
    done
  done | sort -u |
  xargs -P 2 -L 1 sh -c '
    log=$(mktemp "${TMPDIR:-/tmp}/keyrelay-fuzz.XXXXXX")
    echo "fuzz $0 $1"
    if ! "$GO" test -run "^\$" -fuzz "^$1\$" -fuzztime "$FUZZTIME" -parallel 1 "$0" >"$log" 2>&1; then
      cat "$log"; rm -f "$log"; exit 255
    fi
    rm -f "$log"'
