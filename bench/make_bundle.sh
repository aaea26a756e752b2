#!/usr/bin/env bash
# Builds the bundle the device scripts run (bench/device_check.sh, bench/device_fidelity.sh):
# the runtime binaries and a plan for every fixture preset x quant mix x activation dtype x tile
# target (sm_90, and sm_120a emulated on sm_90). The GGUFs are not carried: glm5-gguf rewrites
# the same bytes on the device (tiny with seed 1, the others with seed 3).
# Usage: bench/make_bundle.sh BUILD_DIR BUNDLE_DIR [PRESETS]
set -eu
BUILD=$1
B=$2
PRESETS=${3:-"tiny small narrow"}
mkdir -p "$B/bin"
cp "$BUILD"/bin/glm5-run "$BUILD"/bin/glm5c-gpu-tests "$BUILD"/bin/glm5-gguf "$BUILD"/bin/glm5c-bench-* "$B/bin/"
tmp=$(mktemp -d)
for preset in $PRESETS; do
  seed=3
  [ "$preset" = tiny ] && seed=1
  for mix in f32 bf16 mixed; do
    "$BUILD"/bin/glm5-gguf make --preset "$preset" --seed $seed --quant-mix $mix -o "$tmp/$preset-$mix.gguf" > /dev/null
    act=bf16
    [ $mix = f32 ] && act=f32
    for tiles in sm_90 sm_120a; do
      "$BUILD"/bin/glm5c compile "$tmp/$preset-$mix.gguf" --target $tiles --run-on sm_90 \
        --activation-dtype $act -o "$B/$preset-$mix-$act-$tiles.plan" 2> /dev/null
    done
    rm -f "$tmp/$preset-$mix.gguf"
  done
done
rmdir "$tmp"
du -sh "$B"
