// Quantized-linear launch geometry (see QLinear.h).
#include "runtime/launch/QLinear.h"

#include <algorithm>

namespace glm5rt::launch {

int64_t qlinearSplits(const QLinearParams &p, int smCount, int64_t tiles, int64_t kSteps) {
  // The busiest SM's load for s splits: ceil(CTAs / SMs) CTAs, each of ceil(kSteps / s) steps
  // plus an overhead worth two (ring prologue, x staging, partials and their fixup). Among the
  // split counts that give every SM at least 7.5 warps (fewer leave the product latency-bound:
  // q_a 6144 -> 2048 at 4 warps per SM 7-20% slower), the least load; ties to fewer splits, and
  // only counts whose splits all have the same number of steps (a short last split idles its
  // SM's share). Fitted on the H200 over every mma type, q_a / q_b / kv_a / o, one and eight
  // tokens and 1-16 splits (bench/RESULTS.md 2026-11-30): the old rule (16 warps per SM) took 3
  // splits for q_b, where 1 is 6-29% faster, 12 for q_a (8: 5-23%) and 6 for o, whose 288 CTAs
  // load some SMs with three and others with two (4: up to 8%; Q4_K at eight tokens 43.5 ->
  // 35.2 us with 5).
  const int64_t sms = std::max(smCount, 1);
  const int64_t warps = std::max(p.threads / 32, 1);
  int64_t best = 0, bestLoad = 0;
  bool bestFloor = false;
  for (int64_t s = 1; s <= kSteps; ++s) {
    const int64_t per = (kSteps + s - 1) / s;
    if ((kSteps + per - 1) / per != s)
      continue; // the same splits as a smaller s
    const int64_t load = (tiles * s + sms - 1) / sms * (per + 2);
    const bool floor = 2 * tiles * s * warps >= 15 * sms; // 7.5 warps per SM
    // A count meeting the floor beats every one that does not; then the lower load.
    if (best == 0 || (floor && !bestFloor) || (floor == bestFloor && load < bestLoad)) {
      best = s;
      bestLoad = load;
      bestFloor = floor;
    }
  }
  return std::max<int64_t>(best, 1);
}

namespace {

// A decode grid of `tiles` row tiles over K (N rows in all, which size the partials).
QLinearGrid decodeGrid(const QLinearParams &p, int smCount, int64_t tiles, int64_t N, int64_t K,
                       int64_t forceSplits, QLinearGrid l) {
  const int64_t kSteps = (K + kQLinearKStep - 1) / kQLinearKStep;
  int64_t splits = std::clamp<int64_t>(forceSplits > 0 ? forceSplits
                                                       : qlinearSplits(p, smCount, tiles, kSteps),
                                       1, kSteps);
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

} // namespace

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
  return decodeGrid(p, smCount, (N + p.rowsPerCta - 1) / p.rowsPerCta, N, K, forceSplits, l);
}

QLinearGrid qlinearMultiGrid(const QLinearParams &p, int smCount, const std::vector<int64_t> &N,
                             int64_t K, int64_t forceSplits) {
  QLinearGrid l;
  l.threads = static_cast<unsigned>(p.threads);
  l.smem = static_cast<unsigned>(p.dynamicSmem);
  int64_t tiles = 0, total = 0;
  for (int64_t n : N) {
    tiles += (n + p.rowsPerCta - 1) / p.rowsPerCta;
    total += n;
  }
  return decodeGrid(p, smCount, tiles, total, K, forceSplits, l);
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
