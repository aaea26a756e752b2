// Registry entries of the MoE router and routed-expert kernels (codegen/kernels/moe_experts.cuh):
// variant choice and rejections, launch geometry and instantiation sources.
#pragma once

#include "codegen/registry/QLinear.h"
#include "codegen/target/Target.h"
#include "runtime/launch/Moe.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>

namespace glm5c::codegen {

// moe_router(x, w, bias, logits, counters, weights, ids, scale): the router product and
// moe.cuh's gate in one launch.
struct MoeRouterConfig {
  std::string variant; // "moe_router_f32_bf16_e256_k8_h6144"
  std::string entry = "moe_router";
  uint32_t type = 0; // ggml type of the router weight {H, E}: F32 or BF16
  int64_t experts = 0, topk = 0, hidden = 0;
  bool normalize = true;
  bool actF32 = false;
  int threads = 256;
  int64_t dynamicSmem = 0; // (H + E) * 4: x as fp32, then the token's logits
};

// Where the router launches for T tokens: the runtime's definition (runtime/launch/Moe.h).
using MoeRouterLaunch = glm5rt::launch::MoeRouterGrid;

// Picks the router for a weight {H, E} of `weightType` (F32 or BF16), top-k of E. On failure the
// status names the limit that rejected it.
glm5rt::StatusOr<MoeRouterConfig> selectMoeRouter(const Target &tiles, uint32_t weightType,
                                                  int64_t experts, int64_t topk, int64_t hidden,
                                                  bool normalize = true, bool actF32 = false);
// Splits sized for ~2 waves of `device`'s SMs (at least 8 experts per CTA, one per warp).
MoeRouterLaunch moeRouterLaunch(const MoeRouterConfig &cfg, const Target &device, int64_t T);
// The launch parameters the plan records (Kernel.params).
glm5rt::launch::MoeRouterParams moeRouterLaunchParams(const MoeRouterConfig &cfg);
std::string moeRouterSource(const MoeRouterConfig &cfg);

enum class MoeFfnPhase { kGateUp, kDown };

// One phase of the routed experts over the expert-major grouping of moe.cuh's moe_group
// (offsets [E + 1], pair_of [T * k]):
//   moe_expert_gate_up(x [T, H], w_gate, w_up {H, F, E}, offsets, pair_of, h [T * k, F])
//     h row q (expert-major position) = silu(gate_e x[t]) * (up_e x[t]), t = pair_of[q] / k;
//   moe_expert_down(h, w_down {F, H, E}, offsets, pair_of, out fp32 [T * k, H])
//     out row pair_of[q] = down_e h[q].
struct MoeFfnConfig {
  std::string variant; // "moe_gate_up_mma_q4_k_bf16_e256_k8_h6144_f2048"
  std::string entry;   // "moe_expert_gate_up" or "moe_expert_down"
  MoeFfnPhase phase = MoeFfnPhase::kGateUp;
  uint32_t type = 0; // the phase's weight type (gate and up share one)
  bool actF32 = false;
  bool mma = false; // bf16 mma.sync tiles (bf16 activations); else the exact fp32 SIMT path
  int64_t experts = 0, topk = 0, hidden = 0, ffn = 0;
  int tileM = 64; // expert-major positions per tile
  int tileN = 0;  // weight rows per tile (gate/up: half gate, half up)
  int tileK = 0;
  int outRows = 0; // output rows per CTA: f (gate/up) or columns of H (down); the grid's x unit
  int threads = 256;
  int64_t dynamicSmem = 0; // equals the template's GLM_MX_SMEM_BYTES
};

// The same two phases for a few pairs (decode): qlinear.cuh's decode product per (token,
// expert) pair, moe_expert_decode_gate_up(w_gate, w_up, x, ids, h [T k, F], ws, counters, first,
// experts, topk, F, H, k_per_split) with SwiGLU in its epilogue and moe_expert_decode_down(w_down,
// h, ids, out fp32 [T k, H], ws, counters, first, experts, F, H, k_per_split); grid
// (ceil(rows / rowsPerCta), T k, K splits) (runtime/launch moeDecodeGrid), no moe_group. Each
// pair reads its expert's weights, so the runtime takes this path only while pairs rarely share
// an expert (runtime/launch kMoeDecodeMaxTokens).
struct MoeFfnConfigs {
  MoeFfnConfig gateUp, down;
  QLinearConfig decodeGateUp, decodeDown;
};

// A decode product's config (selectQLinear or qlinearDecodeWith, one token) as the MoE decode
// phase: its entry and name (gate/up: gateUpDecodeConfig).
QLinearConfig moeDecodePhase(QLinearConfig q, bool gateUp);

// Grid of one phase for T tokens: the runtime's definition (runtime/launch/Moe.h).
using MoeFfnLaunch = glm5rt::launch::MoeFfnGrid;

// Picks both phases for gate and up {H, F, E} of gateType / upType (equal) and down {F, H, E} of
// downType (any supported type: e.g. Q4_K gate/up with Q6_K down). On failure the status lists
// what rejected it.
glm5rt::StatusOr<MoeFfnConfigs> selectMoeExpertFfn(const Target &tiles, uint32_t gateType,
                                                   uint32_t upType, uint32_t downType,
                                                   int64_t experts, int64_t topk, int64_t hidden,
                                                   int64_t ffn, bool actF32 = false);
MoeFfnLaunch moeFfnLaunch(const MoeFfnConfig &cfg, int64_t T);
glm5rt::launch::MoeFfnParams moeFfnLaunchParams(const MoeFfnConfig &cfg);
std::string moeFfnSource(const MoeFfnConfig &cfg);

} // namespace glm5c::codegen
