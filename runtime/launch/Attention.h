// Launch geometry of the attention kernels: the DSA indexer's scores (indexer.cuh), the causal
// top-k (topk.cuh) and sparse MLA (sparse_mla_decode.cuh + its combine, or the fp32
// sparse_mla_f32.cuh), from the plan's kernel params (see Params.h), the problem and the
// device's SM count. codegen/registry's indexerScoreChunk, topKPlan and sparseMlaDecodeSplits
// forward here.
#pragma once

#include "runtime/launch/Params.h"

#include <cstdint>
#include <vector>
#include <initializer_list>

namespace glm5rt::launch {

// Plan keys in brackets.
struct IndexerScoreParams {
  int threads = 0;
  int64_t dynamicSmem = 0;
  int tileN = 0;     // [tile_n] key rows per pipeline stage
  int ctasPerSm = 1; // [ctas_per_sm] resident CTAs per SM the tile target's shared memory
                     // allows (the cuda backend asks the device for its own count)
  int64_t heads = 0; // [heads]
  int64_t page = 0;  // [page] cache page size the kernel was compiled for (== kv.page_size)
};

// Grid (ceil(cols / chunk), rows): positions per CTA (a multiple of tileN) so one wave of the
// resident CTAs covers every row, at least one tile each.
struct IndexerScoreGrid {
  unsigned gridX = 1, gridY = 1, threads = 0, smem = 0;
  int chunk = 0;
};
IndexerScoreGrid indexerScoreGrid(const IndexerScoreParams &p, int smCount, int64_t rows,
                                  int64_t cols);
ParamList indexerScoreParamList(const IndexerScoreParams &p);
StatusOr<IndexerScoreParams> indexerScoreParamsOf(const glm5::plan::Kernel &kernel);

struct TopKParams {
  int threads = 0;
  int64_t rowSmem = 0;     // topk_row's dynamic shared memory (the kernel's dynamic_smem)
  int64_t collectSmem = 0; // [collect_smem] topk_seg_collect's
  int cache = 0;           // [cache] positions topk_row keeps in shared memory
  int segElems = 0;        // [seg_elems] positions per thread of a multi-CTA segment
  int maxK = 0;            // [max_k] largest k of the multi-CTA variant
  int64_t page = 0;        // [page] cache page size of the slot output (== kv.page_size)
  int clusterKeys = 0;     // [cluster_keys] topk_cluster's most keys per CTA (0: no such entry)
};

// topk_row keeps a row of up to threads x kTopKRowRegKeys positions in registers (topk.cuh
// GLM_TK_REG); longer rows within its cache take its shared-memory path, about twice as slow as
// topk_cluster there (bench/RESULTS.md 2026-12-03, fourth session).
constexpr int kTopKRowRegKeys = 16;
// The columns up to which topKGrid takes topk_row: its register path (or its cache, if smaller).
int64_t topKRowCols(const TopKParams &p);

// The top-k's cluster: at most 8 CTAs per row (the portable limit).
constexpr int kTopKMaxCluster = 8;
// topk_cluster's dynamic shared memory for `keys` keys per CTA (topk.cuh GLM_TK_CL_FIXED + 4
// per key; keys a multiple of 4).
int64_t topKClusterSmem(int64_t keys);
// topk_cluster's dynamic shared memory for rows of up to `cols` positions over clusters of
// `cluster` CTAs: room for the longest segment, ceil(cols / cluster) rounded up to 4 keys (the
// kernel's own segment rule).
int64_t topKClusterLaunchSmem(int64_t cols, int cluster);

// topk_grid: at most this many CTAs per row and keys per CTA (its largest dynamic shared memory,
// topKGridSmem(kTopKGridKeys), fits SM120's 99 KB per block).
constexpr int kTopKGridMaxCtas = 256;
constexpr int kTopKGridKeys = 8192;
// topk_grid's dynamic shared memory for `keys` keys per CTA (topk.cuh GLM_TK_GR_FIXED + 4 per
// key; keys a multiple of 4).
int64_t topKGridSmem(int64_t keys);
// topk_grid's workspace: per row 13828 uint32 (topk.cuh GLM_TK_GR_WS_ROW), zeroed once at
// allocation (every launch leaves it zero again).
int64_t topKGridWorkspaceBytes(int64_t rows);
// topk_grid's CTAs per row for rows of `cols` positions: about `keysPerCta` keys each, fewer
// CTAs (longer segments) where rows x CTAs would exceed `resident`, the CTAs of topk_grid the
// device holds at once (its barriers need every CTA resident), and at most kTopKGridMaxCtas; 0
// when the segments would pass kTopKGridKeys.
int topKGridCtas(int64_t rows, int64_t cols, int64_t keysPerCta, int64_t resident);
// topk_grid's dynamic shared memory for rows of up to `cols` positions over `ctas` CTAs: room for
// the longest segment, ceil(cols / ctas) rounded up to 4 keys (the kernel's own segment rule).
int64_t topKGridLaunchSmem(int64_t cols, int ctas);

// One of four launch forms:
// - grid > 0: topk_grid, grid (grid, rows), gridSmem bytes of dynamic shared memory, a workspace
//   of workspaceBytes zeroed once at allocation;
// - cluster > 0: topk_cluster, grid (cluster, rows) in clusters of (cluster, 1, 1),
//   clusterSmem bytes of dynamic shared memory;
// - segments > 0: topk_seg_hist0 then topk_seg_collect (collectSmem), both on grid (segments,
//   rows), with a workspace of workspaceBytes zeroed once at allocation (every complete pair of
//   launches leaves it zero again);
// - otherwise topk_row, grid rows, rowSmem.
struct TopKGrid {
  int segments = 0;
  int segmentLen = 0;
  int64_t workspaceBytes = 0;
  int cluster = 0;
  int64_t clusterSmem = 0;
  int grid = 0;
  int64_t gridSmem = 0;
  bool multi() const { return segments > 0; }
};
// The columns topk_cluster covers with clusters of `maxCluster` CTAs (0 without the entry).
int64_t topKClusterCols(const TopKParams &p, int maxCluster);
// The most columns for which topKGrid takes topk_cluster for one row (0: never): the decode
// graph's column bound for it.
int64_t topKClusterRowCols(const TopKParams &p, int maxCluster);
// topk_row within topKRowCols (its register path; measured faster than topk_cluster there);
// else topk_cluster while the row fits the cluster's shared memory and the rows' clusters take
// at most two waves; else topk_row when the row fits its shared-memory cache, the rows alone fill
// the SMs (prefill) or k exceeds the multi-CTA limit; otherwise the two multi-CTA launches.
// maxCluster: the largest cluster the device places (a power of two; 1 disables topk_cluster);
// activeClusters: how many of them the device holds at once (0: assume one CTA per SM).
// Before all of these, topk_grid (gridResident > 0: the topk_grid CTAs the device holds at once)
// past topKRowCols where it was measured faster: rows of kTopKGridMinCols columns or more, or
// more rows than SMs / maxCluster.
TopKGrid topKGrid(const TopKParams &p, int smCount, int64_t rows, int64_t cols, int64_t k,
                  int maxCluster = kTopKMaxCluster, int activeClusters = 0, int gridResident = 0);
// topk_grid's keys per CTA when topKGrid takes it (fewer CTAs where they would not all be
// resident), and the columns from which it does with clusters to spare.
constexpr int64_t kTopKGridTargetKeys = 2048;
constexpr int64_t kTopKGridMinCols = 65536;
// The column bound of a one-token call's CUDA graph (which fixes the indexer's and top-k's column
// count) whose last position is `last` < capacity: the smallest of `bounds` (column counts up to
// which the top-k keeps a cheaper form: topk_row's cache, topk_cluster's columns; 0 for none)
// that covers the positions and is below the capacity, else the capacity. A graph at the
// capacity would run the multi-CTA top-k at every position of a long context, and the indexer
// over every column.
int64_t decodeGraphColumns(std::initializer_list<int64_t> bounds, int64_t capacity, int64_t last);
// The multi-CTA segment length (a multiple of 1024, 2048 to threads * segElems).
int topKSegmentLen(const TopKParams &p, int smCount, int64_t rows, int64_t cols);
// Per row 2056 uint32 of state, then cols (key, position) candidate pairs.
int64_t topKWorkspaceBytes(int64_t rows, int64_t cols);
ParamList topKParamList(const TopKParams &p);
StatusOr<TopKParams> topKParamsOf(const glm5::plan::Kernel &kernel);

struct SparseMlaParams {
  int threads = 0;
  int64_t dynamicSmem = 0;
  bool f32 = false;       // [f32] the fp32 validation kernel: one CTA per (head, row), no split
  int headsPerCta = 16;   // [heads_per_cta] bf16 kernel: the mma M
  int tileN = 0;          // [tile_n] bf16 kernel: cache rows per stage
  int ctasPerSm = 1;      // bf16 kernel: resident CTAs per SM -- not a plan key: the runtime
                          // asks the device (registers and shared memory of the code it runs)
  int maxCluster = 8;     // bf16 kernel: the largest cluster the device can place (runtime too)
  bool spreadMerge = true; // bf16 kernel: the spread merge allowed (runtime: glm5-run --mla-merge)
  int64_t topk = 0;       // [topk] selected positions per row
  int64_t latent = 512;   // [latent]
};

// bf16: one launch, grid (groups * splits, rows), groups = ceil(heads / headsPerCta), in
// thread-block clusters of `cluster` consecutive splits along x; the splits merge in the
// same launch (sparse_mla_decode.cuh). Splits: see sparseMlaSplits.
// f32: grid (heads, rows), no splits, no clusters.
struct SparseMlaGrid {
  unsigned gridX = 1, gridY = 1, threads = 0, smem = 0;
  unsigned cluster = 1; // CTAs per cluster along x: 1, 2, 4 or 8, dividing splits
  bool spread = false;  // the spread merge (kernel argument spread_merge, cluster 1)
  int splits = 1, tokensPerSplit = 0;
  int64_t oPartBytes = 0, lsePartBytes = 0; // bf16 kernel: the clusters' partials
  int64_t countersBytes = 0; // bf16 kernel: a merge counter per (row, group, chunk), zeroed once
};
// The kernel's cluster bound (sparse_mla_decode.cuh GLM_MAX_CLUSTER), and the most splits the
// heuristic takes (the kernel itself merges any number of clusters).
constexpr int kSparseMlaMaxCluster = 8;
constexpr int kSparseMlaMaxSplits = 64;
// Bytes of a partial output value in o_part (sparse_mla_decode.cuh GLM_MLA_PART_BF16: bf16); the
// partials' lse values are fp32.
constexpr int64_t kSparseMlaPartValueBytes = 2;
// Clusters of up to 8 merge the splits while (rows x head groups) is at most this: one or two
// requests of one head group.
constexpr int64_t kSparseMlaClusterGroups = 2;
// Up to this many groups the splits spread over about one CTA per SM (and merge spread, below).
constexpr int64_t kSparseMlaSpreadGroups = 8;
int sparseMlaSplits(const SparseMlaParams &p, int smCount, int64_t rows, int64_t heads);
// CTAs per cluster: the largest power of two that divides `splits` and is at most maxCluster and
// kSparseMlaMaxCluster -- or 2 beyond kSparseMlaClusterGroups (rows x head groups).
int sparseMlaCluster(int splits, int64_t groups, int maxCluster = kSparseMlaMaxCluster);
// The spread merge (sparse_mla_decode.cuh): no cluster; each group's CTAs meet at a barrier in
// global memory and each merges 1 / splits of the group's columns over every partial. A CTA
// waits there for its group's others, so the whole grid (groups x splits) must be resident at
// once: at most ctasPerSm x smCount, the device's own occupancy. Taken beyond
// kSparseMlaClusterGroups at 4 or more splits (pairs of splits keep their cluster: the pair's
// merge is the whole merge).
bool sparseMlaSpread(int splits, int64_t groups, int ctasPerSm, int smCount);
// Whether a launch of `ctas` CTAs is resident at once (the spread merge's precondition): at most
// the device's CTAs per SM times its SMs.
bool sparseMlaResidentAtOnce(int64_t ctas, int ctasPerSm, int smCount);
SparseMlaGrid sparseMlaGrid(const SparseMlaParams &p, int smCount, int64_t rows, int64_t heads);
// Ops of at least kSparseMlaWideHeads heads carry a second bf16 kernel (the step's extra kernel
// 1): 32 heads per CTA, two m16 tiles sharing every gathered row and K / V fragment. At one CTA
// per SM, both with the bulk-copy gathers, it is 9-26% faster at 64 heads from batch 6 on 132
// SMs (12 wide groups; 26.1 against 28.9 us, 44.6 against 48.7 at batch 16, 237 against 338 at
// 128) and slower up to batch 4 (8 groups: 19.3 against 18.5; 16.4 against 13.5 at batch 2),
// where its groups are too few to fill the SMs (bench/RESULTS.md, 2026-12-01). Where the
// 16-head kernel fits two CTAs per SM (SM120 tiles as Hopper code) two independent CTAs hide each
// other's barriers and the 16-head kernel stays faster. So: the wide kernel when the 16-head one
// runs one CTA per SM and the wide groups (rows x ceil(heads / 32)) are at least a twelfth of
// the SMs.
constexpr int64_t kSparseMlaWideHeads = 32;
bool sparseMlaUseWide(int narrowCtasPerSm, int smCount, int64_t rows, int64_t heads);

// The kernels of one sparse-MLA op, each as the runtime sees it on its device: the step's kernel
// (index 0) and its extra kernels -- the 32-heads-per-CTA one (headsPerCta 32) and the
// two-CTAs-per-SM form of the first (one-tile ring; headsPerCta 16 or 8), where the plan has them.
struct SparseMlaCandidate {
  int headsPerCta = 16;
  int ctasPerSm = 1; // on this device (the driver's occupancy)
};
// Which candidate to launch. The first while it runs two CTAs per SM (an H200: every SM120 tile
// does); else the 32-head kernel where sparseMlaUseWide says so; else the two-CTAs-per-SM form
// where it does get two and its groups (rows x ceil(heads / its heads per CTA)) are at least
// half the SMs; else the first. At SM120's occupancy (bench/RESULTS.md 2026-11-30 "two CTAs per
// SM"), the form is 16% faster than the first at 8 heads x batch 128 and 31% slower at batch 8,
// where too few CTAs leave its one-tile ring without a second CTA to overlap.
enum class SparseMlaForce { kAuto, kBase, kTwoPerSm, kWide };
int sparseMlaPick(const std::vector<SparseMlaCandidate> &c, int smCount, int64_t rows,
                  int64_t heads, SparseMlaForce force = SparseMlaForce::kAuto);
ParamList sparseMlaParamList(const SparseMlaParams &p);
StatusOr<SparseMlaParams> sparseMlaParamsOf(const glm5::plan::Kernel &kernel);

} // namespace glm5rt::launch
