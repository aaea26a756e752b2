// Launch geometry of codegen/kernels/head_linear.cuh: the per-head product (glm.head_linear) and
// the slice copy (glm.slice), from the plan's kernel params (see Params.h) and the problem.
// codegen/registry's headLinearLaunch and sliceLaunch forward here.
#pragma once

#include "runtime/launch/Params.h"

#include <cstdint>

namespace glm5rt::launch {

// Plan keys in brackets.
struct HeadLinearParams {
  int threads = 0;
  int64_t dynamicSmem = 0;
  int64_t b = 0;          // [b] output rows per head
  int64_t heads = 0;      // [heads]
  int rowsPerCta = 0;     // [rows_per_cta] rows of one head per CTA (the grid's x unit)
  int tokensPerChunk = 0; // [tokens_per_chunk] tokens one CTA accumulates together
};

struct HeadLinearGrid {
  unsigned gridX = 1, gridY = 1, gridZ = 1, threads = 0, smem = 0;
};

// x = ceil(b / rowsPerCta), y = heads, z = token chunks capped near 16 CTAs per SM (a CTA loops
// over chunks z, z + gridZ, ...; any z >= 1 is correct). T = 0 gives gridZ = 1.
HeadLinearGrid headLinearGrid(const HeadLinearParams &p, int smCount, int64_t T);
ParamList headLinearParamList(const HeadLinearParams &p);
StatusOr<HeadLinearParams> headLinearParamsOf(const glm5::plan::Kernel &kernel);

struct SliceParams {
  int threads = 0;
  bool actF32 = false; // [act_f32] values per 16-byte vector: 4 (f32) or 8 (bf16)
};

struct SliceGrid {
  unsigned gridX = 1, threads = 0;
};

// Enough CTAs for one vector (or value, when the shape does not vectorize) per thread, at most
// 8 per SM (the kernel's grid-stride loop covers the rest); at least 1.
SliceGrid sliceGrid(const SliceParams &p, int smCount, int64_t rows, int64_t widthIn,
                    int64_t widthOut, int64_t offset);
ParamList sliceParamList(const SliceParams &p);
StatusOr<SliceParams> sliceParamsOf(const glm5::plan::Kernel &kernel);

} // namespace glm5rt::launch
