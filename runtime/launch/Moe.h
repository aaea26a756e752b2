// Launch geometry of codegen/kernels/moe_experts.cuh: the router (projection + gate in one
// launch) and the two phases of the routed experts (gate/up, down), from the plan's kernel
// params (see Params.h) and the token count. codegen/registry's moeRouterLaunch and
// moeFfnLaunch forward here.
#pragma once

#include "runtime/launch/Params.h"
#include "runtime/launch/QLinear.h"

#include <cstdint>

namespace glm5rt::launch {

// Experts a router CTA scores at a time (moe_experts.cuh GLM_RT_EXPERTS_PER_ROUND: 8 warps, 4
// per expert): the fewest a split gets.
inline constexpr int kMoeRouterExpertsPerRound = 2;

// Plan keys in brackets.
struct MoeRouterParams {
  int threads = 0;
  int64_t dynamicSmem = 0;
  int64_t experts = 0; // [experts]
};

// Grid (T, splits); CTA (t, y) computes the logits of ceil(E / splits) experts and the last CTA
// of token t runs the gate.
struct MoeRouterGrid {
  unsigned gridX = 0, gridY = 1, threads = 0, smem = 0;
  int splits = 1;
  int64_t logitsBytes = 0; // fp32 [T, E], always written (the gate's input)
  int64_t counters = 0;    // splits > 1: uint32 [T], zeroed once before the first launch
};

// Splits sized for ~2 waves of the device's SMs, at least kMoeRouterExpertsPerRound experts per
// CTA.
MoeRouterGrid moeRouterGrid(const MoeRouterParams &p, int smCount, int64_t T);
ParamList moeRouterParamList(const MoeRouterParams &p);
StatusOr<MoeRouterParams> moeRouterParamsOf(const glm5::plan::Kernel &kernel);

struct MoeFfnParams {
  int threads = 0;
  int64_t dynamicSmem = 0;
  bool gateUp = true;  // [phase] 0 gate/up, 1 down
  bool actF32 = false; // [act_f32]
  int64_t experts = 0, topk = 0, hidden = 0, ffn = 0; // [experts, topk, hidden, ffn]
  int tileM = 0;   // [tile_m] expert-major positions per tile
  int outRows = 0; // [out_rows] output rows per CTA (the grid's x unit)
};

// x over the phase's output rows, y over an upper bound of the tile list,
// ceil((P + A (tileM - 1)) / tileM), P = T * k pairs, A = min(E, P); CTAs past the actual tile
// count return at once. T = 0 gives gridY = 0: skip the launch.
struct MoeFfnGrid {
  unsigned gridX = 0, gridY = 0, threads = 0, smem = 0;
  int64_t pairs = 0;
  int64_t hBytes = 0; // the intermediate h [T * k, F] as activations
};

MoeFfnGrid moeFfnGrid(const MoeFfnParams &p, int64_t T);

// Up to this many tokens a MoE step whose kernel has the per-pair decode kernels (extra kernels
// 3 and 4, qlinear.cuh kinds 3 and 4) runs them instead of the expert-major tiles: each of the
// T k pairs reads its expert's rows once, a matrix-vector product at the bandwidth of the decode
// kernels, where a tile of 64 positions holds one real row. Pairs sharing an expert read it
// again, so many tokens go to the tiles.
constexpr int64_t kMoeDecodeMaxTokens = 4;

// The per-pair decode kernels' grid for one phase: x row blocks of the phase's N output rows
// (F for gate/up, H for down), y the `pairs` pairs, z splits of the K range. The splits are
// qlinearSplits' over the row blocks of `activePairs` pairs -- the pairs expected on this rank's
// experts (all of them on one GPU; the others' CTAs exit at once) -- so a rank that holds a few
// of a token's experts still fills the device. With ctasPerSm > 0 (the CTAs of the phase's kernel
// one SM holds, as the driver reports them) the splits are moeDecodeSplits' instead.
// forceSplits > 0 asks for that many.
struct MoeDecodeGrid {
  unsigned gridX = 0, gridY = 0, gridZ = 1, threads = 0, smem = 0;
  int kPerSplit = 0;          // a multiple of kQLinearKStep
  int64_t workspaceBytes = 0; // splits > 1: fp32 partials [splits, pairs, (gate, up,) N]
  int64_t counters = 0;       // splits > 1: uint32 [pairs, gridX], zeroed once before first use
};
MoeDecodeGrid moeDecodeGrid(const QLinearParams &p, bool gateUp, int smCount, int64_t pairs,
                            int64_t activePairs, int64_t N, int64_t K, int ctasPerSm = 0,
                            int64_t forceSplits = 0);
// The K splits of a per-pair decode phase of `tiles` CTAs per split (row blocks x active pairs)
// over kSteps steps, where `wave` CTAs (SMs x CTAs per SM) run at once: the most splits whose
// CTAs still fit one wave, among the counts whose splits all have the same number of steps; at
// least 1. A rank's few pairs are a latency chain (ids, first weights, fixup), not a bandwidth
// load: each phase was fastest with about one wave of CTAs in the H200 sweep over 1-4 active
// pairs and 1-8 splits (bench/RESULTS.md 2026-12-02, fourth session), where qlinearSplits' load
// model took fewer splits at 2 and 4 pairs (10% slower).
int64_t moeDecodeSplits(int64_t tiles, int64_t kSteps, int64_t wave);
ParamList moeFfnParamList(const MoeFfnParams &p);
StatusOr<MoeFfnParams> moeFfnParamsOf(const glm5::plan::Kernel &kernel);

} // namespace glm5rt::launch
