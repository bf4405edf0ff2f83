#!/usr/bin/env bash
# Runs one test selection N times in a row and prints a tally — fault tests that passed once
# prove little.
#   scripts/test-loop.sh N <vitest args...>      e.g. scripts/test-loop.sh 20 test/integration/stream/stream-crash.test.ts
# Each run's summary line goes to the tally; a failed run's whole output is kept in
# ${VEIL_LOOP_DIR:-/tmp/veil-test-loop}/run-K.log. Exit 1 when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: test-loop.sh N vitest-args...}; shift
dir=${VEIL_LOOP_DIR:-/tmp/veil-test-loop}
mkdir -p "$dir"
ok=0; bad=0
for k in $(seq 1 "$n"); do
  start=$(date +%s)
  scripts/node22 node_modules/vitest/vitest.mjs run "$@" >"$dir/run-$k.log" 2>&1
  rc=$?
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$dir/run-$k.log" | tail -1)
  extra=$(grep -oE '(crash test: |chaos: |aborted input \(|pause: |handover: |serve-failed-start: |bulk erasure[A-Za-z ]*: ).*' "$dir/run-$k.log" | tr '\n' ' ')
  if [ $rc -eq 0 ]; then ok=$((ok + 1)); rm -f "$dir/run-$k.log"; else bad=$((bad + 1)); fi
  echo "run $k: ${summary:-no summary (exit $rc)} ($(( $(date +%s) - start )) s) ${extra}"
done
echo "tally: $ok of $n runs passed, $bad failed"
[ $bad -eq 0 ]
