#!/usr/bin/env bash
# make demo: a receiver and a sender on loopback. The receiver logs every key
# it would inject; the sender plays testdata/scripts/demo.keys, first over a
# clean link, then through the impairment proxy at 30 % loss with reordering.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/keyrelay}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for FILE PATTERN: until a line matching PATTERN appears (at most 5 s).
wait_for() {
  for _ in $(seq 100); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "demo: timed out waiting for '$2' in $1" >&2; cat "$1" >&2; return 1
}

# Both ends share a key made for the demo (README: Security).
"$BIN" keygen --out "$work/demo.key"
export KEYRELAY_KEY_FILE="$work/demo.key"
"$BIN" recv --inject log --listen 127.0.0.1:0 >"$work/keys.jsonl" 2>"$work/recv.err" &
pids+=($!)
wait_for "$work/recv.err" "listening on"
addr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$work/recv.err" | head -n1)
echo "== receiver listening on $addr; the sender plays testdata/scripts/demo.keys"
# Show each JSON line as "KeyH down" or "'é' down" (the raw lines are in the
# log file).
tail -n +1 -f "$work/keys.jsonl" |
  sed -u -E -e 's/^\{"key":"([^"]+)","action":"([a-z]+)"(,"reason":"([^"]+)")?.*$/   recv> \1 \2 \4/' \
    -e "s/^\\{\"char\":\"(([^\"\\\\]|\\\\.)+)\",\"action\":\"([a-z]+)\"(,\"reason\":\"([^\"]+)\")?.*\$/   recv> '\\1' \\3 \\5/" &
pids+=($!)
"$BIN" send --to "$addr" --script testdata/scripts/demo.keys
echo
echo "== the same script through 'keyrelay impair' at 30 % loss, with delay and reordering"
"$BIN" impair --listen 127.0.0.1:0 --to "$addr" --loss 0.3 --delay 20ms --jitter 5ms --reorder 0.2 --seed 7 2>"$work/impair.err" &
pids+=($!)
wait_for "$work/impair.err" "listening on"
paddr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$work/impair.err" | head -n1)
"$BIN" send --to "$paddr" --script testdata/scripts/demo.keys
sleep 0.3
echo
echo "== receiver summary:"
kill -INT "${pids[0]}"; wait "${pids[0]}" || true
sed 's/^/   /' "$work/recv.err"
