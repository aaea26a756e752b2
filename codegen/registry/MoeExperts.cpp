// MoE router and routed-expert instantiation, rejections and launch geometry (see MoeExperts.h).
#include "codegen/registry/MoeExperts.h"

#include "codegen/registry/QLinear.h"

#include <algorithm>
#include <cctype>

namespace glm5c::codegen {

using glm5rt::makeStatus;
using glm5rt::StatusCode;

namespace {

constexpr uint32_t kF32 = 0, kBF16 = 30;
constexpr int64_t kStaticSmem = 64; // moe_router's flag and per-part sums (and alignment slack)
constexpr int kRouterWarps = 8; // moe_experts.cuh GLM_RT_THREADS / 32
constexpr int64_t kMaxExperts = 4096; // moe_group's shared-memory counts
// The templates' tiles (moe_experts.cuh): bf16 mma 64 x 128 x 64, f32 SIMT 64 x 64 x 32.
constexpr int kTileM = 64;

std::string lower(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

long long ll(int64_t v) { return static_cast<long long>(v); }

// Elements a reduction over weights of `type` must be a multiple of: the block (256 for the
// K-quants Q4_K, Q5_K, Q6_K) and the 32-element sub-block glm_dq32 reads.
int64_t granule(uint32_t type) { return type == 12 || type == 13 || type == 14 ? 256 : 32; }

} // namespace

glm5rt::StatusOr<MoeRouterConfig> selectMoeRouter(const Target &tiles, uint32_t weightType,
                                                  int64_t experts, int64_t topk, int64_t hidden,
                                                  bool normalize, bool actF32) {
  if (weightType != kF32 && weightType != kBF16)
    return makeStatus(StatusCode::kUnimplemented,
                      "no moe_router variant for router weight type %s (candidates: moe_router: "
                      "F32 or BF16)",
                      qlinearTypeName(weightType).c_str());
  if (experts <= 0 || experts > 1024)
    return makeStatus(StatusCode::kUnimplemented,
                      "no moe_router variant for %lld experts (candidates: moe_router: one warp "
                      "gates 1..1024 experts, 32 per lane)",
                      ll(experts));
  if (topk <= 0 || topk > 32 || topk > experts)
    return makeStatus(StatusCode::kUnimplemented,
                      "no moe_router variant choosing %lld of %lld experts (candidates: "
                      "moe_router: 1..min(32, E), one lane per slot)",
                      ll(topk), ll(experts));
  if (hidden <= 0 || hidden % 32 != 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "no moe_router variant for H=%lld (candidates: moe_router: needs H a "
                      "positive multiple of 32)",
                      ll(hidden));
  MoeRouterConfig cfg;
  cfg.type = weightType;
  cfg.experts = experts;
  cfg.topk = topk;
  cfg.hidden = hidden;
  cfg.normalize = normalize;
  cfg.actF32 = actF32;
  cfg.threads = 32 * kRouterWarps;
  cfg.dynamicSmem = (hidden + experts) * 4;
  cfg.variant = "moe_router_" + lower(qlinearTypeName(weightType)) + (actF32 ? "_f32" : "_bf16") +
                "_e" + std::to_string(experts) + "_k" + std::to_string(topk) + "_h" +
                std::to_string(hidden) + (normalize ? "" : "_nonorm");
  const int64_t limit = tiles.maxSharedPerBlock - kStaticSmem;
  if (cfg.dynamicSmem > limit)
    return makeStatus(StatusCode::kUnimplemented,
                      "no moe_router variant fits %s:\n  %s: needs %lld B shared memory (x and "
                      "logits in fp32), %s allows %lld B",
                      tiles.name, cfg.variant.c_str(), ll(cfg.dynamicSmem), tiles.name, ll(limit));
  return cfg;
}

glm5rt::launch::MoeRouterParams moeRouterLaunchParams(const MoeRouterConfig &cfg) {
  glm5rt::launch::MoeRouterParams p;
  p.threads = cfg.threads;
  p.dynamicSmem = cfg.dynamicSmem;
  p.experts = cfg.experts;
  return p;
}

MoeRouterLaunch moeRouterLaunch(const MoeRouterConfig &cfg, const Target &device, int64_t T) {
  return glm5rt::launch::moeRouterGrid(moeRouterLaunchParams(cfg), device.smCount, T);
}

std::string moeRouterSource(const MoeRouterConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += "#define GLM_MOE_KIND 0\n";
  s += "#define GLM_WTYPE " + std::to_string(cfg.type) + "\n";
  s += "#define GLM_ACT_F32 " + std::to_string(cfg.actF32 ? 1 : 0) + "\n";
  s += "#define GLM_EXPERTS " + std::to_string(cfg.experts) + "\n";
  s += "#define GLM_TOPK_E " + std::to_string(cfg.topk) + "\n";
  s += "#define GLM_HIDDEN " + std::to_string(cfg.hidden) + "\n";
  s += "#define GLM_NORMALIZE " + std::to_string(cfg.normalize ? 1 : 0) + "\n";
  s += "#include \"moe_experts.cuh\"\n";
  return s;
}

glm5rt::StatusOr<MoeFfnConfigs> selectMoeExpertFfn(const Target &tiles, uint32_t gateType,
                                                   uint32_t upType, uint32_t downType,
                                                   int64_t experts, int64_t topk, int64_t hidden,
                                                   int64_t ffn, bool actF32) {
  for (uint32_t t : {gateType, upType, downType})
    if (!qlinearSupportsType(t))
      return makeStatus(StatusCode::kUnimplemented,
                        "no moe_expert variant for weight type %s (candidates: moe_expert_gate_up, "
                        "moe_expert_down: support F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K)",
                        qlinearTypeName(t).c_str());
  if (gateType != upType)
    return makeStatus(StatusCode::kUnimplemented,
                      "no moe_expert_gate_up variant for gate %s with up %s (candidates: "
                      "moe_expert_gate_up: one instantiation dequantizes both, so they share a "
                      "type)",
                      qlinearTypeName(gateType).c_str(), qlinearTypeName(upType).c_str());
  if (experts <= 0 || experts > kMaxExperts || topk <= 0 || topk > experts)
    return makeStatus(StatusCode::kInvalidArgument,
                      "no moe_expert variant for E=%lld k=%lld (candidates: moe_expert_gate_up, "
                      "moe_expert_down: need 1 <= E <= %lld (moe_group's counts), 1 <= k <= E)",
                      ll(experts), ll(topk), ll(kMaxExperts));
  const int64_t gH = granule(gateType), gF = granule(downType);
  if (hidden <= 0 || hidden % gH != 0 || ffn <= 0 || ffn % gF != 0)
    return makeStatus(StatusCode::kInvalidArgument,
                      "no moe_expert variant for H=%lld F=%lld (candidates: moe_expert_gate_up: "
                      "needs H a positive multiple of %lld (the %s block and the 32-element "
                      "sub-block); moe_expert_down: needs F a positive multiple of %lld (%s))",
                      ll(hidden), ll(ffn), ll(gH), qlinearTypeName(gateType).c_str(), ll(gF),
                      qlinearTypeName(downType).c_str());
  if (experts * std::max(hidden, ffn) >= (int64_t(1) << 31))
    return makeStatus(StatusCode::kInvalidArgument,
                      "no moe_expert variant for E=%lld H=%lld F=%lld (candidates: "
                      "moe_expert_gate_up, moe_expert_down: stacked row indices are 32-bit)",
                      ll(experts), ll(hidden), ll(ffn));
  if (!actF32 && !tiles.mmaSync)
    return makeStatus(StatusCode::kUnimplemented,
                      "no moe_expert variant for %s (candidates: moe_expert mma: needs mma.sync; "
                      "the f32 SIMT path needs f32 activations)",
                      tiles.name);

  MoeFfnConfigs out;
  const std::string act = actF32 ? "_f32" : "_bf16";
  const std::string dims = "_e" + std::to_string(experts) + "_k" + std::to_string(topk) + "_h" +
                           std::to_string(hidden) + "_f" + std::to_string(ffn);
  for (MoeFfnPhase phase : {MoeFfnPhase::kGateUp, MoeFfnPhase::kDown}) {
    const bool gu = phase == MoeFfnPhase::kGateUp;
    MoeFfnConfig c;
    c.phase = phase;
    c.entry = gu ? "moe_expert_gate_up" : "moe_expert_down";
    c.type = gu ? gateType : downType;
    c.actF32 = actF32;
    c.mma = !actF32;
    c.experts = experts;
    c.topk = topk;
    c.hidden = hidden;
    c.ffn = ffn;
    c.tileM = kTileM;
    c.threads = 256;
    if (c.mma) {
      c.tileN = 128;
      c.tileK = 64;
      c.outRows = gu ? 64 : 128;
      c.dynamicSmem = int64_t(c.tileM + c.tileN) * (c.tileK + 8) * 2; // GLM_MX_PROW bf16 rows
    } else {
      c.tileN = 64;
      c.tileK = 32;
      c.outRows = gu ? 32 : 64;
      c.dynamicSmem = int64_t(2) * c.tileK * (c.tileM + 4) * 4; // GLM_MX_FROW fp32 rows
    }
    c.variant = std::string(gu ? "moe_gate_up" : "moe_down") + (c.mma ? "_mma_" : "_simt_") +
                lower(qlinearTypeName(c.type)) + act + dims;
    const int64_t limit = tiles.maxSharedPerBlock;
    if (c.dynamicSmem > limit)
      return makeStatus(StatusCode::kUnimplemented,
                        "no moe_expert variant fits %s:\n  %s: needs %lld B shared memory, %s "
                        "allows %lld B",
                        tiles.name, c.variant.c_str(), ll(c.dynamicSmem), tiles.name, ll(limit));
    (gu ? out.gateUp : out.down) = c;
  }
  // The decode path: the quantized matrix-vector tiles of one token, per pair. A launch streams
  // at least one token's pairs (topk experts; gate and up are two products each).
  for (MoeFfnPhase phase : {MoeFfnPhase::kGateUp, MoeFfnPhase::kDown}) {
    const bool gu = phase == MoeFfnPhase::kGateUp;
    const int64_t launchBytes = gu ? topk * 2 * qlinearRowBytes(gateType, hidden) * ffn
                                   : topk * qlinearRowBytes(downType, ffn) * hidden;
    auto q = gu ? selectQLinear(tiles, gateType, hidden, ffn, 1, actF32, launchBytes)
                : selectQLinear(tiles, downType, ffn, hidden, 1, actF32, launchBytes);
    if (!q.isOk())
      return q.status().withContext(gu ? "moe_expert_decode_gate_up" : "moe_expert_decode_down");
    (gu ? out.decodeGateUp : out.decodeDown) = moeDecodePhase(*q, gu);
  }
  return out;
}

QLinearConfig moeDecodePhase(QLinearConfig q, bool gateUp) {
  if (gateUp)
    return gateUpDecodeConfig(q, QLinearKind::kExpertGateUp);
  q = withoutLateFill(q);
  q.kind = QLinearKind::kExpertDown;
  q.entry = "moe_expert_decode_down";
  const std::string prefix = "qlinear_mv";
  if (q.variant.compare(0, prefix.size(), prefix) == 0)
    q.variant.replace(0, prefix.size(), "moe_mv_down");
  return q;
}

glm5rt::launch::MoeFfnParams moeFfnLaunchParams(const MoeFfnConfig &cfg) {
  glm5rt::launch::MoeFfnParams p;
  p.threads = cfg.threads;
  p.dynamicSmem = cfg.dynamicSmem;
  p.gateUp = cfg.phase == MoeFfnPhase::kGateUp;
  p.actF32 = cfg.actF32;
  p.experts = cfg.experts;
  p.topk = cfg.topk;
  p.hidden = cfg.hidden;
  p.ffn = cfg.ffn;
  p.tileM = cfg.tileM;
  p.outRows = cfg.outRows;
  return p;
}

MoeFfnLaunch moeFfnLaunch(const MoeFfnConfig &cfg, int64_t T) {
  return glm5rt::launch::moeFfnGrid(moeFfnLaunchParams(cfg), T);
}

std::string moeFfnSource(const MoeFfnConfig &cfg) {
  std::string s = "// " + cfg.variant + "\n";
  s += "#define GLM_MOE_KIND " + std::string(cfg.phase == MoeFfnPhase::kGateUp ? "1" : "2") + "\n";
  s += "#define GLM_WTYPE " + std::to_string(cfg.type) + "\n";
  s += "#define GLM_ACT_F32 " + std::to_string(cfg.actF32 ? 1 : 0) + "\n";
  s += "#define GLM_EXPERTS " + std::to_string(cfg.experts) + "\n";
  s += "#define GLM_TOPK_E " + std::to_string(cfg.topk) + "\n";
  s += "#define GLM_HIDDEN " + std::to_string(cfg.hidden) + "\n";
  s += "#define GLM_FFN " + std::to_string(cfg.ffn) + "\n";
  s += "#include \"moe_experts.cuh\"\n";
  return s;
}

} // namespace glm5c::codegen
