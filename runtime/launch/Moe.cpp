// MoE router and routed-expert launch geometry (see Moe.h).
#include "runtime/launch/Moe.h"

#include <algorithm>

namespace glm5rt::launch {

MoeRouterGrid moeRouterGrid(const MoeRouterParams &p, int smCount, int64_t T) {
  MoeRouterGrid l;
  l.gridX = static_cast<unsigned>(T);
  l.threads = static_cast<unsigned>(p.threads);
  l.smem = static_cast<unsigned>(p.dynamicSmem);
  l.logitsBytes = T * p.experts * 4;
  if (T <= 0)
    return l;
  // ~2 waves, at least one round of experts per CTA; then no CTA without experts.
  const int64_t maxSplits =
      (p.experts + kMoeRouterExpertsPerRound - 1) / kMoeRouterExpertsPerRound;
  const int64_t want = (2 * int64_t(smCount) + T - 1) / T;
  int64_t splits = std::clamp<int64_t>(want, 1, maxSplits);
  const int64_t per = (p.experts + splits - 1) / splits;
  splits = (p.experts + per - 1) / per;
  l.splits = static_cast<int>(splits);
  l.gridY = static_cast<unsigned>(splits);
  l.counters = splits > 1 ? T : 0;
  return l;
}

ParamList moeRouterParamList(const MoeRouterParams &p) { return {{"experts", p.experts}}; }

StatusOr<MoeRouterParams> moeRouterParamsOf(const glm5::plan::Kernel &k) {
  MoeRouterParams p;
  p.threads = k.threads();
  p.dynamicSmem = k.dynamic_smem();
  GLM5_ASSIGN_OR_RETURN(p.experts, kernelParam(k, "experts", 1, 1 << 16));
  return p;
}

MoeFfnGrid moeFfnGrid(const MoeFfnParams &p, int64_t T) {
  MoeFfnGrid l;
  l.threads = static_cast<unsigned>(p.threads);
  l.smem = static_cast<unsigned>(p.dynamicSmem);
  l.pairs = std::max<int64_t>(T, 0) * p.topk;
  l.hBytes = l.pairs * p.ffn * (p.actF32 ? 4 : 2);
  const int64_t rows = p.gateUp ? p.ffn : p.hidden;
  l.gridX = static_cast<unsigned>((rows + p.outRows - 1) / p.outRows);
  // Tiles: sum over active experts of ceil(n_e / M) <= (P + A (M - 1)) / M.
  const int64_t active = std::min(p.experts, l.pairs);
  l.gridY = static_cast<unsigned>((l.pairs + active * (p.tileM - 1) + p.tileM - 1) / p.tileM);
  return l;
}

int64_t moeDecodeSplits(int64_t tiles, int64_t kSteps, int64_t wave) {
  int64_t best = 1;
  for (int64_t s = 2; s <= kSteps; ++s) {
    const int64_t per = (kSteps + s - 1) / s;
    if ((kSteps + per - 1) / per == s && tiles * s <= wave)
      best = s; // s distinct splits of `per` steps (the last no shorter than a step)
  }
  return best;
}

MoeDecodeGrid moeDecodeGrid(const QLinearParams &p, bool gateUp, int smCount, int64_t pairs,
                            int64_t activePairs, int64_t N, int64_t K, int ctasPerSm,
                            int64_t forceSplits) {
  MoeDecodeGrid l;
  const int64_t rows = std::max(p.rowsPerCta, 1);
  const int64_t blocks = (N + rows - 1) / rows;
  // The split of one product whose row tiles are the active pairs' row blocks.
  const int64_t active = std::max<int64_t>(activePairs, 1);
  if (forceSplits <= 0 && ctasPerSm > 0)
    forceSplits = moeDecodeSplits(blocks * active, (K + kQLinearKStep - 1) / kQLinearKStep,
                                  int64_t(std::max(smCount, 1)) * ctasPerSm);
  const QLinearGrid q = qlinearGrid(p, smCount, 1, blocks * rows * active, K, forceSplits);
  l.threads = q.threads;
  l.smem = q.smem;
  l.gridX = static_cast<unsigned>(blocks);
  l.gridY = static_cast<unsigned>(std::max<int64_t>(pairs, 0));
  l.gridZ = static_cast<unsigned>(q.splits);
  l.kPerSplit = q.kPerSplit;
  if (q.splits > 1) {
    l.workspaceBytes = int64_t(q.splits) * pairs * (gateUp ? 2 : 1) * N * 4;
    l.counters = blocks * pairs;
  }
  return l;
}

ParamList moeFfnParamList(const MoeFfnParams &p) {
  return {{"phase", p.gateUp ? 0 : 1}, {"act_f32", p.actF32 ? 1 : 0}, {"experts", p.experts},
          {"topk", p.topk},           {"hidden", p.hidden},          {"ffn", p.ffn},
          {"tile_m", p.tileM},        {"out_rows", p.outRows}};
}

StatusOr<MoeFfnParams> moeFfnParamsOf(const glm5::plan::Kernel &k) {
  MoeFfnParams p;
  p.threads = k.threads();
  p.dynamicSmem = k.dynamic_smem();
  GLM5_ASSIGN_OR_RETURN(int64_t phase, kernelParam(k, "phase", 0, 1));
  GLM5_ASSIGN_OR_RETURN(int64_t f32, kernelParam(k, "act_f32", 0, 1));
  GLM5_ASSIGN_OR_RETURN(p.experts, kernelParam(k, "experts", 1, 1 << 16));
  GLM5_ASSIGN_OR_RETURN(p.topk, kernelParam(k, "topk", 1, p.experts));
  GLM5_ASSIGN_OR_RETURN(p.hidden, kernelParam(k, "hidden", 1, 1 << 20));
  GLM5_ASSIGN_OR_RETURN(p.ffn, kernelParam(k, "ffn", 1, 1 << 20));
  GLM5_ASSIGN_OR_RETURN(int64_t tileM, kernelParam(k, "tile_m", 1, 1024));
  GLM5_ASSIGN_OR_RETURN(int64_t outRows, kernelParam(k, "out_rows", 1, 1 << 20));
  p.gateUp = phase == 0;
  p.actF32 = f32 != 0;
  p.tileM = static_cast<int>(tileM);
  p.outRows = static_cast<int>(outRows);
  return p;
}

} // namespace glm5rt::launch
