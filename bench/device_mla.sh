#!/usr/bin/env bash
# One device call's worth of sparse-MLA measurements (docs/kernels.md "Sparse MLA decode"),
# over binaries built here (bench/make_bundle.sh puts glm5c-bench-sparse-mla in BUNDLE/bin):
#   1. the PERF.md table for SM120 tiles as the registry compiles them for the device (sm_90
#      code: two CTAs per SM on an H200), each shape next to the gather alone (--gather-probe:
#      the bytes floor of this access pattern), then at SM120's occupancy (--sm120-occupancy:
#      one CTA per SM, SM120's register budget), then the kernel's math alone (--no-gather);
#   2. the split x cluster sweep at the small shapes;
#   3. where a CTA's time goes (--trace: phase stamps of a traced build) at 8 heads, batch
#      1 / 8 / 128, with and without the loads;
#   4. when ncu is there, one shape's stall profile (--skip-checks: the first launch profiled
#      is that shape's).
# Usage: bench/device_mla.sh BUNDLE OUT [H:B to profile, default 8:128]
set -u
B=$1/bin/glm5c-bench-sparse-mla
OUT=$2
SHAPE=${3:-8:128}
mkdir -p "$OUT"
export GLM5C_CACHE_DIR=${GLM5C_CACHE_DIR:-/tmp/glm5c-cache}
{
  "$B" --tiles sm_120a --no-sweep --reps 30 --gather-probe --heads-per-cta 16,8
  "$B" --tiles sm_120a --sm120-occupancy --no-sweep --reps 30 --skip-checks --heads-per-cta 16,8
  "$B" --tiles sm_120a --no-gather --no-sweep --reps 20 --skip-checks
} > "$OUT/mla-tables.txt" 2>&1
"$B" --tiles sm_120a --shapes 8:1,8:8,16:8,64:8,8:32 --reps 20 > "$OUT/mla-sweep.txt" 2>&1
{
  "$B" --tiles sm_120a --trace --no-sweep --reps 10 --skip-checks --heads-per-cta 8 --shapes 8:1,8:8,8:128
  "$B" --tiles sm_120a --trace --no-gather --no-sweep --reps 10 --skip-checks --heads-per-cta 8 \
    --shapes 8:1,8:8,8:128
} > "$OUT/mla-trace.txt" 2>&1
grep -E "^device|^empty|FAILED|^  (tiles|sm_)|gather probe" "$OUT/mla-tables.txt"
grep -E "best splits|FAILED" "$OUT/mla-sweep.txt"
grep -E "^  sm_|trace:|median" "$OUT/mla-trace.txt"
if command -v ncu > /dev/null; then
  M='gpu__time_duration.sum,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed'
  M=$M',lts__t_sector_hit_rate.pct,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'
  ncu --clock-control none -k sparse_mla_decode -c 1 --metrics "$M" \
    "$B" --tiles sm_120a --skip-checks --no-sweep --reps 3 --shapes "$SHAPE" > "$OUT/mla-ncu.txt" 2>&1
  grep -E "gpu__time|inst_executed|dram__|lts__|stalled_(barrier|long|short|wait|membar|mio)" "$OUT/mla-ncu.txt"
fi
exit 0
