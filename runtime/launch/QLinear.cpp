// Quantized-linear launch geometry (see QLinear.h).
#include "runtime/launch/QLinear.h"

#include <algorithm>

namespace glm5rt::launch {

QLinearGrid qlinearGrid(const QLinearParams &p, int smCount, int64_t T, int64_t N, int64_t K,
                        int64_t forceSplits) {
  QLinearGrid l;
  l.threads = static_cast<unsigned>(p.threads);
  l.smem = static_cast<unsigned>(p.dynamicSmem);
  if (p.kind == QLinearKind::kEmbed) {
    l.gridX = static_cast<unsigned>(T);
    return l;
  }
  if (p.kind == QLinearKind::kPrefill) {
    l.gridX = static_cast<unsigned>((N + p.tileN - 1) / p.tileN);
    l.gridY = static_cast<unsigned>((T + p.tileM - 1) / p.tileM);
    return l;
  }
  const int64_t tiles = (N + p.rowsPerCta - 1) / p.rowsPerCta;
  const int64_t kSteps = (K + kQLinearKStep - 1) / kQLinearKStep;
  // Split K until the grid can keep 16 warps on every SM (4 CTAs of 128 threads): the product
  // is bound by the bytes in flight, and a row tile's warps alone stream too few of them. Two
  // waves (half of this) left o_proj and q_a at 20-45% of copy bandwidth on the H200.
  const int64_t ctasPerSm = std::max<int64_t>(1, 512 / std::max(p.threads, 1));
  const int64_t want = (ctasPerSm * smCount + tiles - 1) / tiles;
  int64_t splits = std::clamp<int64_t>(forceSplits > 0 ? forceSplits : want, 1, kSteps);
  const int64_t perSplit = (kSteps + splits - 1) / splits * kQLinearKStep;
  splits = (K + perSplit - 1) / perSplit;
  l.gridX = static_cast<unsigned>(tiles);
  l.gridY = static_cast<unsigned>(splits);
  l.splits = static_cast<int>(splits);
  l.kPerSplit = static_cast<int>(perSplit);
  if (splits > 1) {
    l.workspaceBytes = splits * int64_t(p.tokens) * N * 4;
    l.counters = tiles;
  }
  return l;
}

ParamList qlinearParamList(const QLinearParams &p) {
  ParamList l = {{"kind", static_cast<int64_t>(p.kind)}};
  if (p.kind == QLinearKind::kDecode) {
    l.push_back({"tokens", p.tokens});
    l.push_back({"rows_per_cta", p.rowsPerCta});
  } else if (p.kind == QLinearKind::kPrefill) {
    l.push_back({"tile_m", p.tileM});
    l.push_back({"tile_n", p.tileN});
  }
  return l;
}

StatusOr<QLinearParams> qlinearParamsOf(const glm5::plan::Kernel &k) {
  QLinearParams p;
  p.threads = k.threads();
  p.dynamicSmem = k.dynamic_smem();
  GLM5_ASSIGN_OR_RETURN(int64_t kind, kernelParam(k, "kind", 0, 2));
  p.kind = static_cast<QLinearKind>(kind);
  if (p.kind == QLinearKind::kDecode) {
    GLM5_ASSIGN_OR_RETURN(int64_t tokens, kernelParam(k, "tokens", 1, 64));
    GLM5_ASSIGN_OR_RETURN(int64_t rows, kernelParam(k, "rows_per_cta", 1, 1 << 16));
    p.tokens = static_cast<int>(tokens);
    p.rowsPerCta = static_cast<int>(rows);
  } else if (p.kind == QLinearKind::kPrefill) {
    GLM5_ASSIGN_OR_RETURN(int64_t m, kernelParam(k, "tile_m", 1, 1024));
    GLM5_ASSIGN_OR_RETURN(int64_t n, kernelParam(k, "tile_n", 1, 1024));
    p.tileM = static_cast<int>(m);
    p.tileN = static_cast<int>(n);
  }
  return p;
}

} // namespace glm5rt::launch
