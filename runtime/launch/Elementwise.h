// Launch geometry of codegen/kernels/elementwise.cuh: row norms, RoPE, the paged KV-cache
// append and the pointwise ops, from the plan's kernel params (see Params.h) and the problem.
// codegen/registry's normGrid and pointwiseGrid forward here.
#pragma once

#include "runtime/launch/Params.h"

#include <cstdint>

namespace glm5rt::launch {

// Row norms: grid = ceil(rows / rowsPerCta). Plan key: rows_per_cta.
struct NormParams {
  int threads = 0;
  int rowsPerCta = 0;
};
int64_t normGrid(const NormParams &p, int64_t rows);
ParamList normParamList(const NormParams &p);
StatusOr<NormParams> normParamsOf(const glm5::plan::Kernel &kernel);

// RoPE in place: one CTA per token (zero tokens: do not launch); no params.
inline int64_t ropeGrid(int64_t tokens) { return tokens; }

// Paged cache append: grid = ceil(tokens / tokensPerCta); `page` is the cache page size the
// kernel was compiled for (GLM_PAGE), which must equal the plan's kv.page_size. Plan keys:
// tokens_per_cta, page.
struct CacheAppendParams {
  int threads = 0;
  int tokensPerCta = 0;
  int64_t page = 0;
};
int64_t cacheAppendGrid(const CacheAppendParams &p, int64_t tokens);
ParamList cacheAppendParamList(const CacheAppendParams &p);
StatusOr<CacheAppendParams> cacheAppendParamsOf(const glm5::plan::Kernel &kernel);

// Pointwise (swiglu_mul, add), grid-stride: enough CTAs for n values, at most 8 per SM; at
// least 1. Only the kernel's thread count matters (no params).
int64_t pointwiseGrid(int threads, int smCount, int64_t n);

} // namespace glm5rt::launch
