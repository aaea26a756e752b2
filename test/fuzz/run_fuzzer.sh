#!/usr/bin/env bash
# Bounded fuzz run for the test suite: copies the committed seed corpus into a work directory (the
# fuzzer adds what it finds there, never to the repository) and fuzzes for N seconds.
# usage: [FUZZ_MAX_LEN=N] run_fuzzer.sh FUZZER SEED_DIR WORK_DIR SECONDS
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3 seconds=$4
mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$seeds"/* "$work/corpus/" 2>/dev/null || true
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-65536}" \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus"
