#!/usr/bin/env bash
# make demo: a receiver and a sender on loopback. The receiver logs every key
# it would inject; the sender plays testdata/scripts/demo.keys, first over a
# clean link, then through the impairment proxy at 30 % loss with reordering.
# The last line compares what the receiver got from the two runs (exit 1 if
# they differ). Ctrl+C stops everything it started and exits 130.
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
# Ctrl+C (SIGINT to the whole process group) or SIGTERM: the sender releases
# what it holds and stops; the receiver and the proxy run in their own
# sessions, so they are still there to pass and ack that release, and stop
# after it (the EXIT trap).
stopped() {
  trap - INT TERM
  if [ -n "${sender:-}" ]; then
    kill -TERM "$sender" 2>/dev/null || true
    wait "$sender" 2>/dev/null || true
  fi
  echo
  echo "demo: stopped"
  exit 130
}
trap stopped INT TERM

# send ADDR: play the demo script to ADDR. In the background and waited for,
# so that Ctrl+C runs stopped at once; its exit status is send's (3 if the
# receiver did not acknowledge the final state).
send() {
  "$BIN" send --to "$1" --script testdata/scripts/demo.keys &
  sender=$!
  wait "$sender"
  sender=
}

# wait_for FILE PATTERN: until a line matching PATTERN appears (at most 5 s).
wait_for() {
  for _ in $(seq 100); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "demo: timed out waiting for '$2' in $1" >&2; cat "$1" >&2; return 1
}

# Both ends share a key made for the demo (docs/security.md: the key file).
"$BIN" keygen --out "$work/demo.key"
export KEYRELAY_KEY_FILE="$work/demo.key"
# The receiver's JSON lines go to keys.jsonl and, shown as "KeyH down" or
# "'é' down", to the terminal; that pipeline ignores Ctrl+C and ends when the
# receiver does (it must outlive the sender's last release).
setsid "$BIN" recv --inject log --listen 127.0.0.1:0 2>"$work/recv.err" > >(
  trap '' INT TERM
  tee "$work/keys.jsonl" |
    sed -u -E -e 's/^\{"key":"([^"]+)","action":"([a-z]+)"(,"reason":"([^"]+)")?.*$/   recv> \1 \2 \4/' \
      -e "s/^\\{\"char\":\"(([^\"\\\\]|\\\\.)+)\",\"action\":\"([a-z]+)\"(,\"reason\":\"([^\"]+)\")?.*\$/   recv> '\\1' \\3 \\5/"
) &
recv=$!
pids+=("$recv")
wait_for "$work/recv.err" "listening on"
addr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$work/recv.err" | head -n1)
echo "== receiver listening on $addr; the sender plays testdata/scripts/demo.keys"
send "$addr"
sleep 0.3
clean=$(wc -l <"$work/keys.jsonl") # the clean run's lines; the rest are the impaired run's
echo
echo "== the same script through 'keyrelay impair' at 30 % loss, with delay and reordering"
setsid "$BIN" impair --listen 127.0.0.1:0 --to "$addr" --loss 0.3 --delay 20ms --jitter 5ms --reorder 0.2 --seed 7 2>"$work/impair.err" &
pids+=($!)
wait_for "$work/impair.err" "listening on"
paddr=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$work/impair.err" | head -n1)
send "$paddr"
sleep 0.3
echo
echo "== receiver summary:"
kill -INT "$recv"; wait "$recv" || true
sed 's/^/   /' "$work/recv.err"

# What each run delivered: the receiver's lines without their session id.
head -n "$clean" "$work/keys.jsonl" | sed -E 's/,"session":"[0-9a-f]*"//' >"$work/clean.jsonl"
tail -n +"$((clean + 1))" "$work/keys.jsonl" | sed -E 's/,"session":"[0-9a-f]*"//' >"$work/lossy.jsonl"
events() { grep -c '"action":"\(down\|up\)"' "$1" || true; }
n1=$(events "$work/clean.jsonl")
n2=$(events "$work/lossy.jsonl")
echo
if [ "$n1" -gt 0 ] && cmp -s "$work/clean.jsonl" "$work/lossy.jsonl"; then
  echo "demo: clean link delivered $n1 key events, 30 % loss delivered $n2: identical, in the same order"
else
  echo "demo: clean link delivered $n1 key events, 30 % loss delivered $n2: they DIFFER:"
  diff "$work/clean.jsonl" "$work/lossy.jsonl" | sed 's/^/   /' || true
  exit 1
fi
