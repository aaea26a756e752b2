#!/usr/bin/env bash
# Decode with and without the CUDA graph (bench/RESULTS.md): the logits must be the same, the
# graph faster. Tiny fixture plans of a bundle (bench/make_bundle.sh) plus, when the bundle has
# width-mixed-bf16-sm_120a.plan, the width preset (GLM-5's real widths, 2 layers).
# Usage: bench/device_graph.sh BUNDLE
set -u
cd "$1"
./bin/glm5-gguf make --preset tiny --seed 1 --quant-mix mixed -o tiny-mixed.gguf > /dev/null 2>&1
[ -f width-mixed-bf16-sm_120a.plan ] && ./bin/glm5-gguf make --preset width --seed 1 -o width.gguf > /dev/null 2>&1 &
T=$(python3 -c "import random; r=random.Random(7); print(','.join(str(r.randrange(300, 1000)) for _ in range(64)))")
for plan in tiny-mixed-bf16-sm_90 tiny-mixed-bf16-sm_120a; do
  ./bin/glm5-run score $plan.plan --weights tiny-mixed.gguf --tokens "$T" --prefill 20 --out /tmp/g.npy > /dev/null 2>&1
  ./bin/glm5-run score $plan.plan --weights tiny-mixed.gguf --tokens "$T" --prefill 20 --out /tmp/n.npy --no-graph > /dev/null 2>&1
  python3 -c "import numpy as np; a=np.load('/tmp/g.npy'); b=np.load('/tmp/n.npy'); print('$plan graph vs no-graph logits: max abs diff', float(abs(a-b).max()), a.shape)"
  for g in "" --no-graph; do
    echo "$plan ${g:-graph}: $(./bin/glm5-run $plan.plan --weights tiny-mixed.gguf -p 'The lighthouse keeper' -n 256 $g 2>&1 >/dev/null | grep -a tok/s)"
  done
done
wait
if [ -f width.gguf ]; then
  for g in "" --no-graph; do
    echo "width ${g:-graph}: $(./bin/glm5-run width-mixed-bf16-sm_120a.plan --weights width.gguf -p 'The lighthouse keeper' -n 64 --ctx 4096 $g 2>&1 >/dev/null | grep -a 'tok/s\|error\|cuda on')"
  done
fi
