// Registry entries of codegen/kernels/head_linear.cuh: the per-head product over a stacked GGUF
// weight (glm.head_linear, transpose = false) and the slice copy (glm.slice); constraints, launch
// geometry and instantiation sources.
#pragma once

#include "codegen/target/Target.h"
#include "runtime/launch/HeadLinear.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>

namespace glm5c::codegen {

// ---- head_linear ----------------------------------------------------------------------------

struct HeadLinearConfig {
  std::string variant; // "head_linear_q8_0_bf16_a192_l2_tc8_r64" (+ "_shared")
  std::string entry = "head_linear";
  uint32_t type = 0;        // ggml type id of the weight {a, b, heads}
  bool actF32 = false;      // activations f32 (validation) instead of bf16
  bool sharedInput = false; // x [T, a] read by every head (GLM_SHARED_INPUT)
  int64_t a = 0, b = 0, heads = 0;
  int lanesPerRow = 0;     // GLM_HL_LPR: lanes sharing one weight row
  int tokensPerChunk = 0;  // GLM_HL_TC: tokens staged and accumulated together
  int warps = 0;           // GLM_HL_WARPS
  int threads = 0;         // warps * 32
  int rowsPerCta = 0;      // GLM_HL_ROWS: rows of one head per CTA (the grid's x unit)
  int64_t dynamicSmem = 0; // bytes; equals the template's GLM_HL_SMEM_BYTES
};

// Launch geometry: the runtime's definition (runtime/launch/HeadLinear.h).
using HeadLinearLaunch = glm5rt::launch::HeadLinearGrid;

// Picks the head_linear instantiation for y[t, h] = W[h] x[t, h] (a -> b) with W {a, b, heads}
// of ggml type `type`. The token count is a kernel argument (any T >= 0): T <= tokensPerChunk
// reads every weight row once, larger T loops over chunks. Rejected: a type the device
// dequantizer lacks, a not a positive multiple of 32 and of the type's block, b outside
// [1, 2^30], heads outside [1, 65535] (the grid's y), shared memory beyond the target's (the
// status then lists each candidate and why).
//
// Kernel: head_linear(const uint8 *w, const glm_act *x, glm_act *y, int T, int b, int H), w the
// tensor's GGUF bytes (16-byte aligned), x [T, H, a] (sharedInput: [T, a]), y [T, H, b].
glm5rt::StatusOr<HeadLinearConfig> selectHeadLinear(const Target &tiles, uint32_t type, int64_t a,
                                                    int64_t b, int64_t heads, bool sharedInput,
                                                    bool actF32);

// Dynamic shared memory of head_linear for a and tokensPerChunk (mirrors the template).
int64_t headLinearSmem(int64_t a, int tokensPerChunk);

// Grid for T tokens on `device`: x = ceil(b / rowsPerCta), y = heads, z = token chunks, capped
// so the grid stays near 16 CTAs per SM (each CTA then loops over chunks z, z + gridZ, ...;
// any z >= 1 is correct). T = 0 gives gridZ = 1 (the kernel writes nothing).
HeadLinearLaunch headLinearLaunch(const HeadLinearConfig &cfg, const Target &device, int64_t T);
// The launch parameters the plan records for `cfg` (Kernel.params).
glm5rt::launch::HeadLinearParams headLinearLaunchParams(const HeadLinearConfig &cfg);

// The translation unit NVRTC compiles for this configuration (constants, then the template).
std::string headLinearSource(const HeadLinearConfig &cfg);

// ---- slice_copy -----------------------------------------------------------------------------

struct SliceConfig {
  std::string variant; // "slice_copy_bf16"
  std::string entry = "slice_copy";
  bool actF32 = false;
  int threads = 256;
  int64_t dynamicSmem = 0;
};

using SliceLaunch = glm5rt::launch::SliceGrid;

// Kernel: slice_copy(const glm_act *x, glm_act *y, long long rows, int width_in, int width_out,
// int offset): y[r, c] = x[r, offset + c], x rows width_in apart, y rows width_out apart;
// 16-byte vectors when the bases are 16-byte aligned and offset and both widths are multiples of
// 8 (bf16) or 4 (f32) values. Preconditions: 0 <= offset, offset + width_out <= width_in.
glm5rt::StatusOr<SliceConfig> selectSlice(const Target &tiles, bool actF32);
std::string sliceSource(const SliceConfig &cfg);
// Enough CTAs for one vector (or value, when the shape does not vectorize) per thread, at most
// 8 per SM (the kernel's grid-stride loop covers the rest); at least 1.
SliceLaunch sliceLaunch(const SliceConfig &cfg, const Target &device, int64_t rows, int64_t widthIn,
                        int64_t widthOut, int64_t offset);
glm5rt::launch::SliceParams sliceLaunchParams(const SliceConfig &cfg);

} // namespace glm5c::codegen
