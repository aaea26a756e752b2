// Target facts (docs/kernels.md "Targets"; PERF figures for bandwidth).
#include "codegen/target/Target.h"

namespace glm5c::codegen {

const std::vector<Target> &targets() {
  // RTX PRO 6000 Blackwell: 188 SMs, 99 KB opt-in shared memory per block (101376 B) of at most
  // 100 KB (102400 B) per SM -- its 128 KB L1 array is cache and shared memory together, and the
  // shared carve-out stops at 100 KB, as on sm_86 / sm_89 --, ~1.79 TB/s; mma.sync only (no
  // wgmma, no tcgen05); fp8 mma.sync and, with `a`, block-scaled fp8/fp6/fp4. H100/H200: 132
  // SMs, 227 KB (232448 B) per block, 228 KB per SM.
  static const std::vector<Target> kTargets = {
      {"sm_120a", 120, true, "RTX PRO 6000 Blackwell", 188, 101376, 102400, 1790, true,
       true, true, false, false},
      {"sm_120", 120, false, "RTX PRO 6000 Blackwell", 188, 101376, 102400, 1790, true,
       true, false, false, false},
      {"sm_90a", 90, true, "H200", 132, 232448, 233472, 4230, true, true, false, true, false},
      {"sm_90", 90, false, "H200", 132, 232448, 233472, 4230, true, true, false, false, false},
  };
  return kTargets;
}

const Target *findTarget(const std::string &name) {
  for (const Target &t : targets())
    if (name == t.name)
      return &t;
  return nullptr;
}

std::string targetNames() {
  std::string s;
  for (const Target &t : targets())
    s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

std::string checkEmulation(const Target &tiles, const Target &code) {
  if (&tiles == &code)
    return "";
  if (tiles.wgmma && !code.wgmma)
    return std::string(tiles.name) + " tiles use wgmma, which " + code.name + " lacks";
  if (tiles.blockScaledMma && !code.blockScaledMma)
    return ""; // the block-scaled variants are not selected when emulating (registry rule)
  if (code.computeCapability < 80)
    return std::string(code.name) + " lacks mma.sync bf16, ldmatrix and cp.async";
  return "";
}

} // namespace glm5c::codegen
