#!/usr/bin/env bash
# One device call's worth of GPU checks over a bundle built here (see docs/runtime.md "Checking
# on a GPU"): the kernel tests, then `glm5-run --check` (cuda against host, step by step) and
# generation for every plan in the bundle. Usage: bench/device_check.sh BUNDLE OUT
#   BUNDLE: bin/ (glm5-run, glm5c-gpu-tests, glm5-gguf) and *.plan named
#           <preset>-<quant mix>-<activation dtype>-<tiles>.plan (made by bench/make_bundle.sh)
#   OUT:    where logs go
set -u
B=$1
OUT=$2
mkdir -p "$OUT"
cd "$B"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "${SKIP_KERNEL_TESTS:-0}" != 1 ]; then
  GLM5C_CACHE_DIR=/tmp/glm5c-cache ./bin/glm5c-gpu-tests > "$OUT/gpu-tests.log" 2>&1
  grep FAILED "$OUT/gpu-tests.log" | head -20
fi
# The GGUFs are regenerated here: glm5-gguf writes identical bytes on every machine, and the
# plans' fingerprints check it.
for plan in *.plan; do
  stem=${plan%.plan}
  preset=${stem%%-*}
  rest=${stem#*-}
  mix=${rest%%-*}
  seed=1
  [ "$preset" != tiny ] && seed=3
  gguf=$preset-$mix.gguf
  [ -f "$gguf" ] || ./bin/glm5-gguf make --preset "$preset" --seed $seed --quant-mix "$mix" -o "$gguf" > /dev/null
done
# A token sequence 4x index_topk long: 20 tokens of prefill, the rest decode; then a long prefill.
toks() { python3 -c "import random; r=random.Random($1); print(','.join(str(r.randrange(300, 1000)) for _ in range($2)))"; }
for plan in *.plan; do
  stem=${plan%.plan}
  preset=${stem%%-*}
  rest=${stem#*-}
  mix=${rest%%-*}
  case $preset in tiny) k=16;; small) k=32;; narrow) k=24;; esac
  n=$((4 * k))
  T=$(toks 7 $n)
  for P in 20 $((3 * k)); do
    ./bin/glm5-run score "$plan" --weights "$preset-$mix.gguf" --tokens "$T" --prefill $P --check \
      > "$OUT/check-$stem-p$P.log" 2>&1
    rc=$?
    echo "check $stem prefill $P: rc=$rc"
    grep -E "largest|beyond|every step|^  (prefill|decode) call" "$OUT/check-$stem-p$P.log" | head -4
  done
  ./bin/glm5-run "$plan" --weights "$preset-$mix.gguf" -p "The lighthouse keeper" -n 64 \
    > "$OUT/gen-$stem.log" 2>&1
  echo "generate $stem: rc=$? $(grep 'tok/s' "$OUT/gen-$stem.log")"
done
[ -f "$OUT/gpu-tests.log" ] && echo "kernel tests: $(tail -1 "$OUT/gpu-tests.log")"
exit 0
