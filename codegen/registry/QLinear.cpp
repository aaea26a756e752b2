// Quantized linear variants, tile and chunk selection, launch geometry (see QLinear.h).
#include "codegen/registry/QLinear.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace glm5c::codegen {

using glm5rt::makeStatus;
using glm5rt::StatusCode;

namespace {

struct TypeInfo {
  uint32_t id;
  const char *name;
  int blockElems, blockBytes;
  bool mmaStep;   // dequant.cuh has a glm_mv_step for it
  int xsumGran;   // elements per x-sum group of that step (0: none)
  bool aligned16; // a row's 256-element steps stay 16-byte aligned
  int xf16Gran;   // x-sum group of the step with fp16 x (GLM_MV_XF16); -1: no such step
  int slotPad;    // bytes after a ring slot's step (dequant.cuh GLM_MV_SLOT_PAD)
};

// ggml's block facts for the handled types (as runtime/gguf/ggml_types.cpp states them).
constexpr TypeInfo kTypes[] = {
    {0, "F32", 1, 4, false, 0, true, -1, 0},       {1, "F16", 1, 2, true, 0, true, 0, 0},
    {30, "BF16", 1, 2, true, 0, true, -1, 0},      {2, "Q4_0", 32, 18, true, 32, false, -1, 0},
    {8, "Q8_0", 32, 34, true, 0, false, 32, 0},    {12, "Q4_K", 256, 144, true, 32, true, 32, 16},
    {13, "Q5_K", 256, 176, true, 32, true, 32, 0}, {14, "Q6_K", 256, 210, true, 16, false, -1, 0},
};

// BF16 and F16: 16-bit values without blocks or scales (dequant.cuh GLM_MV_PLAIN16).
bool plain16(const TypeInfo &t) { return t.blockElems == 1 && t.blockBytes == 2; }

const TypeInfo *findType(uint32_t id) {
  for (const TypeInfo &t : kTypes)
    if (t.id == id)
      return &t;
  return nullptr;
}

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string supportedList() {
  std::string s;
  for (const TypeInfo &t : kTypes)
    s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

constexpr int kStep = glm5rt::launch::kQLinearKStep; // GLM_MV_STEP
// mma decode CTA: 4 warps x 16 rows for 1-2 tokens; 8 warps for more, which halves the x staging
// per weight row (measured on the H200: Q4_K lm_head at T = 8 went from 729 to 340 us).
int mmaWarps(int tokens) { return tokens > 2 ? 8 : 4; }
constexpr int kFmaWarps = 8; // fp32 decode CTA: 8 warps x fmaRowsPerWarp rows
// Rows a warp of the fp32 decode path walks, with T accumulators each: at most 16 accumulators
// keep it within 128 registers (T = 8 with 4 rows spilled).
int fmaRowsPerWarp(int tokens) { return tokens > 4 ? 2 : 4; }
constexpr int64_t kReservedSmem = 1024; // per CTA, taken by the hardware on sm_80+
constexpr int64_t kStaticSmem = 16;     // glm_ql_fixup's flag (and alignment slack)

constexpr int64_t kPrefetchBytes = int64_t(32) << 20; // weights from which L2 fetches lines
constexpr uint32_t kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14; // ggml ids
// The types with an int8-x step (dequant.cuh glm_mv_step_i8).
bool xi8Type(uint32_t id) { return id == kQ4_0 || id == kQ4_K || id == kQ5_K || id == kQ6_K; }
// Weight bytes from which the int8-x step serves three and four tokens (qlinearXi8).
constexpr int64_t kXi8Bytes = int64_t(16) << 20;
// Bytes from which BF16 and F16 decode products of one or two tokens take the fp32 path
// (selectImpl).
constexpr int64_t kPlain16Fp32Bytes = int64_t(128) << 20;

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// x chunk sizes to try, largest first: all of K (at most 16384), then powers of two from 8192
// down to `smallest` (every one a multiple of the 256-element step) that divide K: a partial last
// chunk costs a whole chunk's barrier and x staging for part of the work (H200, Q4_0 lm_head
// 6144 -> 154880 at one token: x chunks of 4096 161.1 us, of 2048 156.3; Q4_K 151.0 / 148.9;
// bench/RESULTS.md 2026-11-30). Only when none divides, every size (all of K first: a chunk
// that covers K when it fits, smaller ones when it does not).
std::vector<int64_t> chunkSizes(int64_t K, int64_t smallest) {
  const int64_t first = std::min<int64_t>(roundUp(K, kStep), 16384);
  std::vector<int64_t> v = {first}, all = {first};
  for (int64_t kc = 8192; kc >= smallest; kc /= 2)
    if (kc < first) {
      all.push_back(kc);
      if (K % kc == 0)
        v.push_back(kc);
    }
  return v.size() > 1 ? v : all;
}

std::string mmaDecodeName(const std::string &tname, int tokens, int warps, int stages, int64_t kc) {
  return "qlinear_mv_mma_" + tname + "_bf16_t" + std::to_string(tokens) + "_w" +
         std::to_string(warps) + "_s" + std::to_string(stages) + "_kc" + std::to_string(kc);
}

// GLM_MV_ROWS16: an mma decode of a type whose steps are not all 16-byte aligned, at a K that
// keeps every row 16-byte aligned.
bool decodeRows16(bool mma, const TypeInfo &ti, int64_t K) {
  return mma && !ti.aligned16 && qlinearRowBytes(ti.id, K) % 16 == 0;
}

} // namespace

std::string qlinearDecodeSuffix(const QLinearConfig &cfg) {
  return std::string(cfg.rows16 ? "_r16" : "") + (cfg.l2Prefetch ? "_pf128" : "") +
         (cfg.l1Copies ? "_l1" : "") + (cfg.xf16 ? "_xf16" : "") + (cfg.xi8 ? "_xi8" : "") +
         (cfg.xWarp ? "_xw" + std::to_string(cfg.xWarp) : "") + (cfg.lateFill ? "_lf" : "");
}

namespace {

// The ring's first fill after the first x chunk (GLM_MV_LATE_FILL) for a lone qlinear_decode:
// Q6_K at one token, on products under 256 MiB whose rows are all 16-byte aligned (the
// whole-chunk copies; on the 2-byte-aligned path the late fill spilled). Issued before the
// chain, a Q6_K step's fill (7 copies per lane, against Q4_K's 5) delays the x staging behind
// it. On the H200 (SM120 tiles, bench/RESULTS.md 2026-12-01 "the first fill after x") every
// such product gained 1-5% (o 32.4 -> 31.8 us, dense gate 26.2 -> 25.2, q_a 8.3 -> 7.9); the
// Q6_K head, whose CTAs mostly start while others stream, lost 0.4%; Q4_0, Q4_K, Q5_K and Q8_0
// were even or lost up to 2%, eight tokens lost 2-7%, and the experts' down product, whose chain
// comes first anyway, lost 6%.
constexpr int64_t kLateFillBytes = int64_t(256) << 20;
bool qlinearLateFill(uint32_t type, int tokens, int64_t bytes, bool rows16) {
  return type == kQ6_K && tokens == 1 && bytes < kLateFillBytes && rows16;
}

// The decode fields of `cfg` for one candidate (kind, entry, type and tokens already set).
// lateFillOk: the kernel is a lone qlinear_decode (qlinearLateFill may apply).
void fillDecode(QLinearConfig &cfg, const std::string &name, bool mma, bool xf16, bool xi8,
                int xWarp, int warps, int stages, int64_t kc, int64_t smem, const TypeInfo &ti,
                int64_t K, int64_t N, int64_t launchBytes, bool lateFillOk) {
  cfg.rows16 = decodeRows16(mma, ti, K);
  // The mma copies' memory path, measured on the H200 (bench/RESULTS.md "L2 prefetch"): a
  // launch streaming at least 32 MiB of weights has L2 fetch whole 128-byte lines (one-token
  // heads 4-10% faster; smaller products, latency-bound, lost up to 3%); BF16 rows (and F16's,
  // the same layout) go through L1 (10% faster at every shape, where the quantized types' copies
  // lost 25-35%).
  const int64_t bytes = launchBytes > 0 ? launchBytes : qlinearRowBytes(ti.id, K) * N;
  cfg.l2Prefetch = mma && bytes >= kPrefetchBytes ? 128 : 0;
  cfg.l1Copies = mma && plain16(ti);
  cfg.xf16 = mma && xf16;
  cfg.xi8 = mma && xi8;
  cfg.xWarp = mma ? xWarp : 0;
  cfg.lateFill = mma && lateFillOk && qlinearLateFill(ti.id, cfg.tokens, bytes, cfg.rows16);
  cfg.variant = name + qlinearDecodeSuffix(cfg);
  cfg.mma = mma;
  cfg.warps = warps;
  cfg.threads = (warps + (cfg.xWarp ? 1 : 0)) * 32;
  cfg.stages = stages;
  cfg.kChunk = static_cast<int>(kc);
  cfg.rowsPerWarp = mma ? 16 : fmaRowsPerWarp(cfg.tokens);
  cfg.rowsPerCta = warps * cfg.rowsPerWarp;
  cfg.dynamicSmem = smem;
}

} // namespace

bool qlinearSupportsType(uint32_t type) { return findType(type) != nullptr; }

std::string qlinearTypeName(uint32_t type) {
  const TypeInfo *t = findType(type);
  return t ? t->name : "type " + std::to_string(type);
}

int64_t qlinearRowBytes(uint32_t type, int64_t K) {
  const TypeInfo *t = findType(type);
  return t ? K / t->blockElems * t->blockBytes : 0;
}

bool qlinearXf16(uint32_t type, int tokens, bool rows16) {
  return type == kF16 || (type == kQ5_K && tokens == 1) ||
         (type == kQ8_0 && tokens <= 4 && (tokens > 1 || rows16));
}

int qlinearXWarp(uint32_t type, int tokens) {
  return (type == kQ8_0 || type == kQ4_0) && tokens > 4 ? 2 : 0;
}

bool qlinearXi8(uint32_t type, int tokens, int64_t weightBytes) {
  return xi8Type(type) && tokens >= 2 && tokens <= 4 &&
         (tokens == 2 || weightBytes >= kXi8Bytes);
}

int64_t qlinearDecodeSmem(uint32_t type, bool mma, int tokens, int warps, int stages, int kChunk,
                          bool xf16, bool rows16, bool xi8, int xWarp) {
  const TypeInfo *t = findType(type);
  if (!t)
    return 0;
  if (!mma)
    return int64_t(tokens) * (kChunk / 32 * 36) * 4; // GLM_XFROW fp32 per token
  const int64_t stepBytes = int64_t(kStep) / std::max(t->blockElems, 32) *
                            (t->blockElems == 1 ? 32 * t->blockBytes : t->blockBytes);
  const bool wholeChunks = t->aligned16 || (rows16 && stepBytes % 16 == 0); // GLM_SLOT
  const int64_t slot = roundUp(stepBytes, 16) + (wholeChunks ? t->slotPad : 16);
  // One token of a type with scale groups other than Q8_0 (type 8): a zero row after x
  // (GLM_XS_ROWS, dequant.cuh's GLM_MV_COLS).
  const int xsRows = tokens + (tokens == 1 && t->blockElems > 1 && t->id != 8 ? 1 : 0);
  const int64_t ring = int64_t(warps) * stages * 16 * slot;
  // int8 rows of kChunk + 32 bytes; per step 64 scales and 64 sums, Q6_K 128 (GLM_XI8_STEP_WORDS)
  if (xi8)
    return int64_t(tokens) * (kChunk + 32) +
           int64_t(kChunk) / kStep * (t->id == kQ6_K ? 192 : 128) * 4 + ring;
  // The x warp's buffers (rows of kChunk + 16) and their two barriers each (8 bytes).
  if (xWarp)
    return int64_t(xWarp) * (int64_t(tokens) * (kChunk + 16) * 2 + 16) + ring;
  const int64_t xs = int64_t(xsRows) * (kChunk + 16) * 2;
  // Q8_0's fp16 quants fold their offset with x sums, which its bf16 step has none of. Up to four
  // tokens stage them; with more the tensor core takes them (GLM_MV_XSUM_MMA, _OFFSET_MMA).
  const int gran = xf16 && t->xf16Gran >= 0 ? t->xf16Gran : t->xsumGran;
  const int64_t xsum = gran && tokens <= 4 ? int64_t(kChunk) / gran * 8 * 4 : 0;
  // BF16 and F16 with more than four tokens: the next x chunk's copy (GLM_XRAW_BYTES).
  const int64_t xraw = plain16(*t) && tokens > 4 ? int64_t(tokens) * kChunk * 2 : 0;
  return xs + xsum + xraw + ring;
}

namespace {
// selectQLinear, and with fp32Path the decode tiles of the fp32 path whatever the type
// (qlinearDecodeFp32); xform >= 0 forces the mma decode's x form (qlinearDecodeWith's values).
// xWarpOk: the kernel may take an x warp (qlinear_decode only).
glm5rt::StatusOr<QLinearConfig> selectImpl(const Target &tiles, uint32_t type, int64_t K,
                                           int64_t N, int tokens, bool actF32,
                                           int64_t launchBytes, bool fp32Path, int xform = -1,
                                           bool xWarpOk = true) {
  const TypeInfo *ti = findType(type);
  const std::string act = actF32 ? "f32" : "bf16";
  if (!ti)
    return makeStatus(StatusCode::kUnimplemented,
                      "no qlinear variant for weight type %s (candidates: qlinear_mv, qlinear_mm: "
                      "support %s)",
                      qlinearTypeName(type).c_str(), supportedList().c_str());
  // Granule: a whole number of blocks, and of the 32-element sub-blocks every path reads.
  const int64_t granule = std::max(ti->blockElems, 32);
  if (K <= 0 || N <= 0 || K % granule != 0 || tokens <= 0 || K > (int64_t(1) << 30) ||
      N > (int64_t(1) << 30))
    return makeStatus(StatusCode::kInvalidArgument,
                      "no qlinear variant for K=%lld N=%lld tokens=%d %s (candidates: qlinear_mv, "
                      "qlinear_mm: need K a positive multiple of %lld (the %s block and the "
                      "32-element sub-block), N >= 1, tokens >= 1)",
                      static_cast<long long>(K), static_cast<long long>(N), tokens, ti->name,
                      static_cast<long long>(granule), ti->name);
  const std::string tname = lower(ti->name);
  QLinearConfig cfg;
  cfg.type = type;
  cfg.actF32 = actF32;
  std::string rejected;
  const int64_t limit = tiles.maxSharedPerBlock - kStaticSmem;
  // Two CTAs per SM keep enough bytes in flight; more shared memory than that is a fallback.
  const int64_t comfortable = std::min(limit, tiles.sharedPerSM / 2 - kReservedSmem - kStaticSmem);

  if (tokens > 8) {
    // Prefill: one tile shape per path; 27648 B (bf16) and 17408 B (f32) fit every target.
    cfg.kind = QLinearKind::kPrefill;
    cfg.entry = "qlinear_prefill";
    cfg.threads = 256;
    cfg.warps = 8;
    if (!actF32) {
      if (!tiles.mmaSync)
        return makeStatus(StatusCode::kUnimplemented,
                          "no qlinear_mm variant for %s: qlinear_mm_mma needs mma.sync",
                          tiles.name);
      cfg.mma = true;
      cfg.tileM = 64, cfg.tileN = 128, cfg.tileK = 64;
      cfg.dynamicSmem = int64_t(cfg.tileM + cfg.tileN) * (cfg.tileK + 8) * 2;
      cfg.variant = "qlinear_mm_mma_" + tname + "_m64n128k64";
    } else {
      cfg.tileM = 64, cfg.tileN = 64, cfg.tileK = 32;
      cfg.dynamicSmem = int64_t(2) * cfg.tileK * (cfg.tileM + 4) * 4;
      cfg.variant = "qlinear_mm_f32_" + tname + "_m64n64k32";
    }
    if (cfg.dynamicSmem > limit)
      return makeStatus(StatusCode::kUnimplemented,
                        "no qlinear_mm variant fits %s:\n  %s: needs "
                        "%lld B shared memory, %s allows %lld B",
                        tiles.name, cfg.variant.c_str(), static_cast<long long>(cfg.dynamicSmem),
                        tiles.name, static_cast<long long>(limit));
    return cfg;
  }

  cfg.kind = QLinearKind::kDecode;
  cfg.entry = "qlinear_decode";
  cfg.tokens = tokens;
  // BF16 and F16 weights at one or two tokens take the fp32 path on products of at least
  // kPlain16Fp32Bytes (o_proj and the head at GLM-5's widths): it streams the rows straight from
  // global memory, while the mma path's 8 KB ring slots leave one CTA per SM on SM120. H200, SM120
  // tiles (bench/RESULTS.md 2026-11-30 "16-bit weights on the fp32 path"): BF16 o_proj at one
  // token 64.5 -> 56.0 us (74 -> 85% of copy bandwidth), at two 71.1 -> 64.7; the head at
  // SM120's CTAs per SM 515.5 -> 452.2 (one token), 576.3 -> 545.8 (two) -- at the H200's own
  // occupancy, where two mma CTAs share an SM, the head loses 4% and 12% instead: the rule
  // follows the tile target. Smaller products (q_a, q_b, kv_a) and three or more tokens are
  // faster on the mma path (F16 at eight tokens 2.6-2.9x: head 1919.5 -> 659.2 us).
  const bool plain16Fp32 = plain16(*ti) && tokens <= 2 &&
                           qlinearRowBytes(type, K) * N >= kPlain16Fp32Bytes;
  const bool mma = ti->mmaStep && !actF32 && tiles.mmaSync && !plain16Fp32 && !fp32Path;
  if (!mma && !fp32Path) {
    rejected += "\n  qlinear_mv_mma: ";
    rejected += actF32         ? "needs bf16 activations (f32 runs the exact fp32 path)"
                : !ti->mmaStep ? std::string("no mma step for ") + ti->name +
                                     " (F32 weights would lose bits as bf16 or fp16 fragments)"
                : plain16Fp32  ? std::string(ti->name) +
                                     " at one or two tokens takes the fp32 path on products of "
                                     "at least " + std::to_string(kPlain16Fp32Bytes >> 20) +
                                     " MiB (faster there)"
                               : std::string(tiles.name) + " has no mma.sync";
  }
  const bool rows16 = decodeRows16(mma, *ti, K);
  const bool xf16 = mma && (xform < 0 ? qlinearXf16(type, tokens, rows16) : xform == 1);
  const int64_t weightBytes = launchBytes > 0 ? launchBytes : qlinearRowBytes(type, K) * N;
  const bool xi8 = mma && (xform < 0 ? qlinearXi8(type, tokens, weightBytes) : xform == 2);
  const int xWarp = !mma || xf16 || xi8 || !xWarpOk ? 0
                    : xform < 0        ? qlinearXWarp(type, tokens)
                    : xform >= 3       ? xform - 1
                                       : 0;
  // Candidates, preferred first. mma: a 2-deep ring (the shared memory it saves buys resident
  // CTAs, which hid latency better than deeper rings on the H200: Q8_0 lm_head T = 1 at 2 stages
  // 340 us, 4 stages 385 us), then larger x chunks (fewer CTA barriers).
  // With more tokens, 8 warps are preferred and 4 the fallback (BF16's 8 KB steps).
  struct Cand {
    int warps, stages;
    int64_t kc;
  };
  std::vector<Cand> cands;
  if (mma) {
    // With an x warp, first four product warps and 256-element chunks, in the first pass that
    // leaves two CTAs per SM: its chunks cost no CTA barrier, and on the H200 (SM120 tiles, eight
    // tokens) 256-element chunks beat 512 for every type (Q8_0 head 277 against 288 us, Q4_0
    // 194 against 206) and eight warps lost to four (Q4_0 head 198 against 194).
    if (xWarp)
      cands.push_back({4, 2, kStep});
    std::vector<int> warpChoices = {mmaWarps(tokens)};
    if (warpChoices[0] != 4)
      warpChoices.push_back(4);
    for (int warps : warpChoices)
      for (int64_t kc : chunkSizes(K, kStep))
        cands.push_back({warps, 2, kc});
    for (int stages : {3, 4})
      for (int64_t kc : chunkSizes(K, 1024))
        cands.push_back({warpChoices[0], stages, kc});
  } else {
    for (int64_t kc : chunkSizes(K, kStep))
      cands.push_back({kFmaWarps, 0, kc});
  }
  // Passes: candidates that leave room for three CTAs per SM, then two, then any that fit, each
  // pass above a smallest x chunk (the last pass takes any). mma path, first pass: a chunk of
  // one 256-element step pays a CTA barrier and an x staging per step, which a third CTA did not
  // buy back (H200, Q6_K at one token, where only such chunks leave room for three on SM120:
  // lm_head 245 us against 227 with 2048-element chunks at two CTAs). Above four tokens chunks
  // of at least 1024 for three CTAs, then for two, come first: a barrier and a staging per two
  // steps cost the K-quants 2-7% on the H200 (Q4_K head at T = 8 214.8 us with 512, 204.3 with
  // 1024, o 32.4 / 30.0); SM120's lower bandwidth per SM stays busy with two CTAs. fp32 path,
  // first two passes: lane l takes 32-element sub-blocks l, l + 32, ... of a chunk, so a chunk
  // under 1024 elements idles lanes (F16 lm_head at eight tokens 2614 us with 512, 1917 with
  // 1024).
  // bench/RESULTS.md 2026-11-30.
  struct Pass {
    int64_t budget, minChunk;
  };
  const int64_t three = std::min(comfortable, tiles.sharedPerSM / 3 - kReservedSmem - kStaticSmem);
  const Pass fp32Passes[] = {{three, 1024}, {comfortable, 1024}, {limit, 0}};
  const Pass manyPasses[] = {
      {three, 1024}, {comfortable, 1024}, {three, 512}, {comfortable, 0}, {limit, 0}};
  const Pass mmaPasses[] = {{three, 512}, {comfortable, 0}, {limit, 0}};
  const Pass xWarpPasses[] = {{comfortable, 0}, {limit, 0}};
  const Pass *passes = !mma       ? fp32Passes
                       : xWarp    ? xWarpPasses
                       : tokens > 4 ? manyPasses
                                    : mmaPasses;
  const int npasses = !mma || tokens <= 4 ? 3 : xWarp ? 2 : 5;
  for (int pass = 0; pass < npasses; ++pass) {
    const int64_t budget = passes[pass].budget;
    const bool last = pass + 1 == npasses;
    for (const Cand &c : cands) {
      const int warps = c.warps;
      const int64_t smem = qlinearDecodeSmem(type, mma, tokens, warps, c.stages, int(c.kc), xf16,
                                             rows16, xi8, xWarp);
      std::string name =
          mma ? mmaDecodeName(tname, tokens, warps, c.stages, c.kc)
              : "qlinear_mv_f32_" + tname + "_" + act + "_t" + std::to_string(tokens) + "_r" +
                    std::to_string(fmaRowsPerWarp(tokens)) + "_kc" + std::to_string(c.kc);
      if (smem > budget || c.kc < passes[pass].minChunk) {
        if (last)
          rejected += "\n  " + name + ": needs " + std::to_string(smem) + " B shared memory, " +
                      tiles.name + " allows " + std::to_string(limit) + " B";
        continue;
      }
      // A lone qlinear_decode: not glm.linears (no x warp either) nor a pair's product.
      fillDecode(cfg, name, mma, xf16, xi8, xWarp, warps, c.stages, c.kc, smem, *ti, K, N,
                 launchBytes, xWarpOk && launchBytes == 0);
      return cfg;
    }
  }
  // The x warp's buffers may leave no chunk size room (one chunk of all of a long K): without.
  if (xWarp && xform < 0)
    return selectImpl(tiles, type, K, N, tokens, actF32, launchBytes, fp32Path, xform, false);
  return makeStatus(StatusCode::kUnimplemented, "no qlinear_mv variant fits %s:%s", tiles.name,
                    rejected.c_str());
}

} // namespace

glm5rt::StatusOr<QLinearConfig> selectQLinear(const Target &tiles, uint32_t type, int64_t K,
                                              int64_t N, int tokens, bool actF32,
                                              int64_t launchBytes) {
  return selectImpl(tiles, type, K, N, tokens, actF32, launchBytes, false);
}

QLinearConfig withoutLateFill(QLinearConfig q) {
  const std::string lf = "_lf"; // qlinearDecodeSuffix's last piece
  if (q.lateFill && q.variant.size() >= lf.size() &&
      q.variant.compare(q.variant.size() - lf.size(), lf.size(), lf) == 0)
    q.variant.resize(q.variant.size() - lf.size());
  q.lateFill = false;
  return q;
}

QLinearConfig gateUpDecodeConfig(QLinearConfig q, QLinearKind kind) {
  q = withoutLateFill(q);
  q.kind = kind;
  q.entry = kind == QLinearKind::kGateUp ? "qlinear_decode_gate_up" : "moe_expert_decode_gate_up";
  const std::string prefix = "qlinear_mv";
  if (q.variant.compare(0, prefix.size(), prefix) == 0)
    q.variant.replace(0, prefix.size(),
                      kind == QLinearKind::kGateUp ? "qlinear_gate_up" : "moe_mv_gate_up");
  // Gate and up share one pipeline on the mma path: a CTA's warps split between the two
  // matrices, so it covers half its rows of h. Measured on the H200 (bench/RESULTS.md
  // 2026-11-30, "MoE gate/up in one pipeline").
  if (q.mma)
    q.rowsPerCta /= 2;
  return q;
}

glm5rt::StatusOr<QLinearConfig> selectGateUp(const Target &tiles, uint32_t type, int64_t K,
                                             int64_t N, bool actF32) {
  auto q = selectQLinear(tiles, type, K, N, 1, actF32, 2 * qlinearRowBytes(type, K) * N);
  if (!q.isOk())
    return q.status().withContext("qlinear_decode_gate_up");
  if (q->kind != QLinearKind::kDecode)
    return makeStatus(StatusCode::kUnimplemented, "qlinear_decode_gate_up: %s is not a decode "
                      "kernel", q->variant.c_str());
  return gateUpDecodeConfig(*q, QLinearKind::kGateUp);
}

glm5rt::StatusOr<QLinearConfig> selectLinears(const Target &tiles, uint32_t type, int64_t K,
                                              int64_t sumN, int tokens, bool actF32) {
  // (The x warp is qlinear_decode's alone.)
  auto q = selectImpl(tiles, type, K, sumN, tokens, actF32, 0, false, -1, false);
  if (!q.isOk())
    return q.status().withContext("qlinear_decode_multi");
  if (q->kind != QLinearKind::kDecode)
    return makeStatus(StatusCode::kUnimplemented,
                      "qlinear_decode_multi: %s is not a decode kernel", q->variant.c_str());
  q->kind = QLinearKind::kMulti;
  q->entry = "qlinear_decode_multi";
  const std::string prefix = "qlinear_mv";
  if (q->variant.compare(0, prefix.size(), prefix) == 0)
    q->variant.replace(0, prefix.size(), "qlinear_multi");
  return q;
}

glm5rt::StatusOr<QLinearConfig> qlinearDecodeFp32(const Target &tiles, uint32_t type, int64_t K,
                                                  int64_t N, int tokens) {
  if (tokens < 1 || tokens > 8)
    return makeStatus(StatusCode::kInvalidArgument,
                      "the fp32 decode path takes 1-8 tokens, not %d", tokens);
  return selectImpl(tiles, type, K, N, tokens, false, 0, true);
}

namespace {
// Why the mma decode step of `ti` cannot take x as fp16 (x16) or int8 (x8) at `tokens`; null
// when it can.
const char *xformProblem(const TypeInfo &ti, bool x16, bool x8, bool xw, int tokens) {
  if (x16 ? ti.xf16Gran < 0 : ti.id == kF16)
    return "fp16 x is for Q4_K, Q5_K, Q8_0 and F16 (which takes nothing else)";
  if (x8 && (!xi8Type(ti.id) || tokens < 2))
    return "int8 x is for Q4_0, Q4_K, Q5_K and Q6_K at two tokens or more";
  if (xw && (plain16(ti) || tokens <= 4))
    return "an x warp is for Q4_0, Q8_0, Q4_K, Q5_K and Q6_K above four tokens";
  return nullptr;
}
} // namespace

glm5rt::StatusOr<QLinearConfig> qlinearDecodeXForm(const Target &tiles, uint32_t type, int64_t K,
                                                   int64_t N, int tokens, int xform) {
  const TypeInfo *ti = findType(type);
  if (const char *problem =
          ti ? xformProblem(*ti, xform == 1, xform == 2, xform >= 3, tokens) : nullptr)
    return makeStatus(StatusCode::kInvalidArgument, "%s at %d tokens: %s", ti->name, tokens,
                      problem);
  return selectImpl(tiles, type, K, N, tokens, false, 0, false, xform);
}

glm5rt::StatusOr<QLinearConfig> qlinearDecodeWith(const Target &tiles, uint32_t type, int64_t K,
                                                  int64_t N, int tokens, int warps, int stages,
                                                  int64_t kc, int xform) {
  auto cfg = selectQLinear(tiles, type, K, N, tokens, false);
  if (!cfg.isOk())
    return cfg;
  const TypeInfo &ti = *findType(type);
  // (The registry's own choice may be the fp32 path: BF16 and F16 on large products.)
  if (cfg->kind != QLinearKind::kDecode || !ti.mmaStep || !tiles.mmaSync)
    return makeStatus(StatusCode::kInvalidArgument,
                      "%s: a decode tile choice needs the mma decode path", cfg->variant.c_str());
  const bool rows16 = decodeRows16(true, ti, K);
  const bool x16 = xform < 0 ? qlinearXf16(type, tokens, rows16) : xform == 1;
  const bool x8 = xform < 0 ? qlinearXi8(type, tokens, qlinearRowBytes(type, K) * N) : xform == 2;
  const int xw = xform < 0 ? (!x16 && !x8 ? qlinearXWarp(type, tokens) : 0)
                 : xform >= 3 ? xform - 1
                              : 0;
  if (const char *problem = xformProblem(ti, x16, x8, xw > 0, tokens))
    return makeStatus(StatusCode::kInvalidArgument, "%s: %s", cfg->variant.c_str(), problem);
  const int64_t smem =
      qlinearDecodeSmem(type, true, tokens, warps, stages, int(kc), x16, rows16, x8, xw);
  const int64_t limit = tiles.maxSharedPerBlock - kStaticSmem;
  if (warps < 1 || warps > 16 || stages < 2 || kc < kStep || kc % kStep != 0 || smem > limit)
    return makeStatus(StatusCode::kInvalidArgument,
                      "no decode tiles w%d s%d kc%lld for %s: need 1..16 warps, >= 2 stages, "
                      "kc a multiple of %d, and %lld B shared memory within %s's %lld B",
                      warps, stages, static_cast<long long>(kc), cfg->variant.c_str(), kStep,
                      static_cast<long long>(smem), tiles.name, static_cast<long long>(limit));
  fillDecode(*cfg, mmaDecodeName(lower(ti.name), tokens, warps, stages, kc), true, x16, x8, xw,
             warps, stages, kc, smem, ti, K, N, 0, true);
  return cfg;
}

glm5rt::StatusOr<QLinearConfig> selectQEmbed(const Target &tiles, uint32_t type, int64_t H,
                                             bool actF32) {
  const TypeInfo *ti = findType(type);
  if (!ti)
    return makeStatus(StatusCode::kUnimplemented,
                      "no qembed variant for table type %s (candidates: qembed: supports %s)",
                      qlinearTypeName(type).c_str(), supportedList().c_str());
  const int64_t granule = std::max(ti->blockElems, 32);
  if (H <= 0 || H % granule != 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "no qembed variant for H=%lld (candidates: qembed: needs H a positive "
                      "multiple of %lld for %s)",
                      static_cast<long long>(H), static_cast<long long>(granule), ti->name);
  (void)tiles; // the lookup is memory-bound and uses no target-specific instruction
  QLinearConfig cfg;
  cfg.kind = QLinearKind::kEmbed;
  cfg.entry = "qlinear_embed";
  cfg.type = type;
  cfg.actF32 = actF32;
  cfg.threads = 128;
  cfg.warps = 4;
  cfg.variant = "qembed_" + lower(ti->name) + (actF32 ? "_f32" : "_bf16");
  return cfg;
}

glm5rt::launch::QLinearParams qlinearLaunchParams(const QLinearConfig &cfg) {
  glm5rt::launch::QLinearParams p;
  p.kind = cfg.kind == QLinearKind::kPrefill ? glm5rt::launch::QLinearKind::kPrefill
           : cfg.kind == QLinearKind::kEmbed ? glm5rt::launch::QLinearKind::kEmbed
                                             : glm5rt::launch::QLinearKind::kDecode;
  p.threads = cfg.threads;
  p.dynamicSmem = cfg.dynamicSmem;
  p.tokens = cfg.tokens;
  p.rowsPerCta = cfg.rowsPerCta;
  p.tileM = cfg.tileM;
  p.tileN = cfg.tileN;
  return p;
}

QLinearLaunch qlinearLaunch(const QLinearConfig &cfg, const Target &device, int64_t T, int64_t N,
                            int64_t K, int64_t forceSplits) {
  return glm5rt::launch::qlinearGrid(qlinearLaunchParams(cfg), device.smCount, T, N, K,
                                     forceSplits);
}

std::string qlinearSource(const QLinearConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += "#define GLM_WTYPE " + std::to_string(cfg.type) + "\n";
  if (cfg.actF32)
    s += "#define GLM_ACT_F32 1\n";
  const int kind = cfg.kind == QLinearKind::kDecode         ? 0
                   : cfg.kind == QLinearKind::kPrefill      ? 1
                   : cfg.kind == QLinearKind::kEmbed        ? 2
                   : cfg.kind == QLinearKind::kExpertGateUp ? 3
                   : cfg.kind == QLinearKind::kExpertDown   ? 4
                   : cfg.kind == QLinearKind::kGateUp       ? 5
                                                            : 6;
  s += "#define GLM_QL_KIND " + std::to_string(kind) + "\n";
  if (cfg.kind != QLinearKind::kPrefill && cfg.kind != QLinearKind::kEmbed) {
    s += "#define GLM_TOKENS " + std::to_string(cfg.tokens) + "\n";
    s += "#define GLM_WARPS " + std::to_string(cfg.warps) + "\n";
    s += "#define GLM_KC " + std::to_string(cfg.kChunk) + "\n";
    s += "#define GLM_MV_USE_MMA " + std::to_string(cfg.mma ? 1 : 0) + "\n";
    if (cfg.mma) {
      s += "#define GLM_STAGES " + std::to_string(cfg.stages) + "\n";
      s += "#define GLM_MV_XF16 " + std::to_string(cfg.xf16 ? 1 : 0) + "\n";
      if (cfg.xi8)
        s += "#define GLM_MV_XI8 1\n";
      if (cfg.xWarp)
        s += "#define GLM_MV_XWARP " + std::to_string(cfg.xWarp) + "\n";
      if (cfg.lateFill)
        s += "#define GLM_MV_LATE_FILL 1\n";
    }
    // The copies' memory path, overridable by a definition before the source (benchmarks' A/B).
    if (cfg.l2Prefetch)
      s += "#ifndef GLM_MV_PF\n#define GLM_MV_PF " + std::to_string(cfg.l2Prefetch) + "\n#endif\n";
    if (cfg.l1Copies)
      s += "#ifndef GLM_MV_L1\n#define GLM_MV_L1 1\n#endif\n";
    if (cfg.rows16)
      s += "#define GLM_MV_ROWS16 1\n";
    else
      s += "#define GLM_RPW " + std::to_string(cfg.rowsPerWarp) + "\n";
  }
  s += "#include \"qlinear.cuh\"\n";
  return s;
}

} // namespace glm5c::codegen
