// Launch geometry of the quantized-linear family (codegen/kernels/qlinear.cuh), as a function
// of the parameters the compiler records per kernel in the plan (`Kernel.params`) and of the
// problem at run time. The one definition both sides use: codegen/registry's qlinearLaunch
// forwards here, so compile-time selection and run-time launch cannot disagree.
#pragma once

#include "runtime/launch/Params.h"
#include "runtime/schema/plan_generated.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace glm5rt::launch {

// K elements one decode split step covers (GLM_MV_STEP in qlinear.cuh).
inline constexpr int kQLinearKStep = 256;

enum class QLinearKind : int { kDecode = 0, kPrefill = 1, kEmbed = 2 };

// What the grid depends on besides the problem. Plan keys in brackets.
struct QLinearParams {
  QLinearKind kind = QLinearKind::kDecode; // [kind]
  int threads = 0;                         // the kernel's threads
  int64_t dynamicSmem = 0;                 // the kernel's dynamic shared memory
  int tokens = 0;                          // [tokens] decode: compiled token count
  int rowsPerCta = 0;                      // [rows_per_cta] decode: weight rows per CTA
  int tileM = 0, tileN = 0;                // [tile_m, tile_n] prefill: tokens x rows per CTA
};

struct QLinearGrid {
  unsigned gridX = 1, gridY = 1, threads = 0, smem = 0;
  int kPerSplit = 0;          // decode: K elements per split (a multiple of kQLinearKStep)
  int splits = 1;             // decode: gridY
  int64_t workspaceBytes = 0; // decode, splits > 1: fp32 partials [splits, T, N]
  int64_t counters = 0;       // decode, splits > 1: uint32 counters, zeroed once before first use
};

// Decode splits of K for `tiles` row tiles of kSteps 256-element steps on `smCount` SMs: the
// least per-SM load that keeps at least 7.5 warps on every SM (see the definition).
int64_t qlinearSplits(const QLinearParams &p, int smCount, int64_t tiles, int64_t kSteps);

// y[T, N] = x[T, K] W^T on a device of `smCount` SMs (it sizes the decode split:
// qlinearSplits). Embedding: one CTA per token. forceSplits > 0 asks for that many decode
// splits instead (benchmarks; clamped to the K steps).
QLinearGrid qlinearGrid(const QLinearParams &p, int smCount, int64_t T, int64_t N, int64_t K,
                        int64_t forceSplits = 0);

// glm.linears (qlinear.cuh kind 6, decode: p.tokens tokens): products m < N.size() (2..4) of x
// [T, K] with weights {K, N[m]}, each one's row tiles consecutive in x, split as one product of
// all the tiles; workspaceBytes holds every product's partials.
QLinearGrid qlinearMultiGrid(const QLinearParams &p, int smCount, const std::vector<int64_t> &N,
                             int64_t K, int64_t forceSplits = 0);

// qlinear_decode_multi's first argument: product m's weight and output (as device addresses)
// and its N, unused slots zero. The kernel's `glm_ql_multi` has this layout.
struct QLinearMultiArgs {
  uint64_t w[4] = {0, 0, 0, 0};
  uint64_t y[4] = {0, 0, 0, 0};
  int32_t n[4] = {0, 0, 0, 0};
};
static_assert(sizeof(QLinearMultiArgs) == 80, "glm_ql_multi: 4 + 4 pointers and 4 ints");

// The plan's key/value form of `p` (what the compiler writes) and back (what the runtime reads;
// a missing or out-of-range key is an error naming it).
ParamList qlinearParamList(const QLinearParams &p);
StatusOr<QLinearParams> qlinearParamsOf(const glm5::plan::Kernel &kernel);

} // namespace glm5rt::launch
