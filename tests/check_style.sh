#!/usr/bin/env bash
# tests/check_style.sh: the house rules a machine can check. Every tracked .c and .h file is
# laid out as .clang-format says (clang-format 14, Debian 12's; another major version lays
# out some lines differently, so the layout check is skipped there, saying so), and every
# commit subject since the rule began (commit afe3db0) is at most 72 characters.
# Exit 0 when both hold, 1 with the offending files or commits listed.
set -uo pipefail
cd "$(dirname "$0")/.."
rc=0
if ! command -v clang-format >/dev/null; then
  echo "check_style: clang-format is not installed (jobs/install-deps.sh installs it)"; rc=1
elif ! clang-format --version | grep -qE 'version 14\.'; then
  echo "check_style: SKIP layout: $(clang-format --version) is not version 14"
else
  bad=$(git ls-files '*.c' '*.h' | while read -r f; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done)
  if [ -n "$bad" ]; then
    echo "check_style: not laid out as .clang-format says (clang-format -i FILE):"
    echo "$bad" | sed 's/^/  /'; rc=1
  fi
fi
since=afe3db0
if git cat-file -e "$since^{commit}" 2>/dev/null; then
  long=$(git log --format='%h %s' "$since..HEAD" | awk '{s=$0; sub(/^[^ ]+ /, "", s)} length(s) > 72')
  if [ -n "$long" ]; then
    echo "check_style: commit subjects over 72 characters:"; echo "$long" | sed 's/^/  /'; rc=1
  fi
else
  echo "check_style: SKIP subjects: commit $since is not in this clone (shallow?)"
fi
[ $rc -eq 0 ] && echo "check_style: ok"
exit $rc
