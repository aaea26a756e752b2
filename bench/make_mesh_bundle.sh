#!/usr/bin/env bash
# Builds the bundle bench/device_mesh.sh runs: the runtime binaries and, for a few fixtures, a
# plan for one rank and one for two ranks (--tp 2 --ep 2), named <stem>.tp1.plan / .tp2.plan.
# The width slice (GLM-5's real widths, 2 layers) is included when WIDTH_GGUF names its GGUF
# (glm5-gguf make --preset width --seed 1; 8.7 GB, so it is made once and not carried).
# Usage: bench/make_mesh_bundle.sh BUILD_DIR BUNDLE_DIR
set -eu
BUILD=$1
B=$2
mkdir -p "$B/bin"
cp "$BUILD"/bin/glm5-run "$BUILD"/bin/glm5-gguf "$B/bin/"
tmp=$(mktemp -d)
plans() { # GGUF STEM TILES ACT
  for tp in 1 2; do
    "$BUILD"/bin/glm5c compile "$1" --target "$3" --run-on sm_90 --activation-dtype "$4" \
      --tp $tp --ep $tp -o "$B/$2.tp$tp.plan" 2> "$B/compile.log" || {
      echo "$2 --tp $tp: $(tail -1 "$B/compile.log")"
      rm -f "$B/$2.tp1.plan"
    }
  done
}
for spec in "tiny 1 f32 f32 sm_90" "tiny 1 mixed bf16 sm_120a" "small 3 bf16 bf16 sm_90" \
  "small 3 mixed bf16 sm_120a"; do
  set -- $spec
  "$BUILD"/bin/glm5-gguf make --preset "$1" --seed "$2" --quant-mix "$3" -o "$tmp/g.gguf" > /dev/null
  plans "$tmp/g.gguf" "$1-$3-$4-$5" "$5" "$4"
done
rm -rf "$tmp"
if [ -n "${WIDTH_GGUF:-}" ]; then
  plans "$WIDTH_GGUF" width-mixed-bf16-sm_120a sm_120a bf16
fi
du -sh "$B"
