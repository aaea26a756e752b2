// Sparse-MLA decode variants and tile selection (see SparseMla.h).
#include "codegen/registry/SparseMla.h"

#include <algorithm>

namespace glm5c::codegen {

using glm5rt::StatusCode;
using glm5rt::makeStatus;

// Shared memory the system reserves per resident CTA.
constexpr int64_t kReservedPerCta = 1024;

namespace {
// Resident CTAs per SM the tile target's shared memory allows (at most 2).
int ctasPerSmFor(const Target &tiles, int64_t smem) {
  return static_cast<int>(std::clamp<int64_t>(tiles.sharedPerSM / (smem + kReservedPerCta), 1, 2));
}
} // namespace

int64_t sparseMlaDecodeSmem(const MlaShape &s, int tileN, int ring, int warps, int heads,
                            bool qGlobal) {
  // Q (whose region then holds the k-parts' partial scores and P; with 32 heads Q stays in
  // registers and the region holds only those), the ring, the row maxima and sums per warp
  // (each warp owns a slot of every score fragment), the rows' valid flags.
  const int64_t row = (s.latent + s.rope + 8) * 2; // padded bf16 row
  const int64_t scoresAndP = 3 * int64_t(tileN) * heads * 4 + heads * (tileN + 8) * 2;
  const int64_t qRegion = heads == 32 || qGlobal ? scoresAndP : heads * row;
  return qRegion + ring * 16 * row + 2 * int64_t(warps) * heads * 4 + ring * 16 * 4;
}

std::string sparseMlaDecodeVariant(int tileN, int ring, int heads, int warps, bool qGlobal,
                                   bool bulk) {
  return "sparse_mla_decode_bf16_t" + std::to_string(tileN) + "_r" + std::to_string(ring) +
         (heads == 16 ? "" : "_h" + std::to_string(heads)) +
         (warps == kSparseMlaWarps ? "" : "_w" + std::to_string(warps)) +
         (qGlobal && heads == 16 ? "_qg" : "") + (bulk ? "_bulk" : "");
}

bool sparseMlaDecodeBulk(int64_t opHeads, int headsPerCta, int ctasPerSm) {
  return opHeads > headsPerCta || ctasPerSm == 1;
}

SparseMlaDecodeConfig sparseMlaDecodeWithHeads(SparseMlaDecodeConfig cfg, int heads,
                                               const Target &tiles) {
  cfg.heads = heads;
  cfg.qGlobal = cfg.qGlobal && heads == 16; // 32 heads always, 8 never
  cfg.variant = sparseMlaDecodeVariant(cfg.tileN, cfg.ring, heads, cfg.threads / 32, cfg.qGlobal,
                                       cfg.bulk);
  cfg.dynamicSmem =
      sparseMlaDecodeSmem(cfg.shape, cfg.tileN, cfg.ring, cfg.threads / 32, heads, cfg.qGlobal);
  // 32 heads: ~240 registers per thread (Q fragments and O of two m-tiles) leave one CTA per SM.
  cfg.ctasPerSm = heads == 32 ? 1 : ctasPerSmFor(tiles, cfg.dynamicSmem);
  return cfg;
}

int sparseMlaHeadsPerCta(int64_t opHeads) { return opHeads > 0 && opHeads <= 8 ? 8 : 16; }

SparseMlaDecodeConfig sparseMlaDecodeForOp(SparseMlaDecodeConfig cfg, int64_t opHeads,
                                           const Target &tiles, int headsPerCta) {
  if (headsPerCta == 0)
    headsPerCta = sparseMlaHeadsPerCta(opHeads);
  cfg = sparseMlaDecodeWithHeads(cfg, headsPerCta, tiles);
  cfg.bulk = sparseMlaDecodeBulk(opHeads, headsPerCta, cfg.ctasPerSm);
  return sparseMlaDecodeWithHeads(cfg, headsPerCta, tiles); // the name with the gathers' form
}

std::optional<SparseMlaDecodeConfig> sparseMlaDecodeTwoPerSm(const SparseMlaDecodeConfig &cfg,
                                                             const Target &tiles) {
  if (cfg.ctasPerSm >= 2 || cfg.heads == 32)
    return std::nullopt;
  SparseMlaDecodeConfig small = cfg;
  small.ring = cfg.tileN / 16; // one tile
  small.qGlobal = cfg.heads == 16;
  small = sparseMlaDecodeWithHeads(small, cfg.heads, tiles);
  if (small.ctasPerSm < 2)
    return std::nullopt;
  return small;
}

glm5rt::StatusOr<SparseMlaDecodeConfig> selectSparseMlaDecode(const Target &tiles,
                                                              const MlaShape &shape) {
  std::string rejected;
  if (shape.latent != 512 || shape.rope != 64)
    return makeStatus(StatusCode::kUnimplemented,
                      "no sparse_mla_decode variant for latent %lld + rope %lld (candidates: "
                      "sparse_mla_decode_bf16: needs latent 512 and rope 64)",
                      static_cast<long long>(shape.latent), static_cast<long long>(shape.rope));
  if (!tiles.mmaSync)
    return makeStatus(StatusCode::kUnimplemented, "%s has no mma.sync", tiles.name);
  for (const auto &c : kSparseMlaTiles) {
    int64_t smem = sparseMlaDecodeSmem(shape, c[0], c[1], kSparseMlaWarps);
    std::string name = sparseMlaDecodeVariant(c[0], c[1]);
    if (smem > tiles.maxSharedPerBlock) {
      rejected += "\n  " + name + ": needs " + std::to_string(smem) + " B shared memory, " +
                  tiles.name + " allows " + std::to_string(tiles.maxSharedPerBlock) + " B";
      continue;
    }
    SparseMlaDecodeConfig cfg;
    cfg.variant = name;
    cfg.tileN = c[0];
    cfg.ring = c[1];
    cfg.threads = 32 * kSparseMlaWarps;
    cfg.dynamicSmem = smem;
    cfg.ctasPerSm = ctasPerSmFor(tiles, smem);
    cfg.shape = shape;
    return cfg;
  }
  return makeStatus(StatusCode::kUnimplemented, "no sparse_mla_decode variant fits %s:%s",
                    tiles.name, rejected.c_str());
}

glm5rt::launch::SparseMlaParams sparseMlaDecodeLaunchParams(const SparseMlaDecodeConfig &cfg) {
  glm5rt::launch::SparseMlaParams p;
  p.threads = cfg.threads;
  p.dynamicSmem = cfg.dynamicSmem;
  p.headsPerCta = cfg.heads;
  p.tileN = cfg.tileN;
  p.ctasPerSm = cfg.ctasPerSm;
  p.topk = cfg.shape.topk;
  p.latent = cfg.shape.latent;
  return p;
}

int sparseMlaDecodeSplits(const SparseMlaDecodeConfig &cfg, const Target &tiles, int64_t batch,
                          int64_t heads) {
  return glm5rt::launch::sparseMlaSplits(sparseMlaDecodeLaunchParams(cfg), tiles.smCount, batch,
                                         heads);
}

std::string sparseMlaDecodeSource(const SparseMlaDecodeConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += "#define GLM_HEADS " + std::to_string(cfg.heads) + "\n";
  s += "#define GLM_TILE_N " + std::to_string(cfg.tileN) + "\n";
  s += "#define GLM_RING " + std::to_string(cfg.ring) + "\n";
  s += "#define GLM_WARPS " + std::to_string(cfg.threads / 32) + "\n";
  if (cfg.minCtas > 0)
    s += "#define GLM_MIN_CTAS " + std::to_string(cfg.minCtas) + "\n";
  if (cfg.qGlobal && cfg.heads == 16)
    s += "#define GLM_Q_GLOBAL 1\n";
  if (cfg.bulk)
    s += "#define GLM_MLA_BULK 1\n";
  s += "#define GLM_D_LATENT " + std::to_string(cfg.shape.latent) + "\n";
  s += "#define GLM_D_ROPE " + std::to_string(cfg.shape.rope) + "\n";
  s += "#define GLM_TOPK " + std::to_string(cfg.shape.topk) + "\n";
  s += "#include \"sparse_mla_decode.cuh\"\n";
  return s;
}

} // namespace glm5c::codegen

namespace glm5c::codegen {

int64_t sparseMlaF32StaticSmem(const MlaShape &s) {
  return s.topk * 8 + (s.latent + s.rope) * 4 + 4 * 4;
}

glm5rt::StatusOr<std::string> sparseMlaF32Source(const MlaShape &s) {
  // Static shared memory is capped at 48 KB per block without the opt-in attribute.
  if (sparseMlaF32StaticSmem(s) > 48 * 1024)
    return makeStatus(StatusCode::kUnimplemented,
                      "sparse_mla_f32 keeps %lld scores in static shared memory: %lld B > 49152 B",
                      static_cast<long long>(s.topk),
                      static_cast<long long>(sparseMlaF32StaticSmem(s)));
  if (s.latent % 128 != 0)
    return makeStatus(StatusCode::kUnimplemented,
                      "sparse_mla_f32 needs a latent width divisible by its 128 threads");
  return "// sparse_mla_f32\n#define GLM_ACT_F32 1\n#define GLM_D_LATENT " +
         std::to_string(s.latent) + "\n#define GLM_D_ROPE " + std::to_string(s.rope) +
         "\n#define GLM_TOPK " + std::to_string(s.topk) + "\n#include \"sparse_mla_f32.cuh\"\n";
}

} // namespace glm5c::codegen
