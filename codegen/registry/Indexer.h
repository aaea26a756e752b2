// Registry entries of the DSA lightning indexer (scores against the paged key cache) and of the
// causal top-k that turns scores into index lists: variants, tile and cache choices from the
// target, launch plans, instantiation sources (docs/kernels.md "Lightning indexer and top-k").
#pragma once

#include "codegen/target/Target.h"
#include "runtime/launch/Attention.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>

namespace glm5c::codegen {

struct IndexerShape {
  int64_t heads = 32;  // index_n_heads (the tiny fixture has 8)
  int64_t dim = 128;   // index_head_dim
  int64_t page = 64;   // positions per cache page
  bool actF32 = false; // q and the key cache in f32 (--activation-dtype f32)
};

struct IndexerScoreConfig {
  std::string variant; // "indexer_score_bf16_h32_p64_t64_s4"
  int tileN = 64;      // key rows per pipeline stage
  int stages = 4;
  int threads = 128;
  int64_t dynamicSmem = 0; // bytes, must equal the kernel's GLM_IDX_SMEM_BYTES
  int ctasPerSm = 1;       // resident CTAs per SM the shared memory allows (at most 4)
  IndexerShape shape;
};

// Bytes of dynamic shared memory of a tile choice (mirrors indexer.cuh's layout).
int64_t indexerScoreSmem(const IndexerShape &shape, int tileN, int stages);

// Picks, among the tiles with at least two CTAs per SM, the largest tile, a ring of >= 3 stages,
// the most resident CTAs, the deepest ring. On failure the status lists every candidate and why
// it was rejected.
glm5rt::StatusOr<IndexerScoreConfig> selectIndexerScore(const Target &tiles,
                                                        const IndexerShape &shape);

// Positions per CTA (a multiple of tileN) for `rows` query rows over `cols` cached positions:
// one wave of the resident CTAs covers every row, at least one tile each.
int indexerScoreChunk(const IndexerScoreConfig &cfg, const Target &tiles, int64_t rows,
                      int64_t cols);

// The launch parameters the plan records for the runtime (runtime/launch/Attention.h).
glm5rt::launch::IndexerScoreParams indexerScoreLaunchParams(const IndexerScoreConfig &cfg);

// The translation unit of the score kernel (entry indexer_score; grid (ceil(cols / chunk),
// rows), cfg.threads threads, cfg.dynamicSmem bytes).
std::string indexerScoreSource(const IndexerScoreConfig &cfg);

struct TopKShape {
  int64_t k = 2048;  // index_topk
  int64_t page = 64; // positions per cache page (for the slot output)
};

struct TopKConfig {
  std::string variant;     // "topk_radix_p64_c16384"
  int threads = 512;       // every entry
  int cache = 16384;       // positions topk_row keeps in shared memory
  int segElems = 16;       // positions per thread of a multi-CTA segment
  int maxK = 4096;         // largest k of the multi-CTA variant
  int candSmem = 4096;     // candidates the finishing CTA copies to shared memory
  int64_t dynamicSmem = 0; // topk_row's bytes, must equal GLM_TK_SMEM_BYTES
  int64_t collectSmem = 0; // topk_seg_collect's bytes, must equal GLM_TK_CSMEM_BYTES
  int clusterKeys = 0;     // topk_cluster's most keys per CTA (its largest dynamic shared memory:
                           // glm5rt::launch::topKClusterSmem(clusterKeys))
  TopKShape shape;
};

// Bytes of topk_row's dynamic shared memory for a cache size (mirrors topk.cuh).
int64_t topKRowSmem(int cache);
// Bytes of topk_seg_collect's dynamic shared memory (mirrors topk.cuh).
int64_t topKCollectSmem(int maxK, int candSmem);

// Picks the largest shared-memory cache with two topk_row CTAs per SM, and the most keys per
// topk_cluster CTA (a power of two) one CTA's shared memory holds.
glm5rt::StatusOr<TopKConfig> selectTopK(const Target &tiles, const TopKShape &shape);

// How a [rows, cols] score matrix with top-k `k` is selected (on a device that places clusters
// of 8): grid > 0 is topk_grid (grid (grid, rows), glm5rt::launch::topKGridLaunchSmem, a
// workspace of workspaceBytes zeroed once at allocation); cluster > 0 is topk_cluster
// (glm5rt::launch::TopKGrid); else segments == 0 is topk_row
// (grid rows, cfg.dynamicSmem); otherwise the multi-CTA variant, topk_seg_hist0 then
// topk_seg_collect (cfg.collectSmem), both on grid (segments, rows), with a workspace of
// workspaceBytes zeroed once at allocation (every complete pair of launches leaves it zero
// again).
struct TopKPlan {
  int segments = 0;
  int segmentLen = 0;
  int64_t workspaceBytes = 0;
  int cluster = 0; // > 0: topk_cluster in clusters of this many CTAs (at most 8)
  int grid = 0;    // > 0: topk_grid with this many CTAs per row
  bool multi() const { return segments > 0; }
};
// activeClusters: clusters of 8 the device holds at once (0: one CTA per SM assumed);
// gridResident: topk_grid CTAs the device holds at once (0: topk_grid not taken).
TopKPlan topKPlan(const TopKConfig &cfg, const Target &tiles, int64_t rows, int64_t cols, int64_t k,
                  int activeClusters = 0, int gridResident = 0);
// Workspace bytes of the multi-CTA variant: per row 2056 uint32 of state, then cols
// (key, position) candidate pairs.
int64_t topKWorkspaceBytes(int64_t rows, int64_t cols);
// The multi-CTA segment length for a shape (a multiple of 1024, at most threads * segElems).
int topKSegmentLen(const TopKConfig &cfg, const Target &tiles, int64_t rows, int64_t cols);

// The launch parameters the plan records for the runtime (runtime/launch/Attention.h).
glm5rt::launch::TopKParams topKLaunchParams(const TopKConfig &cfg);

// The translation unit of the top-k kernels (entries topk_row, topk_seg_hist0,
// topk_seg_collect, topk_cluster, topk_grid). The score row stride and the block table follow
// the kernels' comments.
std::string topKSource(const TopKConfig &cfg);

} // namespace glm5c::codegen
