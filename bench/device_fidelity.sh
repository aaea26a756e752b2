#!/usr/bin/env bash
# Fidelity against transformers (test/fidelity/fidelity.py) for every plan of a bundle made by
# bench/make_bundle.sh: each plan on the cuda backend with a short prefill (4 tokens, the rest
# decode) and a long one (2 x index_topk), and the host backend once per GGUF. Bounds: 1e-4 for
# F32 weights with f32 activations, 2e-2 with top-1 agreement beyond twice that margin for bf16
# activations (bf16 and mixed weights; the reference reads the same dequantized values), the
# latter against transformers replaying glm5-run's indexer selections and routed experts, each of
# which must be a top set of transformers' own scores up to 4e-2 of their spread. A negative
# control per preset: the bf16 criterion with the reference's RoPE pairing broken must fail.
# Usage: bench/device_fidelity.sh BUNDLE OUT [PRESETS] [MIXES] [TILES] [PREFILLS]
set -u
B=$(cd "$1" && pwd)
OUT=$2
PRESETS=${3:-"tiny small narrow"}
MIXES=${4:-"f32 bf16 mixed"}
TILES=${5:-"sm_90 sm_120a"}
PREFILLS=${6:-"4 long"}
ROOT=$(pwd)
mkdir -p "$OUT"
cd "$B"
summary="$OUT/fidelity-summary.txt"
: > "$summary"
run() { # name, args...
  local name=$1
  shift
  python3 "$ROOT/test/fidelity/fidelity.py" "$@" --out-dir "/tmp/fid-$name" > "/tmp/fid-$name.log" 2>&1
  local rc=$?
  local verdict
  verdict=$(grep -E "^FIDELITY" "/tmp/fid-$name.log" | tail -1)
  local seg
  seg=$(grep -E "^ *(prefill|decode), |overall:|glm5-run vs transformers|free-running|indexer selections:|routed experts:|EXPECTED|NEGATIVE" "/tmp/fid-$name.log" | tr -s " " | tr "\n" ";")
  echo "$name rc=$rc $verdict | $seg" | tee -a "$summary"
}
for preset in $PRESETS; do
  seed=3
  [ "$preset" = tiny ] && seed=1
  for mix in $MIXES; do
    gguf=$preset-$mix.gguf
    [ -f "$gguf" ] || ./bin/glm5-gguf make --preset "$preset" --seed $seed --quant-mix $mix -o "$gguf" > /dev/null 2>&1
    ref=$gguf
    if [ $mix != f32 ]; then
      ref=$preset-$mix-f32copy.gguf
      [ -f "$ref" ] || ./bin/glm5-gguf dequant "$gguf" -o "$ref" > /dev/null 2>&1
    fi
    act=bf16
    bound="--bound 2e-2 --top1 --replay-decisions"
    if [ $mix = f32 ]; then act=f32; bound="--bound 1e-4 --top1"; fi
    indep=--no-independent
    [ "$preset" = tiny ] && [ $mix = f32 ] && indep=
    for tiles in $TILES; do
      plan=$preset-$mix-$act-$tiles.plan
      for P in $PREFILLS; do
        pf=
        [ $P = 4 ] && pf="--prefill 4"
        run "$preset-$mix-$act-$tiles-cuda-p$P" --gguf "$ref" --run-gguf "$gguf" --plan "$plan" \
          --glm5-run ./bin/glm5-run --run-device cuda $bound $pf $indep
      done
    done
    if [ $mix = mixed ]; then
      run "$preset-$mix-$act-neox-negative" --gguf "$ref" --run-gguf "$gguf" --plan "$preset-$mix-$act-sm_90.plan" \
        --glm5-run ./bin/glm5-run --run-device cuda $bound --no-independent --ref-neox --expect-failure
    fi
    run "$preset-$mix-$act-host-plong" --gguf "$ref" --run-gguf "$gguf" --plan "$preset-$mix-$act-sm_90.plan" \
      --glm5-run ./bin/glm5-run --run-device host $bound --no-independent
  done
done
cp /tmp/fid-tiny-f32-f32-sm_90-cuda-plong.log "$OUT/" 2>/dev/null
cp /tmp/fid-small-mixed-bf16-sm_120a-cuda-p4.log "$OUT/" 2>/dev/null
exit 0
