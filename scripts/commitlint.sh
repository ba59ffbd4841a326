#!/usr/bin/env bash
# make lint's check of commit messages: every commit after BASE (the last
# commit written before the convention was adopted) is written as Go's and
# the kernel's are:
#
#   pkg: imperative phrase, at most 72 characters, no final period
#   <blank line>
#   the body: why, with before/after figures
#
# "pkg" is the package or file the change is about (sender, inject,
# README, Makefile), or several joined by ", " or "/"; "all" for a change
# across the tree. Merge commits are not checked. A checkout without BASE
# (a shallow clone) checks HEAD alone and says so.
set -euo pipefail
BASE=${COMMITLINT_BASE:-5f030d2345b248f135d71806f7d68de2bf779820}
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "commitlint: not a git checkout: nothing to check"
  exit 0
fi
if git cat-file -e "$BASE^{commit}" 2>/dev/null; then
  range="$BASE..HEAD"
else
  echo "commitlint: base $BASE is not in this checkout (shallow?): checking HEAD alone"
  range="--max-count=1 HEAD"
fi
bad=0
while read -r hash; do
  subject=$(git log -1 --format=%s "$hash")
  second=$(git log -1 --format=%B "$hash" | sed -n 2p)
  why=()
  ((${#subject} <= 72)) || why+=("subject is ${#subject} characters (at most 72)")
  [[ $subject =~ ^[A-Za-z0-9_./{}*-]+(,\ ?[A-Za-z0-9_./{}*-]+)*:\ [^\ ] ]] ||
    why+=("subject is not \"pkg: phrase\"")
  [[ $subject != *. ]] || why+=("subject ends in a period")
  [[ -z $second ]] || why+=("no blank line after the subject")
  if ((${#why[@]})); then
    bad=1
    printf '%s %s\n' "${hash:0:12}" "$subject" >&2
    printf '    %s\n' "${why[@]}" >&2
  fi
done < <(git rev-list --no-merges $range)
if ((bad)); then
  echo "commitlint: commit messages above break the convention (scripts/commitlint.sh); reword them with git rebase -i" >&2
  exit 1
fi
