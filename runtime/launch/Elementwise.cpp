// Elementwise launch geometry (see Elementwise.h).
#include "runtime/launch/Elementwise.h"

#include <algorithm>

namespace glm5rt::launch {

int64_t normGrid(const NormParams &p, int64_t rows) {
  return (rows + p.rowsPerCta - 1) / p.rowsPerCta;
}

ParamList normParamList(const NormParams &p) { return {{"rows_per_cta", p.rowsPerCta}}; }

StatusOr<NormParams> normParamsOf(const glm5::plan::Kernel &k) {
  NormParams p;
  p.threads = k.threads();
  GLM5_ASSIGN_OR_RETURN(int64_t rows, kernelParam(k, "rows_per_cta", 1, 1024));
  p.rowsPerCta = static_cast<int>(rows);
  return p;
}

int64_t cacheAppendGrid(const CacheAppendParams &p, int64_t tokens) {
  return (tokens + p.tokensPerCta - 1) / p.tokensPerCta;
}

ParamList cacheAppendParamList(const CacheAppendParams &p) {
  return {{"tokens_per_cta", p.tokensPerCta}, {"page", p.page}};
}

StatusOr<CacheAppendParams> cacheAppendParamsOf(const glm5::plan::Kernel &k) {
  CacheAppendParams p;
  p.threads = k.threads();
  GLM5_ASSIGN_OR_RETURN(int64_t perCta, kernelParam(k, "tokens_per_cta", 1, 1024));
  GLM5_ASSIGN_OR_RETURN(p.page, kernelParam(k, "page", 1, 4096));
  p.tokensPerCta = static_cast<int>(perCta);
  return p;
}

int64_t pointwiseGrid(int threads, int smCount, int64_t n) {
  const int64_t need = (n + threads - 1) / threads;
  return std::clamp<int64_t>(need, 1, int64_t{8} * smCount);
}

} // namespace glm5rt::launch
