// Indexer, top-k and sparse-MLA launch geometry (see Attention.h).
#include "runtime/launch/Attention.h"

#include <algorithm>

namespace glm5rt::launch {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

IndexerScoreGrid indexerScoreGrid(const IndexerScoreParams &p, int smCount, int64_t rows,
                                  int64_t cols) {
  IndexerScoreGrid g;
  g.threads = static_cast<unsigned>(p.threads);
  g.smem = static_cast<unsigned>(p.dynamicSmem);
  const int64_t tilesPerRow = std::max<int64_t>(1, ceilDiv(cols, p.tileN));
  const int64_t slots = std::max<int64_t>(1, int64_t(smCount) * p.ctasPerSm);
  // One wave: every row gets the same whole number of chunks, floor(slots / rows) (one when the
  // rows outnumber the slots). Spreading rows * tilesPerRow evenly instead left a short extra
  // chunk per row past the wave (32 rows x 32K positions: 9 chunks of 63 tiles, 288 CTAs for
  // 264 slots).
  const int64_t chunksPerRow = std::max<int64_t>(1, slots / std::max<int64_t>(rows, 1));
  const int64_t chunkTiles = ceilDiv(tilesPerRow, chunksPerRow);
  g.chunk = static_cast<int>(chunkTiles * p.tileN);
  g.gridX = static_cast<unsigned>(std::max<int64_t>(1, ceilDiv(cols, g.chunk)));
  g.gridY = static_cast<unsigned>(std::max<int64_t>(rows, 1));
  return g;
}

ParamList indexerScoreParamList(const IndexerScoreParams &p) {
  return {{"tile_n", p.tileN}, {"ctas_per_sm", p.ctasPerSm}, {"heads", p.heads}, {"page", p.page}};
}

StatusOr<IndexerScoreParams> indexerScoreParamsOf(const glm5::plan::Kernel &k) {
  IndexerScoreParams p;
  p.threads = k.threads();
  p.dynamicSmem = k.dynamic_smem();
  GLM5_ASSIGN_OR_RETURN(int64_t tile, kernelParam(k, "tile_n", 1, 1024));
  GLM5_ASSIGN_OR_RETURN(int64_t ctas, kernelParam(k, "ctas_per_sm", 1, 64));
  GLM5_ASSIGN_OR_RETURN(p.heads, kernelParam(k, "heads", 1, 1024));
  GLM5_ASSIGN_OR_RETURN(p.page, kernelParam(k, "page", 1, 1 << 20));
  p.tileN = static_cast<int>(tile);
  p.ctasPerSm = static_cast<int>(ctas);
  return p;
}

int64_t decodeGraphColumns(std::initializer_list<int64_t> bounds, int64_t capacity, int64_t last) {
  int64_t cols = capacity;
  for (int64_t b : bounds)
    if (b > 0 && b < cols && last < b)
      cols = b;
  return cols;
}

int64_t topKWorkspaceBytes(int64_t rows, int64_t cols) { return rows * 2056 * 4 + rows * cols * 8; }

int topKSegmentLen(const TopKParams &p, int smCount, int64_t rows, int64_t cols) {
  // About one wave of two CTAs per SM over all rows.
  const int64_t maxLen = int64_t(p.threads) * p.segElems;
  const int64_t want =
      ceilDiv(std::max<int64_t>(rows, 1) * std::max<int64_t>(cols, 1), 2 * int64_t(smCount));
  return static_cast<int>(std::clamp<int64_t>(ceilDiv(want, 1024) * 1024, 2048, maxLen));
}

int64_t topKClusterSmem(int64_t keys) { return 29840 + 4 * keys; }

int64_t topKGridSmem(int64_t keys) { return 53760 + 4 * keys; }

int64_t topKGridWorkspaceBytes(int64_t rows) { return rows * 13828 * 4; }

int topKGridCtas(int64_t rows, int64_t cols, int64_t keysPerCta, int64_t resident) {
  rows = std::max<int64_t>(rows, 1);
  const int64_t per = std::clamp<int64_t>(keysPerCta, 1, kTopKGridKeys);
  const int64_t ctas = std::min({ceilDiv(cols, per), resident / rows, int64_t(kTopKGridMaxCtas)});
  if (ctas < 1 || ceilDiv(ceilDiv(cols, ctas), 4) * 4 > kTopKGridKeys)
    return 0;
  return static_cast<int>(ctas);
}

int64_t topKGridLaunchSmem(int64_t cols, int ctas) {
  return topKGridSmem(ceilDiv(ceilDiv(cols, std::max(ctas, 1)), 4) * 4);
}

int64_t topKClusterLaunchSmem(int64_t cols, int cluster) {
  return topKClusterSmem(ceilDiv(ceilDiv(cols, std::max(cluster, 1)), 4) * 4);
}

int64_t topKClusterCols(const TopKParams &p, int maxCluster) {
  return maxCluster > 1 ? int64_t(maxCluster) * p.clusterKeys : 0;
}

int64_t topKRowCols(const TopKParams &p) {
  return std::min<int64_t>(p.cache, int64_t(p.threads) * kTopKRowRegKeys);
}

int64_t topKClusterRowCols(const TopKParams &p, int maxCluster) {
  const int64_t cols = topKClusterCols(p, maxCluster);
  return cols > topKRowCols(p) ? cols : 0;
}

TopKGrid topKGrid(const TopKParams &p, int smCount, int64_t rows, int64_t cols, int64_t k,
                  int maxCluster, int activeClusters, int gridResident) {
  TopKGrid g;
  // Past topk_row's register path the cluster and the grid forms take the row where they fit,
  // even within topk_row's cache: on Hopper tiles (a 16K cache) its shared-memory path took
  // 19.2-20.8 us at 1, 8 and 32 rows of 16K positions against the cluster's 9.4-9.7 (1 and 8
  // rows; bench/RESULTS.md 2026-12-03, fourth session).
  const int64_t rowCols = topKRowCols(p);
  // topk_grid: rows past topKRowCols, all CTAs resident at once, where topk_cluster's
  // segments are long (rows of 64K positions and more: 8K keys per cluster CTA) or its clusters
  // share SMs (more than SMs / 8 rows). Measured on the H200 (bench/RESULTS.md 2026-12-02, sixth
  // session), top-k us cluster -> grid: 1 x 128K 18.2 -> 12.1, 8 x 128K 21.0 -> 18.1, 16 x 128K
  // 27.6 -> 22.2, 1 x 64K 13.1 -> 11.9, 32 x 32K 24.1 -> 18.4, 32 x 16K 20.4 -> 15.0; the
  // cluster stays ahead with fewer rows of at most 32K (1 x 32K 10.1 against 11.5, 16 x 32K
  // 13.8 against 15.7), and at 8 x 64K (14.6 against 15.5, the one loss the rule takes).
  if (gridResident > 0 && cols > rowCols && cols > k &&
      (cols >= kTopKGridMinCols || rows * std::max(maxCluster, 1) > smCount)) {
    g.grid = topKGridCtas(rows, cols, kTopKGridTargetKeys, gridResident);
    if (g.grid > 0) {
      g.gridSmem = topKGridLaunchSmem(cols, g.grid);
      g.workspaceBytes = topKGridWorkspaceBytes(rows);
      return g;
    }
  }
  // topk_cluster: one launch and one read of the row, each CTA a segment in shared memory. Measured
  // on the H200 (bench/RESULTS.md, 2026-11-30) against the multi-CTA launches: faster or equal at
  // every decode shape past topk_row's cache (1 x 32K 12.2 us against 18.8, 8 x 128K 24.4 against
  // 35.8, 1 x 128K 20.9 against 20.6), also with 32 rows whose clusters take two waves (32 x
  // 32K 27.7 against 31.4). More rows than two waves' worth keep the older forms.
  const int64_t resident = activeClusters > 0 ? activeClusters : smCount / std::max(maxCluster, 1);
  if (cols > rowCols && cols > k && cols <= topKClusterCols(p, maxCluster) &&
      rows <= 2 * resident) {
    g.cluster = maxCluster;
    g.clusterSmem = topKClusterLaunchSmem(cols, maxCluster);
    return g;
  }
  // topk_row is one read and one launch (measured faster than the two multi-CTA launches up to
  // 16K positions on the H200); in prefill the candidate workspace would grow with rows * cols.
  if (k > p.maxK || cols <= p.cache || cols <= k || rows >= smCount)
    return g;
  g.segmentLen = topKSegmentLen(p, smCount, rows, cols);
  g.segments = static_cast<int>(ceilDiv(cols, g.segmentLen));
  g.workspaceBytes = topKWorkspaceBytes(rows, cols);
  return g;
}

ParamList topKParamList(const TopKParams &p) {
  return {{"collect_smem", p.collectSmem}, {"cache", p.cache}, {"seg_elems", p.segElems},
          {"max_k", p.maxK},              {"page", p.page},   {"cluster_keys", p.clusterKeys}};
}

StatusOr<TopKParams> topKParamsOf(const glm5::plan::Kernel &k) {
  TopKParams p;
  p.threads = k.threads();
  p.rowSmem = k.dynamic_smem();
  GLM5_ASSIGN_OR_RETURN(p.collectSmem, kernelParam(k, "collect_smem", 0, 1 << 24));
  GLM5_ASSIGN_OR_RETURN(int64_t cache, kernelParam(k, "cache", 0, 1 << 24));
  GLM5_ASSIGN_OR_RETURN(int64_t seg, kernelParam(k, "seg_elems", 1, 1024));
  GLM5_ASSIGN_OR_RETURN(int64_t maxK, kernelParam(k, "max_k", 1, 1 << 24));
  GLM5_ASSIGN_OR_RETURN(p.page, kernelParam(k, "page", 1, 1 << 20));
  GLM5_ASSIGN_OR_RETURN(int64_t clusterKeys, kernelParam(k, "cluster_keys", 0, 1 << 20));
  p.clusterKeys = static_cast<int>(clusterKeys);
  p.cache = static_cast<int>(cache);
  p.segElems = static_cast<int>(seg);
  p.maxK = static_cast<int>(maxK);
  return p;
}

int sparseMlaSplits(const SparseMlaParams &p, int smCount, int64_t rows, int64_t heads) {
  const int64_t groups = std::max<int64_t>(rows, 1) * ceilDiv(heads, p.headsPerCta);
  const int64_t maxSplits =
      std::max<int64_t>(1, std::min<int64_t>(kSparseMlaMaxSplits, p.topk / p.tileN));
  // Measured on the H200 by glm5c-bench-sparse-mla's split sweep (bench/RESULTS.md).
  // One or two groups (clustered, see sparseMlaCluster): the top-k range spread over about half
  // the SMs, splits as short as one tile -- the clusters merge through distributed shared memory,
  // so short splits cost little; at least 8 splits (one full cluster).
  // Up to kSparseMlaSpreadGroups: about one CTA per SM (the spread merge; more splits than that
  // measured slower: 16.1 against 14.3 us at 8 heads x 8 rows, 14.4 against 11.4 at 64 x 1).
  // Otherwise: one wave of the CTAs an SM holds (p.ctasPerSm; two waves of a device that holds
  // one per SM measured slower: 49.3 against 37.3 us at 8 heads x 32 rows), at most 16 splits
  // (their merge reads every partial).
  int64_t want = 1;
  if (groups <= kSparseMlaClusterGroups) {
    while (want * 2 <= std::max<int64_t>(smCount / 2 / groups, 1))
      want *= 2;
    want = std::max<int64_t>(want, kSparseMlaMaxCluster);
  } else if (groups <= kSparseMlaSpreadGroups) {
    while (want * 2 <= std::max<int64_t>(smCount / groups, 1))
      want *= 2;
  } else {
    while (want * 2 <= ceilDiv(int64_t(std::max(p.ctasPerSm, 1)) * smCount, groups))
      want *= 2;
    want = std::min<int64_t>(want, 16);
  }
  return static_cast<int>(std::clamp<int64_t>(want, 1, maxSplits));
}

int sparseMlaCluster(int splits, int64_t groups, int maxCluster) {
  // Many groups: pairs of splits merge through distributed shared memory (half the partials
  // through global memory; with two splits no second stage at all). Measured on the H200
  // (bench/RESULTS.md, 2026-11-29 "one-round-trip merges, pair clusters"): 8 heads x 128 rows
  // 90.0 -> 86.6 us, 64 x 32 79.8 -> 74.1; larger clusters lose there.
  const int cap = std::min(maxCluster, groups > kSparseMlaClusterGroups ? 2 : kSparseMlaMaxCluster);
  int c = 1;
  while (c * 2 <= cap && splits % (c * 2) == 0)
    c *= 2;
  return c;
}

bool sparseMlaSpread(int splits, int64_t groups, int ctasPerSm, int smCount) {
  // Measured on the H200 against the clustered merges at the same splits or the best of them
  // (bench/RESULTS.md, 2026-11-30 "the spread merge"): 8 heads x 8 rows 15.4 -> 14.3 us, 16 x 8
  // 16.8 -> 15.3, 64 x 1 12.0 -> 11.4, 64 x 8 29.8 -> 25.4, 16 x 32 37.6 -> 34.4; one group
  // (7.3 against 7.9 at 8 x 1) and two splits (86.2 against 89.2 at 8 x 128) lose.
  return groups > kSparseMlaClusterGroups && splits >= 4 &&
         sparseMlaResidentAtOnce(groups * splits, ctasPerSm, smCount);
}

bool sparseMlaResidentAtOnce(int64_t ctas, int ctasPerSm, int smCount) {
  return ctas <= int64_t(std::max(ctasPerSm, 1)) * smCount;
}

SparseMlaGrid sparseMlaGrid(const SparseMlaParams &p, int smCount, int64_t rows, int64_t heads) {
  SparseMlaGrid g;
  g.threads = static_cast<unsigned>(p.threads);
  g.smem = static_cast<unsigned>(p.dynamicSmem);
  g.gridY = static_cast<unsigned>(rows);
  if (p.f32) {
    g.gridX = static_cast<unsigned>(heads);
    return g;
  }
  g.splits = sparseMlaSplits(p, smCount, rows, heads);
  const int64_t groups = ceilDiv(heads, p.headsPerCta);
  g.spread = p.spreadMerge && sparseMlaSpread(g.splits, rows * groups, p.ctasPerSm, smCount);
  g.cluster = g.spread ? 1u
                       : static_cast<unsigned>(sparseMlaCluster(g.splits, rows * groups,
                                                                p.maxCluster));
  // Each split covers a whole number of tiles.
  g.tokensPerSplit = static_cast<int>(ceilDiv(ceilDiv(p.topk, g.splits), p.tileN) * p.tileN);
  g.gridX = static_cast<unsigned>(groups * g.splits);
  g.countersBytes = rows * groups * g.cluster * 4;
  // Partials only when more than one cluster covers a (row, group).
  const int64_t clusters = g.splits / g.cluster;
  g.oPartBytes = clusters > 1 ? rows * heads * clusters * p.latent * kSparseMlaPartValueBytes : 0;
  g.lsePartBytes = clusters > 1 ? rows * heads * g.splits * 4 : 0;
  return g;
}

bool sparseMlaUseWide(int narrowCtasPerSm, int smCount, int64_t rows, int64_t heads) {
  if (narrowCtasPerSm != 1 || heads < kSparseMlaWideHeads)
    return false;
  return 12 * rows * ceilDiv(heads, kSparseMlaWideHeads) >= smCount;
}

int sparseMlaPick(const std::vector<SparseMlaCandidate> &c, int smCount, int64_t rows,
                  int64_t heads, SparseMlaForce force) {
  int wide = -1, two = -1;
  for (size_t i = 1; i < c.size(); ++i) {
    if (c[i].headsPerCta == kSparseMlaWideHeads)
      wide = wide < 0 ? static_cast<int>(i) : wide;
    else if (c[i].ctasPerSm >= 2)
      two = two < 0 ? static_cast<int>(i) : two;
  }
  switch (force) {
  case SparseMlaForce::kBase:
    return 0;
  case SparseMlaForce::kTwoPerSm:
    return two >= 0 ? two : 0;
  case SparseMlaForce::kWide:
    return wide >= 0 ? wide : 0;
  case SparseMlaForce::kAuto:
    break;
  }
  if (c.empty() || c[0].ctasPerSm >= 2)
    return 0;
  if (wide >= 0 && sparseMlaUseWide(c[0].ctasPerSm, smCount, rows, heads))
    return wide;
  if (two >= 0 && 2 * rows * ceilDiv(heads, c[two].headsPerCta) >= smCount)
    return two;
  return 0;
}

ParamList sparseMlaParamList(const SparseMlaParams &p) {
  if (p.f32)
    return {{"f32", 1}, {"topk", p.topk}, {"latent", p.latent}};
  return {{"f32", 0},
          {"heads_per_cta", p.headsPerCta},
          {"tile_n", p.tileN},
          {"topk", p.topk},
          {"latent", p.latent}};
}

StatusOr<SparseMlaParams> sparseMlaParamsOf(const glm5::plan::Kernel &k) {
  SparseMlaParams p;
  p.threads = k.threads();
  p.dynamicSmem = k.dynamic_smem();
  GLM5_ASSIGN_OR_RETURN(int64_t f32, kernelParam(k, "f32", 0, 1));
  p.f32 = f32 != 0;
  GLM5_ASSIGN_OR_RETURN(p.topk, kernelParam(k, "topk", 1, 1 << 20));
  GLM5_ASSIGN_OR_RETURN(p.latent, kernelParam(k, "latent", 1, 1 << 16));
  if (!p.f32) {
    GLM5_ASSIGN_OR_RETURN(int64_t h, kernelParam(k, "heads_per_cta", 1, 64));
    GLM5_ASSIGN_OR_RETURN(int64_t t, kernelParam(k, "tile_n", 1, 1024));
    p.headsPerCta = static_cast<int>(h);
    p.tileN = static_cast<int>(t);
  }
  return p;
}

} // namespace glm5rt::launch
