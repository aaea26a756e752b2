// Registry entries of the elementwise family (codegen/kernels/elementwise.cuh): row norms, RoPE,
// the paged KV-cache append with or without RoPE, SwiGLU's gate product and the residual add;
// each with its constraints, its launch shape and its instantiation source.
#pragma once

#include "codegen/target/Target.h"
#include "runtime/launch/Elementwise.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace glm5c::codegen {

// ---- Row norms: rms_norm, add_rms_norm, layer_norm ----------------------------------------

enum class NormKind { Rms, AddRms, Layer };

struct NormShape {
  NormKind kind = NormKind::Rms;
  int64_t width = 6144;    // values per row (GLM_D)
  uint32_t weightType = 0; // ggml type id of the weight; only F32 (0) is implemented
  uint32_t biasType = 0;   // layer norm only; only F32
  bool actF32 = false;     // --activation-dtype f32
};

struct NormConfig {
  std::string variant; // "rms_norm_bf16_d6144_t384"
  std::string entry;   // "rms_norm", "add_rms_norm" or "layer_norm"
  NormShape shape;
  int threadsPerRow = 32;  // GLM_TPR: 32 = one warp per row
  int rowsPerCta = 8;      // GLM_ROWS_PER_CTA
  int threads = 256;       // threadsPerRow * rowsPerCta
  int valuesPerThread = 0; // ceil(width / threadsPerRow), held in registers
  int64_t dynamicSmem = 0; // none: the row sums use static shared memory
};

// Kernel arguments (docs in elementwise.cuh), grid = ceil(rows / rowsPerCta):
//   rms_norm(x, w, y, int rows, long long ld_x, float eps)
//   add_rms_norm(a, b, h, w, y, int rows, float eps)
//   layer_norm(x, w, bias, y, int rows, long long ld_x, float eps)
// Picks the fewest threads per row (one warp when it can) that keep at most 16 values of a row
// per thread. On failure the status lists every candidate and why it was rejected.
glm5rt::StatusOr<NormConfig> selectNorm(const Target &tiles, const NormShape &shape);
std::string normSource(const NormConfig &cfg);
int64_t normGrid(const NormConfig &cfg, int64_t rows); // forwards to runtime/launch
glm5rt::launch::NormParams normLaunchParams(const NormConfig &cfg);

// ---- RoPE, in place -------------------------------------------------------------------------

struct RopeShape {
  int64_t width = 256;       // row width
  int64_t rowsPerToken = 64; // rows (heads) per token
  int64_t offset = 192;      // first rotated column
  int64_t dim = 64;          // rotated columns, pairs (2i, 2i + 1)
  bool actF32 = false;
};

struct RopeConfig {
  std::string variant; // "rope_bf16_w256_r64_o192_d64"
  std::string entry = "rope";
  RopeShape shape;
  int threads = 128;
  int64_t dynamicSmem = 0;
};

// rope(x, const int32 *positions, float theta), grid = tokens (one CTA per token; zero tokens:
// do not launch).
glm5rt::StatusOr<RopeConfig> selectRope(const Target &tiles, const RopeShape &shape);
std::string ropeSource(const RopeConfig &cfg);

// ---- Paged KV-cache append (rope_cache_append, cache_append) --------------------------------

struct CacheAppendShape {
  int64_t latent = 512; // kv_lora; the kv row is [latent | rope]
  int64_t rope = 64;    // rope key width
  int64_t index = 128;  // indexer key width (its own cache rows)
  int64_t ropeDim = 64; // leading values of both keys rotated (rotate only)
  int64_t page = 1;     // cache slots per page (GLM_PAGE)
  bool rotate = true;   // rope_cache_append; false: cache_append
  bool actF32 = false;  // also the cache dtype
};

struct CacheAppendConfig {
  std::string variant; // "rope_cache_append_bf16_p16"
  std::string entry;   // "rope_cache_append" or "cache_append"
  CacheAppendShape shape;
  int threads = 128; // one warp per token
  int tokensPerCta = 4;
  int64_t dynamicSmem = 0;
};

// Both entries take (latent, long long ld_latent, rope_key, long long ld_rope, index_key,
// long long ld_index, const int32 *positions, const int32 *seq_ids (null: all sequence 0),
// const int32 *block_table [seqs, pages_per_seq], int pages_per_seq, kv_cache [slots, latent +
// rope], index_cache [slots, index], long long num_slots, int num_tokens, float theta);
// grid = ceil(num_tokens / tokensPerCta).
glm5rt::StatusOr<CacheAppendConfig> selectCacheAppend(const Target &tiles,
                                                      const CacheAppendShape &shape);
std::string cacheAppendSource(const CacheAppendConfig &cfg);
// The launch parameters the plan records (Kernel.params); grid: glm5rt::launch::cacheAppendGrid.
glm5rt::launch::CacheAppendParams cacheAppendLaunchParams(const CacheAppendConfig &cfg);

// ---- Pointwise: swiglu_mul (y = silu(g) * u, separate g and u buffers) and add --------------

struct PointwiseConfig {
  std::string variant; // "pointwise_bf16"
  std::vector<std::string> entries = {"swiglu_mul", "add"};
  bool actF32 = false;
  int threads = 256;
  int64_t dynamicSmem = 0;
};

// swiglu_mul(g, u, y, long long n), add(a, b, y, long long n); grid-stride, grid from
// pointwiseGrid.
glm5rt::StatusOr<PointwiseConfig> selectPointwise(const Target &tiles, bool actF32);
std::string pointwiseSource(const PointwiseConfig &cfg);
// Enough CTAs for n values, at most 8 per SM (grid-stride loops cover the rest); at least 1.
int64_t pointwiseGrid(const PointwiseConfig &cfg, const Target &tiles, int64_t n); // forwards

} // namespace glm5c::codegen
