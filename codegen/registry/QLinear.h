// Registry entries of the quantized linear family (codegen/kernels/qlinear.cuh): the decode
// matrix-vector kernel (T = 1..8), the prefill matrix-matrix kernel and the embedding lookup over
// GGUF weights; variant and tile choice per target, launch geometry, instantiation source.
#pragma once

#include "codegen/target/Target.h"
#include "runtime/launch/QLinear.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>

namespace glm5c::codegen {

// kExpertGateUp / kExpertDown: the decode product per (token, expert) pair of the MoE routed
// experts (qlinear.cuh kinds 3 and 4), tiled like kDecode with one token. kGateUp: glm.gate_up,
// silu(gate x) * (up x) of one token (kind 5, kind 3's code for one product). kMulti:
// glm.linears, two to four decode products of one x (kind 6, kind 0's code per CTA).
enum class QLinearKind { kDecode, kPrefill, kEmbed, kExpertGateUp, kExpertDown, kGateUp, kMulti };

struct QLinearConfig {
  std::string variant; // "qlinear_mv_mma_q4_k_bf16_t1_w4_s4_kc4096"
  std::string entry;   // "qlinear_decode", "qlinear_prefill" or "qlinear_embed"
  QLinearKind kind = QLinearKind::kDecode;
  uint32_t type = 0;   // ggml type id of the weight
  bool actF32 = false; // activations f32 (validation) instead of bf16
  bool mma = false;    // tensor-core path (bf16 activations)
  int tokens = 0;      // decode: GLM_TOKENS, 1..8; 0 otherwise (T is a kernel argument)
  int threads = 0;
  int warps = 0;
  int stages = 0;                      // mma decode: weight ring depth per warp
  int kChunk = 0;                      // decode: x elements staged per chunk (GLM_KC)
  int rowsPerWarp = 0;                 // decode: 16 (mma) or GLM_RPW (fp32 path)
  int rowsPerCta = 0;                  // decode: weight rows per CTA (the grid's x unit)
  int tileM = 0, tileN = 0, tileK = 0; // prefill: tokens, rows, k per CTA tile
  int64_t dynamicSmem = 0;             // bytes; equals the template's GLM_SMEM_BYTES
  // mma decode of a type whose steps are not all 16-byte aligned (Q8_0, Q4_0, Q6_K): K keeps
  // every row 16-byte aligned (GLM_MV_ROWS16, "_r16" in the variant), so the kernel copies
  // without per-row alignment. Such a kernel serves only K with that property.
  bool rows16 = false;
  // mma decode copies: L2 prefetch size (0 or 128 bytes: GLM_MV_PF, "_pf128") and through L1
  // (GLM_MV_L1, "_l1").
  int l2Prefetch = 0;
  bool l1Copies = false;
  // mma decode: x staged as fp16 and the quants entering the mma as fp16 (GLM_MV_XF16, "_xf16"):
  // see qlinearXf16.
  bool xf16 = false;
  // mma decode: x staged as int8 per 32-element sub-block and the quants entering an integer
  // mma (GLM_MV_XI8, "_xi8"): see qlinearXi8. Never with xf16.
  bool xi8 = false;
  // mma decode (qlinear_decode): x staged by one more warp into this many chunk buffers, handed
  // over through shared-memory barriers (GLM_MV_XWARP, "_xw<N>"; 0: the product warps stage
  // each chunk between two CTA barriers): see qlinearXWarp. Only with bf16 x.
  int xWarp = 0;
  // mma qlinear_decode: the ring's first fill issued after the first x chunk is staged instead
  // of before the grid chain (GLM_MV_LATE_FILL, "_lf"): see qlinearLateFill.
  bool lateFill = false;
};

// A decode variant's name after its tiles: its copies' and x form's flags ("_r16", "_pf128",
// "_l1", "_xf16", "_xi8", "_xw<N>", "_lf", in that order).
std::string qlinearDecodeSuffix(const QLinearConfig &cfg);

// Where a config launches for one problem: the runtime's definition (runtime/launch).
using QLinearLaunch = glm5rt::launch::QLinearGrid;

// True for the weight types the family handles: F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K.
bool qlinearSupportsType(uint32_t type);
// ggml's name of a supported type ("Q4_K"), "type <id>" otherwise.
std::string qlinearTypeName(uint32_t type);
// Bytes of one weight row of K elements (K a whole number of blocks).
int64_t qlinearRowBytes(uint32_t type, int64_t K);

// Picks the kernel for y[T, N] = x[T, K] W^T, W of ggml type `type` with dims {K, N}: decode
// (tokens 1..8, compiled for exactly that many) or prefill (tokens >= 9, T at run time). On
// failure the status lists each candidate and why it was rejected. launchBytes: the weight bytes
// one launch streams when it runs several such products (the MoE experts' pairs); 0: one
// product's (it decides the copies' L2 prefetch).
glm5rt::StatusOr<QLinearConfig> selectQLinear(const Target &tiles, uint32_t type, int64_t K,
                                              int64_t N, int tokens, bool actF32 = false,
                                              int64_t launchBytes = 0);

// A decode config without the late first fill (GLM_MV_LATE_FILL, variant suffix "_lf"), which
// only a lone qlinear_decode takes (qlinear.cuh asserts it): every conversion of a decode config
// into another kernel goes through it (qlinearDecodeWith's forced tiles may carry it).
QLinearConfig withoutLateFill(QLinearConfig q);

// A decode config (selectQLinear or qlinearDecodeWith, one token) as a gate/up kernel of `kind`
// (kExpertGateUp or kGateUp): on the mma path half of a CTA's warps stream gate's rows and half
// up's (qlinear.cuh glm_gate_up_cta), so it covers half its weight rows of h per CTA.
QLinearConfig gateUpDecodeConfig(QLinearConfig q, QLinearKind kind);

// glm.gate_up at decode: gate and up {K, N} of ggml `type`, one token (qlinear_decode_gate_up;
// the tiles of one {K, N} product, streaming both weights).
glm5rt::StatusOr<QLinearConfig> selectGateUp(const Target &tiles, uint32_t type, int64_t K,
                                             int64_t N, bool actF32 = false);

// glm.linears at decode: weights {K, N_m} of ggml `type` (m < 4), T tokens
// (qlinear_decode_multi; the tiles of one {K, sum N_m} product).
glm5rt::StatusOr<QLinearConfig> selectLinears(const Target &tiles, uint32_t type, int64_t K,
                                              int64_t sumN, int tokens, bool actF32 = false);

// The decode kernel of selectQLinear on the fp32 path (dequantized weights, fp32 FMA, one warp
// per row group), whatever the type's rule would pick (benchmark A/B of the two paths); 1-8
// tokens.
glm5rt::StatusOr<QLinearConfig> qlinearDecodeFp32(const Target &tiles, uint32_t type, int64_t K,
                                                  int64_t N, int tokens);

// selectQLinear's choice at bf16 activations with the mma decode's x form forced (xform as
// qlinearDecodeWith's; benchmark A/B of the forms at the registry's own tiles for each).
glm5rt::StatusOr<QLinearConfig> qlinearDecodeXForm(const Target &tiles, uint32_t type, int64_t K,
                                                   int64_t N, int tokens, int xform);

// The mma decode kernel of selectQLinear with chosen tiles instead of the registry's (benchmark
// A/B of tile choices): an error if the type has no mma step or the tiles do not fit `tiles`.
// xform: how x enters the mma -- -1 the registry's rules (qlinearXf16, qlinearXi8,
// qlinearXWarp), 0 bf16 staged by the product warps, 1 fp16 (Q4_K, Q5_K, Q8_0; F16 takes only
// this), 2 int8 (Q4_0, Q4_K, Q5_K, Q6_K at two tokens or more), 3 and 4 bf16 staged by an x warp
// into two or three buffers (the scaled types above four tokens).
glm5rt::StatusOr<QLinearConfig> qlinearDecodeWith(const Target &tiles, uint32_t type, int64_t K,
                                                  int64_t N, int tokens, int warps, int stages,
                                                  int64_t kc, int xform = -1);

// Whether the mma decode step of `type` at `tokens` takes x as fp16 (GLM_MV_XF16): always for F16
// (its weights enter the mma as stored); as measured on the H200 (bench/RESULTS.md): Q5_K at one
// token (its fifth bits' extraction is shorter in
// fp16's layout) and Q8_0 at 1-4 tokens (a byte permute per register instead of an int8 ->
// fp32 -> bf16 conversion per value; at 8 the x staging's conversion and x sums cost what that
// saves: 298.5 against 298.2 us at the head) -- at one token only with rows16 (GLM_MV_ROWS16:
// the copy path for any row alignment spilled 4 bytes in the fp16 form at 96 registers).
bool qlinearXf16(uint32_t type, int tokens, bool rows16);

// Whether the mma decode step of `type` at `tokens` takes x as int8 (GLM_MV_XI8) for a product
// streaming `weightBytes`: Q4_0, Q4_K, Q5_K and Q6_K at two tokens, and at three and four on
// products of at least 16 MiB. There the bf16 step's nibble conversions and per-group folds
// bound the kernel (H200, SM120 tiles: the Q4_K head 177 -> 151 us at two tokens, Q5_K 224 ->
// 184, Q6_K 278 -> 255, Q4_0 173 -> 157); the small products at three and four tokens,
// latency-bound, lost up to 0.9 us to the int8 staging at any chunk size, and eight tokens were
// even or slower (bench/RESULTS.md 2026-11-30, "int8 x"). x loses what int8 per 32 elements
// keeps (llama.cpp's q8_1): about 0.4% of a product's norm on random data.
bool qlinearXi8(uint32_t type, int tokens, int64_t weightBytes);

// The x buffers of an x warp (GLM_MV_XWARP; 0: none) for the mma decode of `type` at `tokens`
// with bf16 x: two for Q8_0 and Q4_0 above four tokens. Measured on the H200, SM120 tiles, eight
// tokens (bench/RESULTS.md 2026-12-01, "the x warp"): Q8_0 5-11% faster (head 287.7 -> 271.7 us,
// o 42.9 -> 38.1), Q4_0's mid-size products 5-7% (o 30.9 -> 28.6), its head even; the K-quants,
// whose 96-register steps lose a fifth CTA per SM to the warp's registers, 3-12% slower.
// (Every type with scales takes it forced: qlinearDecodeWith.)
int qlinearXWarp(uint32_t type, int tokens);

// The embedding lookup over a table {H, V} of `type`.
glm5rt::StatusOr<QLinearConfig> selectQEmbed(const Target &tiles, uint32_t type, int64_t H,
                                             bool actF32 = false);

// The launch parameters the plan records for `cfg` (Kernel.params).
glm5rt::launch::QLinearParams qlinearLaunchParams(const QLinearConfig &cfg);

// Grid, split of K and workspace for T tokens (decode: cfg.tokens) on `device` (its SM count
// sizes the split: enough CTAs for ~2 waves). Embedding: gridX = T. Forwards to
// glm5rt::launch::qlinearGrid (forceSplits likewise).
QLinearLaunch qlinearLaunch(const QLinearConfig &cfg, const Target &device, int64_t T, int64_t N,
                            int64_t K, int64_t forceSplits = 0);

// Dynamic shared memory of a decode config (mirrors qlinear.cuh's layout).
// xf16: the config's GLM_MV_XF16 (Q8_0 then stages x sums); rows16: its GLM_MV_ROWS16 (Q8_0's
// and Q4_0's ring slots then hold just the step); xi8: its GLM_MV_XI8; xWarp: its GLM_MV_XWARP
// (that many chunk buffers and their barriers).
int64_t qlinearDecodeSmem(uint32_t type, bool mma, int tokens, int warps, int stages, int kChunk,
                          bool xf16, bool rows16, bool xi8, int xWarp = 0);

// The translation unit NVRTC compiles for this configuration (constants, then the template).
std::string qlinearSource(const QLinearConfig &cfg);

} // namespace glm5c::codegen
