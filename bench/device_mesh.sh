#!/usr/bin/env bash
# Sharded plans on several GPUs (docs/runtime.md "Several GPUs"), one device call on a machine
# with 2 or more GPUs: for every plan of the bundle named <stem>.tp1.plan / <stem>.tp2.plan,
#   - the tp2 plan on 2 GPUs (a process per rank, NCCL) against the tp1 plan on 1 GPU, and each
#     against the same plan on the host backend: relative error of the logits per position, top-1;
#   - generation tok/s of both (the width slice is the benchmark: GLM-5's real widths).
# The GGUFs are regenerated here (glm5-gguf writes the same bytes everywhere; the plans'
# fingerprints check it): tiny with seed 1, the others with seed 3, width with seed 1.
# Usage: bench/device_mesh.sh BUNDLE OUT   (bench/make_mesh_bundle.sh makes the bundle)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
B=$1
OUT=$2
mkdir -p "$OUT"
cd "$B"
# NVLink multicast stays off (the machines' rule); NCCL comes from PyTorch's wheel when the
# loader does not find it.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -z "${GLM5_NCCL_LIBRARY:-}" ]; then
  lib=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2> /dev/null)
  [ -f "$lib" ] || lib=$(find / -name 'libnccl.so.2*' -not -path '/proc/*' 2> /dev/null | head -1)
  export GLM5_NCCL_LIBRARY=$lib
fi
echo "nccl library: $GLM5_NCCL_LIBRARY"
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
nvidia-smi topo -m 2>&1 | head -4

cmp_logits() { # A.npy B.npy label: worst per-position relative error, top-1 agreement
  python3 - "$1" "$2" "$3" << 'EOF'
import sys
import numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
err = np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)
same = int((a.argmax(1) == b.argmax(1)).sum())
print(f"  {sys.argv[3]}: {a.shape[0]} positions, worst rel err {err.max():.3g} (median {np.median(err):.3g}), top-1 {same}/{a.shape[0]}")
EOF
}

toks() { python3 -c "import random; r=random.Random($1); print(','.join(str(r.randrange(300, 1000)) for _ in range($2)))"; }
for p1 in *.tp1.plan; do
  stem=${p1%.tp1.plan}
  p2=$stem.tp2.plan
  preset=${stem%%-*}
  rest=${stem#*-}
  mix=${rest%%-*}
  seed=3
  case $preset in tiny | width) seed=1 ;; esac
  gguf=$preset-$mix.gguf
  if [ ! -f "$gguf" ]; then
    if [ "$preset" = width ]; then
      ./bin/glm5-gguf make --preset width --seed 1 -o "$gguf" > /dev/null
    else
      ./bin/glm5-gguf make --preset "$preset" --seed $seed --quant-mix "$mix" -o "$gguf" > /dev/null
    fi
  fi
  echo "== $stem"
  case $preset in tiny) n=64 ;; small) n=128 ;; *) n=48 ;; esac
  T=$(toks 7 $n)
  ctx=()
  [ "$preset" = width ] && ctx=(--ctx 4096)
  ./bin/glm5-run score "$p1" --weights "$gguf" --tokens "$T" --prefill 20 "${ctx[@]}" --out "$OUT/$stem.tp1.npy" > "$OUT/$stem.tp1.log" 2>&1 || echo "  tp1 failed: $(tail -2 "$OUT/$stem.tp1.log")"
  ./bin/glm5-run score "$p2" --weights "$gguf" --tokens "$T" --prefill 20 "${ctx[@]}" --out "$OUT/$stem.tp2.npy" > "$OUT/$stem.tp2.log" 2>&1 || echo "  tp2 failed: $(tail -4 "$OUT/$stem.tp2.log")"
  [ -f "$OUT/$stem.tp2.npy" ] && [ -f "$OUT/$stem.tp1.npy" ] && cmp_logits "$OUT/$stem.tp2.npy" "$OUT/$stem.tp1.npy" "2 GPUs (tp2) vs 1 GPU (tp1)"
  if [ "$preset" != width ]; then
    # The same plans on the host backend (tp2: the host mesh): with bf16 activations the
    # rounding points of a sharded plan differ from one rank's, so tp2 against tp1 can flip
    # near-tied discrete choices; each GPU run against the host running the same plan cannot.
    for t in tp1 tp2; do
      ./bin/glm5-run score "$stem.$t.plan" --device host --weights "$gguf" --tokens "$T" --prefill 20 --out "$OUT/$stem.$t.host.npy" > /dev/null 2>&1
      [ -f "$OUT/$stem.$t.npy" ] && cmp_logits "$OUT/$stem.$t.npy" "$OUT/$stem.$t.host.npy" "$t on GPUs vs $t on the host"
    done
    cmp_logits "$OUT/$stem.tp2.host.npy" "$OUT/$stem.tp1.host.npy" "host: tp2 vs tp1"
  fi
  for p in "$p1" "$p2"; do
    echo "  generate $p: $(./bin/glm5-run "$p" --weights "$gguf" -p 'The lighthouse keeper' -n 64 "${ctx[@]}" 2>&1 > /dev/null | grep -a 'tok/s\|error' | tail -1)"
  done
done
exit 0
