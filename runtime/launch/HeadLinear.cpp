// Per-head product and slice launch geometry (see HeadLinear.h).
#include "runtime/launch/HeadLinear.h"

#include <algorithm>

namespace glm5rt::launch {

HeadLinearGrid headLinearGrid(const HeadLinearParams &p, int smCount, int64_t T) {
  HeadLinearGrid l;
  l.threads = static_cast<unsigned>(p.threads);
  l.smem = static_cast<unsigned>(p.dynamicSmem);
  const int64_t gx = (p.b + p.rowsPerCta - 1) / p.rowsPerCta;
  l.gridX = static_cast<unsigned>(gx);
  l.gridY = static_cast<unsigned>(p.heads);
  const int64_t chunks = (std::max<int64_t>(T, 0) + p.tokensPerChunk - 1) / p.tokensPerChunk;
  const int64_t want = (16 * int64_t(smCount) + gx * p.heads - 1) / (gx * p.heads);
  l.gridZ = static_cast<unsigned>(std::clamp<int64_t>(std::min(chunks, want), 1, 65535));
  return l;
}

ParamList headLinearParamList(const HeadLinearParams &p) {
  return {{"b", p.b},
          {"heads", p.heads},
          {"rows_per_cta", p.rowsPerCta},
          {"tokens_per_chunk", p.tokensPerChunk}};
}

StatusOr<HeadLinearParams> headLinearParamsOf(const glm5::plan::Kernel &k) {
  HeadLinearParams p;
  p.threads = k.threads();
  p.dynamicSmem = k.dynamic_smem();
  GLM5_ASSIGN_OR_RETURN(p.b, kernelParam(k, "b", 1, int64_t(1) << 30));
  GLM5_ASSIGN_OR_RETURN(p.heads, kernelParam(k, "heads", 1, 65535));
  GLM5_ASSIGN_OR_RETURN(int64_t rows, kernelParam(k, "rows_per_cta", 1, 1 << 16));
  GLM5_ASSIGN_OR_RETURN(int64_t chunk, kernelParam(k, "tokens_per_chunk", 1, 1024));
  p.rowsPerCta = static_cast<int>(rows);
  p.tokensPerChunk = static_cast<int>(chunk);
  return p;
}

SliceGrid sliceGrid(const SliceParams &p, int smCount, int64_t rows, int64_t widthIn,
                    int64_t widthOut, int64_t offset) {
  SliceGrid l;
  l.threads = static_cast<unsigned>(p.threads);
  const int64_t v = p.actF32 ? 4 : 8; // values per 16-byte vector
  const bool vec = offset % v == 0 && widthIn % v == 0 && widthOut % v == 0;
  const int64_t units = std::max<int64_t>(rows, 0) * (vec ? widthOut / v : widthOut);
  const int64_t ctas = (units + p.threads - 1) / p.threads;
  l.gridX = static_cast<unsigned>(std::clamp<int64_t>(ctas, 1, 8 * int64_t(smCount)));
  return l;
}

ParamList sliceParamList(const SliceParams &p) { return {{"act_f32", p.actF32 ? 1 : 0}}; }

StatusOr<SliceParams> sliceParamsOf(const glm5::plan::Kernel &k) {
  SliceParams p;
  p.threads = k.threads();
  GLM5_ASSIGN_OR_RETURN(int64_t f32, kernelParam(k, "act_f32", 0, 1));
  p.actF32 = f32 != 0;
  return p;
}

} // namespace glm5rt::launch
