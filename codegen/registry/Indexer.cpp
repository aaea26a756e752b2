// Lightning-indexer score and top-k variants, tile and cache selection, launch plans (see
// Indexer.h).
#include "codegen/registry/Indexer.h"

#include <algorithm>
#include <iterator>
#include <tuple>

namespace glm5c::codegen {

using glm5rt::makeStatus;
using glm5rt::StatusCode;

namespace {

bool powerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Shared memory the driver reserves per resident CTA.
constexpr int64_t kReservedPerCta = 1024;

} // namespace

int64_t indexerScoreSmem(const IndexerShape &shape, int tileN, int stages) {
  const int64_t elem = shape.actF32 ? 4 : 2;
  // f32: q rows of 32 padded heads x (dim + 4) floats first; bf16 keeps q in registers.
  const int64_t q = shape.actF32 ? 32 * (shape.dim + 4) * 4 : 0;
  return q + int64_t(stages) * tileN * shape.dim * elem;
}

glm5rt::StatusOr<IndexerScoreConfig> selectIndexerScore(const Target &tiles,
                                                        const IndexerShape &shape) {
  const char *dtype = shape.actF32 ? "f32" : "bf16";
  if (shape.dim != 128)
    return makeStatus(StatusCode::kUnimplemented,
                      "no indexer_score variant for head dim %lld (candidates: indexer_score_%s: "
                      "needs head dim 128)",
                      static_cast<long long>(shape.dim), dtype);
  if (shape.heads < 1 || shape.heads > 32)
    return makeStatus(StatusCode::kUnimplemented,
                      "no indexer_score variant for %lld heads (candidates: indexer_score_%s: "
                      "needs 1 to 32 heads, at most two m16 tiles of q fragments in registers)",
                      static_cast<long long>(shape.heads), dtype);
  if (!powerOfTwo(shape.page) || shape.page > (1 << 20))
    return makeStatus(StatusCode::kUnimplemented,
                      "no indexer_score variant for page size %lld (candidates: "
                      "indexer_score_%s: needs a power of two up to 2^20)",
                      static_cast<long long>(shape.page), dtype);
  if (!shape.actF32 && !tiles.mmaSync)
    return makeStatus(StatusCode::kUnimplemented, "%s has no mma.sync (indexer_score_bf16)",
                      tiles.name);
  // Every candidate needs two CTAs per SM (one CTA's prologue overlaps another's stream). Among
  // those: the largest tile (fewer barriers per byte), then a ring of at least 3 stages, then the
  // most resident CTAs (up to 4, the register limit at ~128 registers: on the H200, 4 CTAs of
  // t64_s3 stream ~5% faster than 3 of t64_s4), then the deepest ring.
  static const int kBf16[][2] = {{64, 4}, {64, 3}, {64, 2}, {32, 4}, {32, 3}, {32, 2}};
  static const int kF32[][2] = {{32, 4}, {32, 3}, {32, 2}, {16, 4}, {16, 2}};
  const auto *cands = shape.actF32 ? kF32 : kBf16;
  const size_t num = shape.actF32 ? std::size(kF32) : std::size(kBf16);
  std::string rejected;
  bool found = false;
  IndexerScoreConfig best;
  auto rank = [](const IndexerScoreConfig &c) {
    return std::make_tuple(c.tileN, c.stages >= 3, c.ctasPerSm, c.stages);
  };
  for (size_t i = 0; i < num; ++i) {
    const int tileN = cands[i][0], stages = cands[i][1];
    const int64_t smem = indexerScoreSmem(shape, tileN, stages);
    const std::string name = std::string("indexer_score_") + dtype + "_h" +
                             std::to_string(shape.heads) + "_p" + std::to_string(shape.page) +
                             "_t" + std::to_string(tileN) + "_s" + std::to_string(stages);
    if (smem > tiles.maxSharedPerBlock) {
      rejected += "\n  " + name + ": needs " + std::to_string(smem) + " B shared memory, " +
                  tiles.name + " allows " + std::to_string(tiles.maxSharedPerBlock) + " B";
      continue;
    }
    if (2 * (smem + kReservedPerCta) > tiles.sharedPerSM) {
      rejected += "\n  " + name + ": " + std::to_string(smem) + " B shared memory leaves " +
                  tiles.name + " (" + std::to_string(tiles.sharedPerSM) +
                  " B per SM) one CTA per SM, two wanted";
      continue;
    }
    IndexerScoreConfig cfg;
    cfg.variant = name;
    cfg.tileN = tileN;
    cfg.stages = stages;
    cfg.dynamicSmem = smem;
    cfg.ctasPerSm =
        static_cast<int>(std::min<int64_t>(4, tiles.sharedPerSM / (smem + kReservedPerCta)));
    cfg.shape = shape;
    if (!found || rank(cfg) > rank(best))
      best = cfg;
    found = true;
  }
  if (found)
    return best;
  return makeStatus(StatusCode::kUnimplemented, "no indexer_score variant fits %s:%s", tiles.name,
                    rejected.c_str());
}

glm5rt::launch::IndexerScoreParams indexerScoreLaunchParams(const IndexerScoreConfig &cfg) {
  glm5rt::launch::IndexerScoreParams p;
  p.threads = cfg.threads;
  p.dynamicSmem = cfg.dynamicSmem;
  p.tileN = cfg.tileN;
  p.ctasPerSm = cfg.ctasPerSm;
  p.heads = cfg.shape.heads;
  p.page = cfg.shape.page;
  return p;
}

int indexerScoreChunk(const IndexerScoreConfig &cfg, const Target &tiles, int64_t rows,
                      int64_t cols) {
  return glm5rt::launch::indexerScoreGrid(indexerScoreLaunchParams(cfg), tiles.smCount, rows, cols)
      .chunk;
}

std::string indexerScoreSource(const IndexerScoreConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  if (cfg.shape.actF32)
    s += "#define GLM_ACT_F32 1\n";
  s += "#define GLM_HEADS " + std::to_string(cfg.shape.heads) + "\n";
  s += "#define GLM_DIM " + std::to_string(cfg.shape.dim) + "\n";
  s += "#define GLM_PAGE " + std::to_string(cfg.shape.page) + "\n";
  s += "#define GLM_TILE_N " + std::to_string(cfg.tileN) + "\n";
  s += "#define GLM_STAGES " + std::to_string(cfg.stages) + "\n";
  s += "#include \"indexer.cuh\"\n";
  return s;
}

int64_t topKRowSmem(int cache) {
  const int64_t bins = 2048, scratch = 128;
  return (bins + scratch + cache) * 4;
}

int64_t topKCollectSmem(int maxK, int candSmem) {
  return topKRowSmem(0) + int64_t(maxK) * 4 + int64_t(candSmem) * 8;
}

glm5rt::StatusOr<TopKConfig> selectTopK(const Target &tiles, const TopKShape &shape) {
  if (shape.k < 1 || shape.k > (int64_t(1) << 24))
    return makeStatus(StatusCode::kUnimplemented,
                      "no topk variant for k = %lld (candidates: topk_radix: needs 1 <= k <= 2^24)",
                      static_cast<long long>(shape.k));
  if (!powerOfTwo(shape.page) || shape.page > (1 << 20))
    return makeStatus(StatusCode::kUnimplemented,
                      "no topk variant for page size %lld (candidates: topk_radix: needs a power "
                      "of two up to 2^20)",
                      static_cast<long long>(shape.page));
  TopKConfig base;
  base.collectSmem = topKCollectSmem(base.maxK, base.candSmem);
  std::string rejected;
  if (base.collectSmem > tiles.maxSharedPerBlock)
    return makeStatus(StatusCode::kUnimplemented,
                      "no topk variant fits %s: topk_seg_collect needs %lld B shared memory, %s "
                      "allows %lld B",
                      tiles.name, static_cast<long long>(base.collectSmem), tiles.name,
                      static_cast<long long>(tiles.maxSharedPerBlock));
  // At least two topk_row CTAs per SM.
  for (int cache : {32768, 16384, 8192, 4096}) {
    const int64_t smem = topKRowSmem(cache);
    const std::string name =
        "topk_radix_p" + std::to_string(shape.page) + "_c" + std::to_string(cache);
    if (smem > tiles.maxSharedPerBlock) {
      rejected += "\n  " + name + ": needs " + std::to_string(smem) + " B shared memory, " +
                  tiles.name + " allows " + std::to_string(tiles.maxSharedPerBlock) + " B";
      continue;
    }
    if (2 * (smem + kReservedPerCta) > tiles.sharedPerSM) {
      rejected += "\n  " + name + ": " + std::to_string(smem) + " B shared memory leaves " +
                  tiles.name + " (" + std::to_string(tiles.sharedPerSM) +
                  " B per SM) one CTA per SM, two wanted";
      continue;
    }
    TopKConfig cfg = base;
    cfg.variant = name;
    cfg.cache = cache;
    cfg.dynamicSmem = smem;
    cfg.shape = shape;
    // topk_cluster: 8 CTAs of this many keys cover 128K positions on SM120, 256K on Hopper.
    for (int keys = 32768; keys >= 1024 && cfg.clusterKeys == 0; keys /= 2)
      if (glm5rt::launch::topKClusterSmem(keys) <= tiles.maxSharedPerBlock)
        cfg.clusterKeys = keys;
    return cfg;
  }
  return makeStatus(StatusCode::kUnimplemented, "no topk variant fits %s:%s", tiles.name,
                    rejected.c_str());
}

glm5rt::launch::TopKParams topKLaunchParams(const TopKConfig &cfg) {
  glm5rt::launch::TopKParams p;
  p.threads = cfg.threads;
  p.rowSmem = cfg.dynamicSmem;
  p.collectSmem = cfg.collectSmem;
  p.cache = cfg.cache;
  p.segElems = cfg.segElems;
  p.maxK = cfg.maxK;
  p.page = cfg.shape.page;
  p.clusterKeys = cfg.clusterKeys;
  return p;
}

int64_t topKWorkspaceBytes(int64_t rows, int64_t cols) {
  return glm5rt::launch::topKWorkspaceBytes(rows, cols);
}

int topKSegmentLen(const TopKConfig &cfg, const Target &tiles, int64_t rows, int64_t cols) {
  return glm5rt::launch::topKSegmentLen(topKLaunchParams(cfg), tiles.smCount, rows, cols);
}

TopKPlan topKPlan(const TopKConfig &cfg, const Target &tiles, int64_t rows, int64_t cols, int64_t k,
                  int activeClusters, int gridResident) {
  glm5rt::launch::TopKGrid g =
      glm5rt::launch::topKGrid(topKLaunchParams(cfg), tiles.smCount, rows, cols, k,
                               glm5rt::launch::kTopKMaxCluster, activeClusters, gridResident);
  TopKPlan plan;
  plan.segments = g.segments;
  plan.segmentLen = g.segmentLen;
  plan.workspaceBytes = g.workspaceBytes;
  plan.cluster = g.cluster;
  plan.grid = g.grid;
  return plan;
}

std::string topKSource(const TopKConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += "#define GLM_PAGE " + std::to_string(cfg.shape.page) + "\n";
  s += "#define GLM_TOPK_THREADS " + std::to_string(cfg.threads) + "\n";
  s += "#define GLM_TOPK_CACHE " + std::to_string(cfg.cache) + "\n";
  s += "#define GLM_TOPK_SEG_ELEMS " + std::to_string(cfg.segElems) + "\n";
  s += "#define GLM_TOPK_MAXK " + std::to_string(cfg.maxK) + "\n";
  s += "#define GLM_TOPK_CAND_SMEM " + std::to_string(cfg.candSmem) + "\n";
  s += "#include \"topk.cuh\"\n";
  return s;
}

} // namespace glm5c::codegen
