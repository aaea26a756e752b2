// head_linear and slice_copy constraints, chunk choice, launch geometry (see HeadLinear.h).
#include "codegen/registry/HeadLinear.h"

#include "codegen/registry/QLinear.h"

#include <algorithm>
#include <cctype>

namespace glm5c::codegen {

using glm5rt::makeStatus;
using glm5rt::StatusCode;

namespace {

constexpr int kWarps = 4;          // GLM_HL_WARPS
constexpr int kMinRowsPerCta = 32; // x staged per CTA: at most 1/4 of its weights at T = 8
constexpr int kChunkCandidates[] = {8, 4, 2, 1}; // GLM_HL_TC, preferred first
constexpr int kCtasPerSmGoal = 4;                // head_linear's __launch_bounds__ minimum
constexpr int64_t kReservedSmem = 1024;          // per CTA, taken by the hardware on sm_80+

// dequant.cuh's GLM_QK for the types it handles: 256 for the K-quants; the others are read in
// 32-element blocks (plain types in 32-element sub-blocks).
int64_t blockElems(uint32_t type) { return type == 12 || type == 13 || type == 14 ? 256 : 32; }

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The largest power of two <= 8 dividing the sub-block count: every lane of a row then reads as
// many sub-blocks, and up to 8 distinct padded sub-blocks of x are bank-conflict-free.
int lanesPerRow(int64_t nsub) {
  for (int l : {8, 4, 2})
    if (nsub % l == 0)
      return l;
  return 1;
}

std::string define(const char *name, int64_t v) {
  return std::string("#define ") + name + " " + std::to_string(v) + "\n";
}

} // namespace

int64_t headLinearSmem(int64_t a, int tokensPerChunk) {
  return int64_t(tokensPerChunk) * (a / 32 * 36) * 4; // GLM_HL_TC x GLM_HL_XROW floats
}

glm5rt::StatusOr<HeadLinearConfig> selectHeadLinear(const Target &tiles, uint32_t type, int64_t a,
                                                    int64_t b, int64_t heads, bool sharedInput,
                                                    bool actF32) {
  const std::string act = actF32 ? "f32" : "bf16";
  if (!qlinearSupportsType(type))
    return makeStatus(StatusCode::kUnimplemented,
                      "no head_linear variant for weight type %s (candidates: head_linear: "
                      "supports F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K)",
                      qlinearTypeName(type).c_str());
  const int64_t granule = blockElems(type);
  const std::string tname = qlinearTypeName(type);
  if (a <= 0 || a % granule != 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "no head_linear variant for a=%lld (candidates: head_linear: needs a a "
                      "positive multiple of %lld, the %s block and the 32-element sub-block)",
                      static_cast<long long>(a), static_cast<long long>(granule), tname.c_str());
  if (b <= 0 || b > (int64_t(1) << 30) || heads <= 0 || heads > 65535)
    return makeStatus(StatusCode::kInvalidArgument,
                      "no head_linear variant for b=%lld heads=%lld (candidates: head_linear: "
                      "needs 1 <= b <= 2^30 and 1 <= heads <= 65535, the grid's y)",
                      static_cast<long long>(b), static_cast<long long>(heads));

  HeadLinearConfig cfg;
  cfg.type = type;
  cfg.actF32 = actF32;
  cfg.sharedInput = sharedInput;
  cfg.a = a, cfg.b = b, cfg.heads = heads;
  cfg.lanesPerRow = lanesPerRow(a / 32);
  cfg.warps = kWarps;
  cfg.threads = kWarps * 32;
  const int rowsPerPass = kWarps * (32 / cfg.lanesPerRow);
  cfg.rowsPerCta = std::max(kMinRowsPerCta, rowsPerPass); // a multiple of rowsPerPass

  // Passes: chunks that leave room for the launch bound's CTAs per SM, then any that fit.
  const int64_t limit = tiles.maxSharedPerBlock;
  const int64_t comfortable = std::min(limit, tiles.sharedPerSM / kCtasPerSmGoal - kReservedSmem);
  std::string rejected;
  for (int pass = 0; pass < 2; ++pass)
    for (int tc : kChunkCandidates) {
      const int64_t smem = headLinearSmem(a, tc);
      const std::string name = "head_linear_" + lower(tname) + "_" + act + "_a" +
                               std::to_string(a) + "_l" + std::to_string(cfg.lanesPerRow) + "_tc" +
                               std::to_string(tc) + "_r" + std::to_string(cfg.rowsPerCta) +
                               (sharedInput ? "_shared" : "");
      if (smem > (pass == 0 ? comfortable : limit)) {
        if (pass == 1)
          rejected += "\n  " + name + ": needs " + std::to_string(smem) +
                      " B shared memory (x staged as fp32), " + tiles.name + " allows " +
                      std::to_string(limit) + " B";
        continue;
      }
      cfg.variant = name;
      cfg.tokensPerChunk = tc;
      cfg.dynamicSmem = smem;
      return cfg;
    }
  return makeStatus(StatusCode::kUnimplemented, "no head_linear variant fits %s for a=%lld:%s",
                    tiles.name, static_cast<long long>(a), rejected.c_str());
}

glm5rt::launch::HeadLinearParams headLinearLaunchParams(const HeadLinearConfig &cfg) {
  glm5rt::launch::HeadLinearParams p;
  p.threads = cfg.threads;
  p.dynamicSmem = cfg.dynamicSmem;
  p.b = cfg.b;
  p.heads = cfg.heads;
  p.rowsPerCta = cfg.rowsPerCta;
  p.tokensPerChunk = cfg.tokensPerChunk;
  return p;
}

HeadLinearLaunch headLinearLaunch(const HeadLinearConfig &cfg, const Target &device, int64_t T) {
  return glm5rt::launch::headLinearGrid(headLinearLaunchParams(cfg), device.smCount, T);
}

std::string headLinearSource(const HeadLinearConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += define("GLM_HL_KIND", 0);
  s += define("GLM_WTYPE", cfg.type);
  s += define("GLM_ACT_F32", cfg.actF32 ? 1 : 0);
  s += define("GLM_SHARED_INPUT", cfg.sharedInput ? 1 : 0);
  s += define("GLM_HL_A", cfg.a);
  s += define("GLM_HL_LPR", cfg.lanesPerRow);
  s += define("GLM_HL_TC", cfg.tokensPerChunk);
  s += define("GLM_HL_WARPS", cfg.warps);
  s += define("GLM_HL_ROWS", cfg.rowsPerCta);
  s += "#include \"head_linear.cuh\"\n";
  return s;
}

glm5rt::StatusOr<SliceConfig> selectSlice(const Target &tiles, bool actF32) {
  (void)tiles; // a memory-bound copy: no target-specific instruction or tile
  SliceConfig cfg;
  cfg.actF32 = actF32;
  cfg.variant = actF32 ? "slice_copy_f32" : "slice_copy_bf16";
  return cfg;
}

std::string sliceSource(const SliceConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += define("GLM_HL_KIND", 1);
  s += define("GLM_ACT_F32", cfg.actF32 ? 1 : 0);
  s += "#include \"head_linear.cuh\"\n";
  return s;
}

glm5rt::launch::SliceParams sliceLaunchParams(const SliceConfig &cfg) {
  glm5rt::launch::SliceParams p;
  p.threads = cfg.threads;
  p.actF32 = cfg.actF32;
  return p;
}

SliceLaunch sliceLaunch(const SliceConfig &cfg, const Target &device, int64_t rows, int64_t widthIn,
                        int64_t widthOut, int64_t offset) {
  return glm5rt::launch::sliceGrid(sliceLaunchParams(cfg), device.smCount, rows, widthIn,
                                   widthOut, offset);
}

} // namespace glm5c::codegen
