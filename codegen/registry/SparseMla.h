// Registry entries of the sparse-MLA decode kernel: its variants' constraints, the tile choice
// from the target's shared memory, the split count from its SM count, and the instantiation
// source (docs/kernels.md "Sparse MLA decode").
#pragma once

#include "codegen/target/Target.h"
#include "runtime/launch/Attention.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace glm5c::codegen {

struct MlaShape {
  int64_t latent = 512; // kv_lora
  int64_t rope = 64;
  int64_t topk = 2048;
};

// Warps per CTA of every variant. Eight: on SM120 one CTA fills an SM's shared memory, and four
// warps (one per scheduler) left the kernel issue-bound on dependent mma/ldmatrix chains at
// every batch (bench/RESULTS.md, 2026-11-29 profile).
constexpr int kSparseMlaWarps = 8;

// Tile candidates (cache rows per tile, ring entries of 16 rows), best first. One: 32-row tiles
// in a ring of two tiles (94720 B) fit SM120, and as sm_90 code two of them fit an H200's SM,
// which beat every deeper or larger ring there (bench/RESULTS.md, 2026-11-29 "ring entries"):
// at 8 heads x batch 128, 92.2 us against 95.4 (a 5-entry ring, two CTAs per SM), 106.4 (6
// entries, one CTA) and 125.3 (64-row tiles, 8 entries). The kernel takes any ring of at least
// two tiles (glm5c-bench-sparse-mla --variants).
constexpr int kSparseMlaTiles[][2] = {{32, 4}};

struct SparseMlaDecodeConfig {
  std::string variant;      // "sparse_mla_decode_bf16_t32_r4"
  int heads = 16;           // heads per CTA (the mma M)
  int tileN = 32;           // cache rows per tile (one softmax step)
  int ring = 4;             // ring entries of 16 rows (>= 1 tile's worth; 2 tiles to prefetch)
  bool qGlobal = false;     // 16 heads: Q fragments from global memory (GLM_Q_GLOBAL; 32: always)
  bool bulk = false;        // each gathered row one bulk copy (GLM_MLA_BULK; sparseMlaDecodeBulk)
  int minCtas = 0;          // tuning only: forces GLM_MIN_CTAS (0: from the code arch)
  int ctasPerSm = 1;        // resident CTAs per SM the tile target's shared memory allows (<= 2)
  int threads = 32 * kSparseMlaWarps;
  int64_t dynamicSmem = 0;  // bytes, must equal the kernel's GLM_SMEM_BYTES
  MlaShape shape;
};

// Bytes of dynamic shared memory for a tile choice (mirrors sparse_mla_decode.cuh's layout).
int64_t sparseMlaDecodeSmem(const MlaShape &shape, int tileN, int ring, int warps,
                            int heads = 16, bool qGlobal = false);

// The variant's name: "sparse_mla_decode_bf16_t<tileN>_r<ring>", "_h8" with 8 heads per CTA,
// "_qg" for Q from global memory with 16 heads, "_bulk" with the bulk-copy gathers.
std::string sparseMlaDecodeVariant(int tileN, int ring, int heads = 16,
                                   int warps = kSparseMlaWarps, bool qGlobal = false,
                                   bool bulk = false);

// Whether an op of `opHeads` heads takes the bulk-copy gathers with `headsPerCta` heads per CTA
// and `ctasPerSm` CTAs per SM of the tile target. One bulk copy per row (the copy engine's)
// instead of 8 threads x 9 cp.async (bench/RESULTS.md 2026-12-01):
// - where a request has several head groups, which gather the same rows: 6-12% faster (64 heads
//   in 16-head groups, batch 8 / 32 / 128: 25.8 -> 24.3, 70.4 -> 65.9, 244 -> 216 us);
// - where the tile target holds one CTA per SM (SM120's two-tile ring), whose gathers no second
//   CTA overlaps: 6-10% faster from batch 32 at that occupancy (8 heads x 128: 102.5 -> 92.1 us,
//   16 x 32: 36.0 -> 33.4), even at batch 1 and 8 (within 0.3 us);
// - a lone group at two CTAs per SM is even within 0.3 us either way (cp.async kept).
bool sparseMlaDecodeBulk(int64_t opHeads, int headsPerCta, int ctasPerSm);

// The same tiles (and gathers) with `heads` heads per CTA: 16 (one m16 tile of heads; fewer
// are padded), 32 (two m16 tiles) or 8 (the tokens as the mma M and the heads its N: no padding
// at 8 heads, half the mma work). glm5c-bench-sparse-mla --heads-per-cta.
SparseMlaDecodeConfig sparseMlaDecodeWithHeads(SparseMlaDecodeConfig cfg, int heads,
                                               const Target &tiles);

// Heads per CTA the registry gives an op of `opHeads` heads (0: unknown): 8 for ops of at most 8
// heads (GLM-5 at tensor-parallel 8: the tokens as the mma M, nothing padded) and 16 otherwise.
// Measured (bench/RESULTS.md 2026-12-02): the 8-head layout 0.1-1.2 us faster at every 8-head
// shape, the 16-head one faster at 16 heads from batch 8 on. (The 32-head form is the runtime's
// per-batch choice among a step's kernels: launch::sparseMlaPick.)
int sparseMlaHeadsPerCta(int64_t opHeads);

// The layout the registry gives an op of `opHeads` heads (0: unknown) with the tiles of `cfg`:
// `headsPerCta`, or by default sparseMlaHeadsPerCta's; the bulk-copy gathers where
// sparseMlaDecodeBulk says so.
SparseMlaDecodeConfig sparseMlaDecodeForOp(SparseMlaDecodeConfig cfg, int64_t opHeads,
                                           const Target &tiles, int headsPerCta = 0);

// The same heads with a one-tile ring (and, with 16 heads, Q from global memory) where that
// lets two CTAs share an SM of `tiles` and the two-tile ring leaves one (SM120's 100 KB per SM):
// two CTAs overlap each other's loads and barriers. Nothing when `cfg` already has two per SM,
// or the smaller form would not have them either (32 heads: ~240 registers).
std::optional<SparseMlaDecodeConfig> sparseMlaDecodeTwoPerSm(const SparseMlaDecodeConfig &cfg,
                                                             const Target &tiles);

// Picks the largest tile and deepest ring that fit `tiles`' shared memory. On failure the
// status lists every candidate and why it was rejected.
glm5rt::StatusOr<SparseMlaDecodeConfig> selectSparseMlaDecode(const Target &tiles,
                                                              const MlaShape &shape);

// Splits of the top-k range per (request, head group): enough CTAs for ~2 waves of the SMs,
// at least one tile per split.
int sparseMlaDecodeSplits(const SparseMlaDecodeConfig &cfg, const Target &tiles, int64_t batch,
                          int64_t heads);

// The launch parameters the plan records for the runtime (runtime/launch/Attention.h).
glm5rt::launch::SparseMlaParams sparseMlaDecodeLaunchParams(const SparseMlaDecodeConfig &cfg);

// The translation unit NVRTC compiles for this configuration (constants, then the template).
std::string sparseMlaDecodeSource(const SparseMlaDecodeConfig &cfg);

// The fp32 validation variant (sparse_mla_f32.cuh): one CTA per (row, head), 128 threads,
// static shared memory only. Fails when the top-k does not fit its static shared memory.
glm5rt::StatusOr<std::string> sparseMlaF32Source(const MlaShape &shape);
int64_t sparseMlaF32StaticSmem(const MlaShape &shape);

} // namespace glm5c::codegen
