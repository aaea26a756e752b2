// Quantized linear layers and the embedding lookup over GGUF weights (docs/kernels.md
// "Quantized linear"): y[T, N] = x[T, K] W^T with W {K, N} (row n: K elements, GGUF blocks),
// fp32 accumulation, activations glm_act in and out.
//
// GLM_QL_KIND selects the entry point of an instantiation:
//   0 qlinear_decode: T = GLM_TOKENS (1..8), memory-bound matrix-vector;
//   1 qlinear_prefill: any T (meant for T >= 16), tiled matrix-matrix;
//   2 qlinear_embed: out[t] = row tokens[t] of a table {H, V};
//   3 moe_expert_decode_gate_up, 4 moe_expert_decode_down: the routed experts at decode, one
//     decode product per (token, expert) pair over GGUF stacked expert weights (see below);
//   5 qlinear_decode_gate_up: silu(gate x) * (up x) of one token (glm.gate_up), kind 3's code;
//   6 qlinear_decode_multi: two to four decode products of one x (glm.linears), kind 0's code.
// Weight rows are addressed as n * (K / GLM_QK) * GLM_QBYTES from a 16-byte-aligned base (GGUF
// tensor data is 32-byte aligned). K is a multiple of 32 and of the block (the registry checks).
//
// Decode, bf16 activations and a type with an mma step (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, BF16,
// F16): a CTA of GLM_WARPS warps owns 16 rows per warp and a K range (its split). Each warp
// streams its rows' raw blocks, 256 elements per step, through a private GLM_STAGES-deep ring in
// shared memory (16-byte cp.async of each row's 16-byte-aligned cover, so any block alignment
// works); x is staged per GLM_KC-element chunk as bf16 (fp16 with GLM_MV_XF16) in the fragment
// order of dequant.cuh, with the x sums of each scale group up to four tokens (more: the tensor
// core's, dequant.cuh GLM_MV_XSUM_MMA). Weights become bf16 (fp16) A fragments in registers
// (dequant.cuh) and mma.sync m16n8k16 multiplies them by the x fragment (tokens are the n8
// columns). GLM_MV_XI8 (Q4_0 and the K-quants at 2-4 tokens): x is staged as int8 per 32-element
// sub-block (glm_stage_x8) and the quant bytes meet it in integer mma.sync (dequant.cuh
// glm_mv_step_i8).
//
// Decode otherwise (f32 activations: the exact validation path; F32 weights; BF16 and F16 at
// one or two tokens on large products, the registry's choice): a warp owns GLM_RPW rows in
// turn; lane l dequantizes 32-element sub-blocks l, l + 32, ... of a row to fp32 (glm_dq32,
// exact) and multiplies them with x staged as fp32 (rows of 32 padded to 36 floats, so the
// lanes' 16-byte reads fall in distinct banks); a warp sum ends the row.
//
// Split K (gridDim.y > 1): each split writes fp32 partials ws[split][t][n]; the last CTA of a row
// tile (counted in counters[blockIdx.x], zero before the first launch and reset to zero by that
// last CTA) sums them in split order, so results are deterministic.
//
// Prefill: CTA tile GLM_BM tokens x GLM_BN rows x GLM_BK; the weight tile is dequantized into
// shared memory (bf16 for mma.sync with bf16 activations; fp32 and a SIMT product with f32
// activations, which keeps the validation path exact up to summation order).
//
// Embedding: one CTA per token; a token outside [0, V) gives a row of zeros and sets
// *err = max(*err, t + 1) (err zeroed by the caller: nonzero names the last bad position + 1).
#pragma once
#include "dequant.cuh"

#ifndef GLM_QL_KIND
#error "GLM_QL_KIND must be defined (0 decode, 1 prefill, 2 embed, 3/4 MoE decode, 5, 6)"
#endif

// Decode phase trace (profiling only, glm5c-bench-qlinear --trace; GLM_QL_TRACE = the most CTAs
// traced): thread 0 of CTA c (blockIdx in x-fastest order) stores %globaltimer at slot 0
// its start, 1 past its grid chain, 2 its first x chunk staged, 3 its last step done, 4 its end
// (after the split-K fixup), and its SM's id at slot 5. ql_trace_dump copies them out.
#ifdef GLM_QL_TRACE
#define GLM_QL_TRACE_SLOTS 6
__device__ unsigned long long glm_ql_trace[GLM_QL_TRACE][GLM_QL_TRACE_SLOTS];
#define GLM_QL_STAMP(slot)                                                                       \
  do {                                                                                           \
    const unsigned c_ = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;          \
    if (threadIdx.x == 0 && c_ < GLM_QL_TRACE)                                                   \
      glm_ql_trace[c_][slot] = glm_globaltimer();                                                \
  } while (0)
__device__ __forceinline__ void glm_ql_stamp_sm() {
  const unsigned c = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  if (threadIdx.x == 0 && c < GLM_QL_TRACE)
    glm_ql_trace[c][5] = sm;
}
extern "C" __global__ void ql_trace_dump(unsigned long long *out) {
  glm_grid_chain();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < GLM_QL_TRACE * GLM_QL_TRACE_SLOTS;
       i += gridDim.x * blockDim.x)
    out[i] = (&glm_ql_trace[0][0])[i];
}
#else
#define GLM_QL_STAMP(slot)
__device__ __forceinline__ void glm_ql_stamp_sm() {}
#endif

// Diagnostics (glm5c-bench-qlinear --define; the results are wrong by design): GLM_QL_NO_STEP
// replaces the mma step by one read of its slot, leaving the ring, the x staging and the
// barriers; GLM_QL_X_ONCE stages only the first x chunk, with its barriers.
#ifndef GLM_QL_NO_STEP
#define GLM_QL_NO_STEP 0
#endif
#ifndef GLM_QL_X_ONCE
#define GLM_QL_X_ONCE 0
#endif

// The registry says which decode path; by default the mma one wherever it exists.
#ifndef GLM_MV_USE_MMA
#define GLM_MV_USE_MMA (GLM_MV_MMA && !GLM_ACT_F32)
#endif
#if GLM_MV_USE_MMA && !(GLM_MV_MMA && !GLM_ACT_F32)
#error "the mma decode path needs a type with an mma step and bf16 activations"
#endif

// ---------------------------------------------------------------------------------------------
#if GLM_QL_KIND == 0 || GLM_QL_KIND >= 3 // decode products (3-6: MoE, gate/up, multi forms)
#if GLM_MV_USE_MMA && GLM_WTYPE == GLM_T_F16 && !GLM_MV_XF16
#error "the F16 mma step takes fp16 x (GLM_MV_XF16)"
#endif

#define GLM_THREADS (GLM_WARPS * 32)
static_assert(GLM_TOKENS >= 1 && GLM_TOKENS <= 8, "decode takes 1..8 tokens (the mma n8)");
// GLM_MV_XWARP (the registry's QLinearConfig::xWarp, more than four tokens): one more warp, the
// x warp, stages every x chunk while the GLM_WARPS product warps multiply, into GLM_MV_XWARP
// buffers handed over through shared-memory barriers (glm_mbar_*): a product warp waits only
// for its chunk to be staged, never for the other product warps, and no CTA barrier remains in
// the loop. Without it, every chunk's staging (an L2 round trip for x) sits between two CTA
// barriers that every warp waits out.
#ifndef GLM_MV_XWARP
#define GLM_MV_XWARP 0
#endif
#define GLM_CTA_THREADS (GLM_THREADS + (GLM_MV_XWARP ? 32 : 0)) // the launch's block size
static_assert(GLM_KC % GLM_MV_STEP == 0, "x chunks are whole 256-element steps");

#if GLM_MV_USE_MMA
// GLM_MV_ROWS16 (types whose steps are not all 16-byte aligned): the registry's promise that
// every weight row starts 16-byte aligned -- the base is, and row_bytes % 16 == 0 (K % 256 == 0
// for Q8_0 and Q4_0, K % 2048 == 0 for Q6_K) -- which lets the copies skip per-row alignment.
#ifndef GLM_MV_ROWS16
#define GLM_MV_ROWS16 0
#endif
#define GLM_CTA_ROWS (GLM_WARPS * 16)
#define GLM_EMIT_SLOTS 4
// The weight copies' memory path (the registry's choice, codegen/registry/QLinear.cpp):
// GLM_MV_L1 through L1 (.ca), GLM_MV_PF the L2 prefetch size in bytes (0 or 128).
#ifndef GLM_MV_L1
#define GLM_MV_L1 0
#endif
#ifndef GLM_MV_PF
#define GLM_MV_PF 0
#endif
#define GLM_SPC (GLM_KC / GLM_MV_STEP) // steps per x chunk
// GLM_MV_LATE_FILL (the registry's QLinearConfig::lateFill: Q6_K at one token): the ring's
// first GLM_STAGES - 1 steps are issued once the first x chunk is staged, not before the grid
// chain, so that x's loads do not queue behind them. The commit groups keep their order (one
// per step, step 0 first), which the x prefetch's accounting would not survive.
#ifndef GLM_MV_LATE_FILL
#define GLM_MV_LATE_FILL 0
#endif
static_assert(!GLM_MV_LATE_FILL || (GLM_QL_KIND == 0 && !GLM_MV_XWARP &&
                                    !(GLM_MV_PLAIN16 && GLM_TOKENS > 4)),
              "the late first fill: qlinear_decode, without the x warp or the x prefetch");
// Staged x: token rows of GLM_KC bf16 plus 16 (32 bytes: the eight rows an 8-byte fragment load
// touches start 8 banks apart, conflict-free per half-warp).
#define GLM_XROW (GLM_KC + 16)
// A ring slot holds one row's step: its 16-byte cover. Steps that all start 16-byte aligned
// (GLM_MV_ALIGNED16; or GLM_MV_ROWS16 with a step of whole 16-byte chunks: Q8_0's 272 and Q4_0's
// 144 bytes) need no more than the step, and a slot of an odd number of 16-byte chunks puts the
// eight rows g of a fragment load in distinct bank quads (a 288-byte slot paired rows g, g + 4:
// two-way conflicts; the 16 bytes less per row also fit Q8_0 at eight tokens five CTAs per H200
// SM instead of four).
// GLM_MV_SLOT_PAD (Q4_K): bytes after the step, so that the rows' 8-byte quant loads of a
// half-warp (rows g .. g + 3, 8 t bytes on) fall in distinct banks: a row stride of 8 or 24 words
// mod 32 (Q4_K 144 + 16 = 160 bytes; unpadded, rows g and g + 1 shared banks). 0-1.8% on the
// H200; Q5_K's (176 + 48) gained nothing and cost its chunk choices 6 KB.
#ifndef GLM_MV_SLOT_PAD
#define GLM_MV_SLOT_PAD 0
#endif
#if GLM_MV_ALIGNED16 || (GLM_MV_ROWS16 && GLM_MV_STEP_BYTES % 16 == 0)
#define GLM_SLOT ((GLM_MV_STEP_BYTES + 15) / 16 * 16 + GLM_MV_SLOT_PAD)
#else
static_assert(GLM_MV_SLOT_PAD == 0, "padded slots are for whole-chunk steps");
#define GLM_SLOT ((GLM_MV_STEP_BYTES + 15) / 16 * 16 + 16) // the cover of a 2-aligned range
#endif
#define GLM_SLOT_CHUNKS ((GLM_SLOT - GLM_MV_SLOT_PAD) / 16) // the cover's chunks (copied)
#if GLM_XSUM_STAGED // x sums staged with x (dequant.cuh)
#define GLM_XSUM_BYTES (GLM_KC / GLM_XSUM_GRAN * 8 * 4)
#elif GLM_MV_XI8 // each step's dx and sub-block sums (dequant.cuh glm_mv_step_i8)
#define GLM_XSUM_BYTES (GLM_SPC * GLM_XI8_STEP_WORDS * 4)
#else
#define GLM_XSUM_BYTES 0
#endif
// One token (GLM_MV_COLS, dequant.cuh): a row of zeros follows x, for the B columns of the
// other scale groups.
#define GLM_XS_ROWS (GLM_TOKENS + (GLM_MV_COLS ? 1 : 0))
// int8 x (GLM_MV_XI8): token rows of GLM_KC bytes plus 32 (a row stride of 8 words mod 32: the
// four rows a half-warp's 8-byte fragment loads touch fall in distinct banks).
#define GLM_XROW8 (GLM_KC + 32)
#if GLM_MV_XI8
#define GLM_XS_BYTES (GLM_TOKENS * GLM_XROW8)
#elif GLM_MV_XWARP // GLM_MV_XWARP chunk buffers
#define GLM_XS_BYTES (GLM_MV_XWARP * GLM_TOKENS * GLM_XROW * 2)
#else
#define GLM_XS_BYTES (GLM_XS_ROWS * GLM_XROW * 2)
#endif
static_assert(!GLM_MV_XWARP || (GLM_TOKENS > 4 && !GLM_MV_XF16 && !GLM_MV_XI8 &&
                                !GLM_MV_PLAIN16 && GLM_QL_KIND == 0),
              "the x warp: qlinear_decode of the scaled types above four tokens (x sums on the "
              "tensor core, none staged)");
// BF16 and F16 weights with more than four tokens: x chunk c + 1 is copied as it is (cp.async,
// [token][GLM_KC] bf16) while chunk c is multiplied, and staged from there: the staging's x
// loads are then shared-memory loads, not an L2 round trip that every warp of the CTA waited out
// after the chunk's barrier. Measured on the H200 (SM120 tiles, eight tokens, same tiles): BF16
// head 648.3 -> 461.9 us (97% of copy bandwidth), F16 666.2 -> 467.4; the quantized types, whose
// steps are long enough to hide the staging, lost 0-10% (more registers).
#define GLM_MV_XPREFETCH (GLM_MV_PLAIN16 && GLM_TOKENS > 4)
#define GLM_XRAW_BYTES (GLM_MV_XPREFETCH ? GLM_TOKENS * GLM_KC * 2 : 0)
// Dynamic shared memory layout, in bytes (the registry computes the same total).
#define GLM_SMEM_XS 0
#define GLM_SMEM_XSUM (GLM_SMEM_XS + GLM_XS_BYTES)
#define GLM_SMEM_XRAW (GLM_SMEM_XSUM + GLM_XSUM_BYTES)
#define GLM_SMEM_RING (GLM_SMEM_XRAW + GLM_XRAW_BYTES)
// The x warp's barriers: GLM_MV_XWARP "staged" then as many "released" (8 bytes each).
#define GLM_SMEM_BAR (GLM_SMEM_RING + GLM_WARPS * GLM_STAGES * 16 * GLM_SLOT)
#define GLM_SMEM_BYTES (GLM_SMEM_BAR + 16 * GLM_MV_XWARP)
static_assert(GLM_STAGES >= 2, "a ring of at least two steps");
#else
#define GLM_CTA_ROWS (GLM_WARPS * GLM_RPW)
#define GLM_EMIT_SLOTS (GLM_RPW * GLM_TOKENS)
#define GLM_XFROW (GLM_KC / 32 * 36) // fp32 x: 32 values + 4 pad per sub-block
#define GLM_SMEM_BYTES (GLM_TOKENS * GLM_XFROW * 4)
#endif

// This CTA's result for (row, tok): the output itself with one split, else a partial.
__device__ __forceinline__ void glm_ql_emit(glm_act *y, float *ws, int N, int row, int tok, float v,
                                            int split, int splits) {
  if (splits == 1)
    glm_act_store(y, static_cast<long long>(tok) * N + row, v);
  else
    ws[(static_cast<long long>(split) * GLM_TOKENS + tok) * N + row] = v;
}

// Split K: after every partial of the CTA is written, true in exactly one of the `splits` CTAs
// counted on *counter -- the last to arrive, which then sees every partial, sums them in split
// order and re-arms the counter (glm_ql_rearm; every CTA has counted by then, counters start
// at 0).
__device__ __forceinline__ bool glm_ql_last_split(unsigned *counter, int splits) {
  __shared__ int s_last;
  __threadfence(); // this thread's partials are visible device-wide before the count
  __syncthreads();
  if (threadIdx.x == 0)
    s_last = atomicAdd(counter, 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!s_last)
    return false;
  __threadfence();
  return true;
}

__device__ __forceinline__ void glm_ql_rearm(unsigned *counter) {
  if (threadIdx.x == 0)
    *counter = 0u;
}

// After every emit of the CTA: the last split to finish row tile blockIdx.x sums the partials in
// split order and writes the outputs.
__device__ __forceinline__ void glm_ql_fixup(glm_act *y, const float *ws, unsigned *counters, int N,
                                             int row0, int splits) {
  if (splits == 1 || !glm_ql_last_split(counters + blockIdx.x, splits))
    return;
  for (int i = threadIdx.x; i < GLM_TOKENS * GLM_CTA_ROWS; i += GLM_CTA_THREADS) {
    const int tok = i / GLM_CTA_ROWS, row = row0 + i % GLM_CTA_ROWS;
    if (row >= N)
      continue;
    float s = 0.f;
    for (int sp = 0; sp < splits; ++sp)
      s += __ldcg(ws + (static_cast<long long>(sp) * GLM_TOKENS + tok) * N + row);
    glm_act_store(y, static_cast<long long>(tok) * N + row, s);
  }
  glm_ql_rearm(counters + blockIdx.x);
}

#if GLM_MV_USE_MMA
// x staging: x[:, k0 .. k0 + kc) (kc a multiple of 32, at most GLM_KC) as bf16 in fragment
// order, per chunk; where the fold takes them from here (GLM_XSUM_STAGED) also the fp32 sums of
// each GLM_XSUM_GRAN group of the same (bf16) values, [group][8 tokens]. A unit is
// 8 elements of one token, one 16-byte load (x rows start 16-byte aligned, K being a multiple of
// 32). Thread tid's units are the same in every chunk: tokens tok0, tok0 + kXTokStride, ... and
// in each the units u0 + GLM_THREADS j, j < kXInner (glm_xstage_of), so a chunk's addresses are
// one pointer per thread and compile-time strides (per-unit index math, redone per chunk, was
// as many instructions as the loads, stores and sums at eight tokens). Where the block holds
// whole token rows of units, a thread stages one unit of every kXTokStride-th token; otherwise
// unit tid (and tid + GLM_THREADS ...) of every token, the threads past the row's end idle in its
// last round. Units at or past kc are skipped. A scale group is GLM_XSUM_GRAN / 8 aligned lanes,
// which the shuffle sums rely on; tok0 is warp-uniform (kXUnits is a multiple of 32), so every
// lane of a warp runs the same trip count. Loads go out two at a time before either is used (one
// at a time for BF16 and F16: pairs spilled at the 96-register bound with 128 threads).
// GLM_MV_XF16: the values are staged as fp16 of x * xsc (xsc a power of two), the x sums are
// those fp16 values' sums, and the result is the largest |x * xsc| this thread staged (over
// 65504: some value became inf, and the caller stages the chunk again with a smaller xsc).
// A unit's 8 values (16 bytes of bf16 in element order) as the staged groups 2u and 2u + 1, each
// in the order (e, e+2), (e+1, e+3) (dequant.cuh glm_x_perm_group).
__device__ __forceinline__ void glm_x_unit_groups(const uint4 &v, uint2 &g0, uint2 &g1) {
  g0 = make_uint2(__byte_perm(v.x, v.y, 0x5410), __byte_perm(v.x, v.y, 0x7632));
  g1 = make_uint2(__byte_perm(v.z, v.w, 0x5410), __byte_perm(v.z, v.w, 0x7632));
}
constexpr int kXUnits = GLM_KC / 8; // per token and chunk
constexpr int kXTokStride = GLM_THREADS % kXUnits == 0 ? GLM_THREADS / kXUnits : 1;
constexpr int kXInner = kXTokStride > 1 ? 1 : (kXUnits + GLM_THREADS - 1) / GLM_THREADS;
static_assert(kXUnits % 32 == 0, "chunks of whole warps of units (tok0 warp-uniform)");
struct glm_xstage {
  int src;     // element offset of the first unit in a [token][row] source: tok0 row + 8 u0
  int dst;     // element offset in xs of its staged place (unit j: + 8 GLM_THREADS j)
  int tok0;    // first token
  unsigned u0; // first unit of a token
};
__device__ __forceinline__ glm_xstage glm_xstage_of(int row) {
  glm_xstage st;
  st.tok0 = kXTokStride > 1 ? static_cast<int>(threadIdx.x) / kXUnits : 0;
  st.u0 = kXTokStride > 1 ? threadIdx.x % kXUnits : threadIdx.x;
  st.src = st.tok0 * row + 8 * static_cast<int>(st.u0);
#if GLM_MV_P8
  // glm_x_perm_group: groups 2u, 2u + 1 go to p and p + 4 (p = 8 (u / 4) + u % 4), elements 4p..
  // and 4p + 16..; unit u + GLM_THREADS j has p + 2 GLM_THREADS j (GLM_THREADS % 4 == 0).
  st.dst = st.tok0 * GLM_XROW + 4 * static_cast<int>(8 * (st.u0 / 4) + st.u0 % 4);
#else
  st.dst = st.tok0 * GLM_XROW + 8 * static_cast<int>(st.u0);
#endif
  return st;
}
// The chunk's source: x + k0 with rows of K elements, or its copy (GLM_MV_XPREFETCH) with rows of
// GLM_KC.
__device__ __forceinline__ float glm_stage_x(const glm_act *__restrict__ src0, int row,
                                             glm_bf16 *xs, float *xsum, int kc,
                                             float xsc = 1.f) {
  float xmax = 0.f;
  const glm_xstage st = glm_xstage_of(row); // a few instructions per chunk; no registers held
  constexpr int kBatch = GLM_MV_PLAIN16 ? 1 : 2;
  const unsigned units = static_cast<unsigned>(kc) / 8;
  const glm_act *src = src0 + st.src;
  glm_bf16 *dst = xs + st.dst;
#pragma unroll(kXInner == 1 && kBatch == 2 && GLM_TOKENS > kXTokStride ? 2 : 1)
  for (int tok = st.tok0; tok < GLM_TOKENS; tok += kXTokStride) {
#pragma unroll
    for (int j0 = 0; j0 < kXInner; j0 += kBatch) {
      uint4 v[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int j = j0 + b;
        v[b] = j < kXInner && st.u0 + GLM_THREADS * j < units
                   ? *reinterpret_cast<const uint4 *>(src + 8 * GLM_THREADS * j)
                   : make_uint4(0u, 0u, 0u, 0u);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int j = j0 + b;
        if (j >= kXInner)
          break;
        const unsigned u = st.u0 + GLM_THREADS * j;
#if GLM_MV_XF16
        uint32_t *h = reinterpret_cast<uint32_t *>(&v[b]);
#pragma unroll
        for (int q = 0; q < 4; ++q) { // bf16 pair -> fp16 pair, same halves
          const float lo = __uint_as_float(h[q] << 16) * xsc;
          const float hi = __uint_as_float(h[q] & 0xFFFF0000u) * xsc;
          xmax = fmaxf(xmax, fmaxf(fabsf(lo), fabsf(hi)));
          asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h[q]) : "f"(hi), "f"(lo));
        }
#endif
        uint2 g0, g1;
        glm_x_unit_groups(v[b], g0, g1);
        if (u < units) {
          glm_bf16 *d = dst + 8 * GLM_THREADS * j;
#if GLM_MV_P8
          *reinterpret_cast<uint2 *>(d) = g0;
          *reinterpret_cast<uint2 *>(d + 16) = g1;
#else
          *reinterpret_cast<uint4 *>(d) = make_uint4(g0.x, g0.y, g1.x, g1.y);
#endif
        }
#if GLM_XSUM_STAGED
        const uint32_t w[4] = {v[b].x, v[b].y, v[b].z, v[b].w};
        float s = 0.f;
#pragma unroll
        for (int q = 0; q < 4; ++q)
#if GLM_MV_XF16
          s += glm_f16_to_f32(static_cast<unsigned short>(w[q])) +
               glm_f16_to_f32(static_cast<unsigned short>(w[q] >> 16));
#else
          s += __uint_as_float(w[q] << 16) + __uint_as_float(w[q] & 0xFFFF0000u);
#endif
        s += __shfl_xor_sync(0xffffffffu, s, 1);
#if GLM_XSUM_GRAN == 32
        s += __shfl_xor_sync(0xffffffffu, s, 2);
#endif
        if (u < units && u % (GLM_XSUM_GRAN / 8) == 0)
          xsum[u / (GLM_XSUM_GRAN / 8) * 8 + tok] = s;
#endif
      }
    }
    src += kXTokStride * row;
    dst += kXTokStride * GLM_XROW;
  }
  return xmax;
}
#if GLM_MV_XI8
// int8 x for glm_mv_step_i8 (dequant.cuh), a unit (8 elements of one token, 16 bytes of bf16) at
// a time. A sub-block (32 elements) is four consecutive units in four consecutive lanes, so its
// max |x| and its sum are two shuffles each; every lane of the warp must call. q rounds to
// nearest (even) in one FMA: x / dx + 1.5 * 2^23 has q in its low byte. Out: the unit's q bytes,
// and (meaningful in the sub-block's first lane) its dx and s = dx * sum q as the bf16 pair
// (hi, s - hi) -- for Q6_K instead -32 sum q over the unit's 16-element group (in its first
// lane), for Q4_0 -8 sum q over the sub-block.
struct glm_x8_unit {
  uint2 q;
  float dx;
  uint32_t s;
};
__device__ __forceinline__ glm_x8_unit glm_x8_quantize(uint4 v) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  float f[8], m = 0.f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    f[2 * q] = __uint_as_float(w[q] << 16);
    f[2 * q + 1] = __uint_as_float(w[q] & 0xFFFF0000u);
    m = fmaxf(m, fmaxf(fabsf(f[2 * q]), fabsf(f[2 * q + 1])));
  }
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
  // |x inv| <= 127. The floor keeps inv finite (an all-zero sub-block gives zeros); past 2^126
  // __fdividef gives 0, i.e. zeros for a sub-block holding such values.
  m = fmaxf(m, 1e-30f);
  const float inv = __fdividef(127.f, m);
  uint32_t r[8];
#pragma unroll
  for (int e = 0; e < 8; ++e)
    r[e] = __float_as_uint(fmaf(f[e], inv, 12582912.f));
  glm_x8_unit u;
  u.q.x = __byte_perm(__byte_perm(r[0], r[1], 0x0040), __byte_perm(r[2], r[3], 0x0040), 0x5410);
  u.q.y = __byte_perm(__byte_perm(r[4], r[5], 0x0040), __byte_perm(r[6], r[7], 0x0040), 0x5410);
  int sum = __dp4a(static_cast<int>(u.q.x), 0x01010101,
                   __dp4a(static_cast<int>(u.q.y), 0x01010101, 0));
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  u.dx = m * (1.f / 127.f);
#if GLM_WTYPE == GLM_T_Q6_K
  u.s = static_cast<uint32_t>(-32 * sum);
#elif GLM_WTYPE == GLM_T_Q4_0
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  u.s = static_cast<uint32_t>(-8 * sum);
#else
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  const float sx = u.dx * static_cast<float>(sum);
  const float sh = glm_bf16_to_f32(glm_f32_to_bf16(sx));
  u.s = glm_pack_bf16x2(sh, sx - sh);
#endif
  return u;
}
// Where unit u of token `tok` (u counted from the chunk's first element) puts its values: xq at
// tok * xrow + 8 u bytes; dx of its sub-block (u / 4 % 8 of step u / 32) at xd
// [step][sub-block][8 tokens]; s at xm [step][8 tokens][sub-block], Q6_K's group sums at xm
// [step][16 groups][8 tokens], Q4_0's block sums at xm [step][sub-block][8 tokens]
// (GLM_XI8_SUM_WORDS per step).
__device__ __forceinline__ void glm_x8_store(const glm_x8_unit &q, unsigned u, int tok, int xrow,
                                             glm_u8 *xq, float *xd, uint32_t *xm) {
  *reinterpret_cast<uint2 *>(xq + tok * xrow + 8 * u) = q.q;
  const unsigned step = u / 32;
  if (u % 4 == 0)
    xd[step * 64 + u / 4 % 8 * 8 + tok] = q.dx;
#if GLM_WTYPE == GLM_T_Q6_K
  if (u % 2 == 0)
    xm[step * GLM_XI8_SUM_WORDS + u / 2 % 16 * 8 + tok] = q.s;
#elif GLM_WTYPE == GLM_T_Q4_0
  if (u % 4 == 0)
    xm[step * GLM_XI8_SUM_WORDS + u / 4 % 8 * 8 + tok] = q.s;
#else
  if (u % 4 == 0)
    xm[step * GLM_XI8_SUM_WORDS + tok * 8 + u / 4 % 8] = q.s;
#endif
}
// The chunk staging with int8 x: the same units per thread as glm_stage_x (a warp's units are
// consecutive from a multiple of 32, tok0 warp-uniform). A thread's loads (up to eight) go out
// together: the staging sits between two CTA barriers, where a round trip per load pair left
// the eight-token head at 230 us (195 with the batch, made in the same change as per-32 scales).
// Units at or past kc are skipped (their lanes still shuffle).
constexpr int kXTokIters = (GLM_TOKENS + kXTokStride - 1) / kXTokStride;
constexpr int kXUnitsPerThread = kXTokIters * kXInner;
constexpr int kXLoadBatch = kXUnitsPerThread < 8 ? kXUnitsPerThread : 8;
__device__ __forceinline__ void glm_stage_x8(const glm_act *__restrict__ src0, int row,
                                             glm_u8 *xq, float *xd, uint32_t *xm, int kc) {
  const glm_xstage st = glm_xstage_of(row);
  const unsigned units = static_cast<unsigned>(kc) / 8;
  const glm_act *src = src0 + st.src;
#pragma unroll
  for (int i0 = 0; i0 < kXUnitsPerThread; i0 += kXLoadBatch) {
    uint4 v[kXLoadBatch];
#pragma unroll
    for (int b = 0; b < kXLoadBatch; ++b) {
      const int i = i0 + b, ti = i / kXInner, j = i % kXInner; // token iteration, unit
      const int tok = st.tok0 + ti * kXTokStride;               // warp-uniform
      v[b] = i < kXUnitsPerThread && tok < GLM_TOKENS && st.u0 + GLM_THREADS * j < units
                 ? *reinterpret_cast<const uint4 *>(src + ti * kXTokStride * row +
                                                    8 * GLM_THREADS * j)
                 : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int b = 0; b < kXLoadBatch; ++b) {
      const int i = i0 + b, ti = i / kXInner, j = i % kXInner;
      const int tok = st.tok0 + ti * kXTokStride;
      if (i >= kXUnitsPerThread || tok >= GLM_TOKENS) // compile-time, then warp-uniform
        break;
      const unsigned u = st.u0 + GLM_THREADS * j;
      const glm_x8_unit q = glm_x8_quantize(v[b]);
      if (u < units)
        glm_x8_store(q, u, tok, GLM_XROW8, xq, xd, xm);
    }
  }
}
#endif // GLM_MV_XI8
// GLM_MV_XPREFETCH: cp.async of x[:, k0 .. k0 + kc) into raw ([token][GLM_KC]), the same units per
// thread as the staging (the caller commits them with a step's weights). Through L1 (.ca): every
// CTA on an SM copies the same chunk.
__device__ __forceinline__ void glm_xraw_issue(const glm_act *__restrict__ x, glm_bf16 *raw, int K,
                                               int k0, int kc) {
  const glm_xstage st = glm_xstage_of(K);
  const unsigned units = static_cast<unsigned>(kc) / 8;
  const glm_act *src = x + k0 + st.src;
  uint32_t dst = glm_smem_addr(raw + st.tok0 * GLM_KC + 8 * static_cast<int>(st.u0));
  for (int tok = st.tok0; tok < GLM_TOKENS; tok += kXTokStride) {
#pragma unroll
    for (int j = 0; j < kXInner; ++j)
      if (st.u0 + GLM_THREADS * j < units)
        glm_cp_async_16<true>(dst + 16 * GLM_THREADS * j, src + 8 * GLM_THREADS * j, 16);
    src += kXTokStride * K;
    dst += kXTokStride * GLM_KC * 2;
  }
}
#endif

#if GLM_MV_USE_MMA && GLM_MV_XWARP
// The x warp's staging of x[:, k0 .. k0 + kc) into xs (the layout of glm_stage_x, no x sums):
// lane l takes units l, l + 32, ... (8 elements of one token each), kXWarpBatch loads in flight
// before any is stored.
constexpr int kXWarpUnits = GLM_TOKENS * (GLM_KC / 8); // per chunk
constexpr int kXWarpPerLane = (kXWarpUnits + 31) / 32;
constexpr int kXWarpBatch = kXWarpPerLane < 8 ? kXWarpPerLane : 8; // 16 spilled (Q6_K, Q4_0)
__device__ __forceinline__ void glm_xwarp_stage(const glm_act *__restrict__ x, int K, int k0,
                                                int kc, glm_bf16 *xs, int lane) {
  const int units = kc / 8; // per token
  for (int b0 = 0; b0 < kXWarpUnits; b0 += 32 * kXWarpBatch) {
    uint4 v[kXWarpBatch];
#pragma unroll
    for (int j = 0; j < kXWarpBatch; ++j) {
      const int u = b0 + 32 * j + lane, tok = u / (GLM_KC / 8), uu = u % (GLM_KC / 8);
      v[j] = u < kXWarpUnits && uu < units ? *reinterpret_cast<const uint4 *>(
                              x + static_cast<long long>(tok) * K + k0 + 8 * uu)
                        : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int j = 0; j < kXWarpBatch; ++j) {
      const int u = b0 + 32 * j + lane, tok = u / (GLM_KC / 8), uu = u % (GLM_KC / 8);
      if (u >= kXWarpUnits || uu >= units)
        continue;
      uint2 g0, g1; // groups 2uu and 2uu + 1, to their staged places
      glm_x_unit_groups(v[j], g0, g1);
      glm_bf16 *row = xs + tok * GLM_XROW;
      *reinterpret_cast<uint2 *>(row + 4 * glm_x_perm_group(2 * uu)) = g0;
      *reinterpret_cast<uint2 *>(row + 4 * glm_x_perm_group(2 * uu + 1)) = g1;
    }
  }
}
#endif

// Register budget. mma path (compute-bound: more resident warps hide more latency): 96 per
// thread for 128 threads (5 CTAs per SM), 128 for 256 (80 spilled for Q6_K and BF16). fp32 path:
// 128 (2 CTAs of 256), unbounded with more than 4 tokens (8 accumulators per row; Q6_K spilled
// at 128). Some bound is needed: with the thread count alone ptxas picked 48 registers for some
// instantiations and spilled.
#if GLM_MV_USE_MMA && GLM_QL_KIND == 4 && (GLM_MV_ALIGNED16 || GLM_MV_ROWS16)
// The routed experts' down product on whole-chunk copies fits 96 (GLM-5's 8 pairs of Q6_K
// down on the H200: 32.1 -> 31.4 us, five CTAs per SM instead of four; bench/RESULTS.md
// 2026-12-01 "MoE down").
#define GLM_MIN_BLOCKS (640 / GLM_THREADS)
#elif GLM_MV_USE_MMA && GLM_QL_KIND >= 3
// The experts' pair and offsets: Q6_K spilled at 96 (the down product on the 2-aligned copy
// path: 4 B); glm.linears' product selection: Q8_0 at three tokens spilled 4 B at 96.
#define GLM_MIN_BLOCKS (512 / GLM_THREADS)
#elif GLM_MV_USE_MMA
#define GLM_MIN_BLOCKS (640 / GLM_CTA_THREADS)
#elif GLM_TOKENS > 4
#define GLM_MIN_BLOCKS 1
#else
#define GLM_MIN_BLOCKS (512 / GLM_THREADS)
#endif
// One CTA's share of a decode product: rows [row0, row0 + GLM_CTA_ROWS) of w (N rows of K
// elements, GGUF blocks) times x [GLM_TOKENS, K] over k in [k_begin, k_end). Each result goes to
// emit(slot, row, tok, value), row < N and tok < GLM_TOKENS, where `slot` is a compile-time index
// (< GLM_EMIT_SLOTS) that names the same (row, tok) for this thread in every call: a caller can
// keep one product's results in registers and combine them with a second product's.
// chain() runs once, after the mma path has issued its first weight copies (with
// GLM_MV_LATE_FILL, before them) and before anything reads x or global memory other than w: a
// kernel whose w and arguments do not depend on its predecessor waits for that predecessor there
// (glm_grid_chain), so its weights stream in while the predecessor finishes (w is never written
// by a kernel of the step).
// kPaired (mma path only): two products of the same shape and x in one pipeline -- warps
// [0, GLM_WARPS / 2) stream rows [row0, row0 + GLM_CTA_ROWS / 2) of w, the other half the same
// rows of w2 -- whose results are emitted as rows N + row. One ring fill, one x staging per chunk
// and one drain serve both products (run one after the other, each paid its own).
template <bool kPaired = false, typename Emit, typename Chain>
__device__ __forceinline__ void glm_ql_decode_cta(const glm_u8 *__restrict__ w,
                                                  const glm_u8 *__restrict__ w2,
                                                  const glm_act *__restrict__ x, int N, int K,
                                                  int row0, int k_begin, int k_end, Emit emit,
                                                  Chain chain) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const long long row_bytes = static_cast<long long>(K / GLM_QK) * GLM_QBYTES;
  GLM_QL_STAMP(0);

#if GLM_MV_USE_MMA
  glm_bf16 *xs = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_XS);
  float *xsum = reinterpret_cast<float *>(smem + GLM_SMEM_XSUM);
  glm_bf16 *xraw = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_XRAW); // GLM_MV_XPREFETCH
  glm_u8 *ring = smem + GLM_SMEM_RING + warp * GLM_STAGES * 16 * GLM_SLOT;
  const int g = lane / 4, t = lane % 4;
  static_assert(!kPaired || GLM_WARPS % 2 == 0, "paired products split the warps in halves");
  constexpr int kHalf = kPaired ? GLM_WARPS / 2 : GLM_WARPS; // warps per product
  const bool second = kPaired && warp >= kHalf;              // this warp streams w2
  if (second)
    w = w2;
  const int wrow0 = row0 + (warp % kHalf) * 16;
  const int nsteps = k_end > k_begin ? (k_end - k_begin + GLM_MV_STEP - 1) / GLM_MV_STEP : 0;
#if GLM_XSUM_STAGED
  for (int i = tid; i < GLM_KC / GLM_XSUM_GRAN * 8; i += GLM_THREADS)
    if (i % 8 >= GLM_TOKENS)
      xsum[i] = 0.f; // padding tokens: never written by the staging, read by the fold
#endif
#if GLM_MV_XF16
  __shared__ unsigned s_xmax; // the largest |x| of the chunks that needed a scale, as bits
  if (tid == 0)
    s_xmax = 0u; // published by the first chunk's barrier
#endif
#if GLM_MV_XI8
  // int8 x, then per step the dx_j [8][8] and the sums (GLM_XI8_SUM_WORDS; glm_x8_store).
  glm_u8 *xq8 = smem + GLM_SMEM_XS;
  float *xd8 = reinterpret_cast<float *>(xq8 + GLM_XS_BYTES);
  uint32_t *xm8 = reinterpret_cast<uint32_t *>(xd8 + GLM_SPC * 64);
#endif
#if GLM_MV_XWARP
  // Chunk c goes to buffer c % GLM_MV_XWARP: staged[b] completes when the x warp's 32 lanes have
  // stored it, released[b] when every product warp is done with it (lane 0 of each, after a
  // __syncwarp). Phase n of each is the buffer's n-th use.
  unsigned long long *staged = reinterpret_cast<unsigned long long *>(smem + GLM_SMEM_BAR);
  unsigned long long *released = staged + GLM_MV_XWARP;
  if (tid == 0)
    for (int b = 0; b < GLM_MV_XWARP; ++b) {
      glm_mbar_init(staged + b, 32);
      glm_mbar_init(released + b, GLM_WARPS);
    }
  __syncthreads();
  if (warp == GLM_WARPS) { // the x warp
    chain();
    const int nchunks = (k_end - k_begin + GLM_KC - 1) / GLM_KC;
    for (int c = 0; c < nchunks; ++c) {
      const int b = c % GLM_MV_XWARP, k = k_begin + c * GLM_KC;
      if (c >= GLM_MV_XWARP) // the buffer's last chunk, c - GLM_MV_XWARP, is released
        glm_mbar_wait(released + b, (c / GLM_MV_XWARP - 1) & 1);
      glm_xwarp_stage(x, K, k, min(GLM_KC, k_end - k), xs + b * GLM_TOKENS * GLM_XROW, lane);
      glm_mbar_arrive(staged + b);
    }
    return;
  }
#endif
#if GLM_MV_COLS
  for (int i = tid; i < GLM_XROW / 2; i += GLM_THREADS)  // the zero row (the first chunk's
    reinterpret_cast<uint32_t *>(xs + GLM_XROW)[i] = 0u; // barrier publishes it)
#endif

  // Copies step i of the warp's 16 rows (clamped to row N - 1) into ring slot i % GLM_STAGES:
  // each row's byte range, widened to 16-byte chunks (its cover), never past the end of the
  // tensor. Lane l copies chunks c = l + 32 q of the 16 x GLM_SLOT_CHUNKS (row, chunk) grid; their
  // global and shared addresses in step 0 are computed once.
  // Whole steps on 16-byte-aligned rows (Q4_K and Q5_K, or GLM_MV_ROWS16): a step's cover starts
  // at the same chunk of every row and ends inside the row (whose end is a multiple of 16), so a
  // copy is an add. The general path (any row alignment) spent 92 instructions per step on
  // Q4_K's 5 copies; this one made the Q4_K head 6% faster on the H200.
  constexpr int kCopyIters = (16 * GLM_SLOT_CHUNKS + 31) / 32;
#if (GLM_MV_ALIGNED16 && GLM_QK == GLM_MV_STEP) || GLM_MV_ROWS16
  // Whole steps (K is a multiple of 256 here). The tail chunk (2-aligned types: the one starting
  // at or past GLM_MV_STEP_BYTES) is copied only when the step's start within its first chunk
  // pushes its end past the last whole one (by more than kTailSlack).
  constexpr int kTailSlack = (GLM_MV_STEP_BYTES + 15) / 16 * 16 - GLM_MV_STEP_BYTES;
  const uint32_t ring_s = glm_smem_addr(ring);
  // The warp's first row (clamped); chunk sources are 32-bit offsets from it (16 rows' bytes).
  const glm_u8 *w_warp = w + static_cast<unsigned long long>(min(wrow0, N - 1)) * row_bytes;
  uint32_t cp_src[kCopyIters]; // offset of row start + the chunk's offset in the cover
  uint32_t cp_dst[kCopyIters]; // in slot 0; ~0u: no chunk for this lane
  uint32_t cp_tail = 0;        // bit q: chunk q is the tail chunk
#pragma unroll
  for (int q = 0; q < kCopyIters; ++q) {
    const int c = lane + 32 * q, r = c / GLM_SLOT_CHUNKS, ch = 16 * (c % GLM_SLOT_CHUNKS);
    const int row = min(wrow0 + min(r, 15), N - 1);
    cp_src[q] = static_cast<uint32_t>((row - min(wrow0, N - 1)) * row_bytes + ch);
    cp_dst[q] = c < 16 * GLM_SLOT_CHUNKS ? ring_s + r * GLM_SLOT + ch : ~0u;
    cp_tail |= (ch >= GLM_MV_STEP_BYTES ? 1u : 0u) << q;
  }
  auto issue = [&](int i) {
    if (i < nsteps) {
      const unsigned long long off =
          static_cast<unsigned long long>(static_cast<unsigned>(k_begin + i * GLM_MV_STEP) /
                                          GLM_QK) *
          GLM_QBYTES;
      const uint32_t slot = (i % GLM_STAGES) * 16 * GLM_SLOT;
      const uint32_t skip = static_cast<int>(off & 15) <= kTailSlack ? cp_tail : 0u;
#pragma unroll
      for (int q = 0; q < kCopyIters; ++q)
        if ((32 * (q + 1) <= 16 * GLM_SLOT_CHUNKS || cp_dst[q] != ~0u) && !((skip >> q) & 1u))
          glm_cp_async_16<GLM_MV_L1, GLM_MV_PF>(cp_dst[q] + slot,
                                                w_warp + cp_src[q] + (off & ~15ull), 16);
    }
#else
  // Any row alignment (and BF16, whose last step of K may be partial): per chunk, its row's
  // offset and the step's.
#if !GLM_MV_ALIGNED16
  const unsigned long long total = static_cast<unsigned long long>(N) * row_bytes; // tensor end
#endif
  unsigned long long cp_row[kCopyIters];
  int cp_dst[kCopyIters], cp_ch[kCopyIters];
#pragma unroll
  for (int q = 0; q < kCopyIters; ++q) {
    const int c = lane + 32 * q, r = c / GLM_SLOT_CHUNKS;
    cp_row[q] = static_cast<unsigned long long>(min(wrow0 + min(r, 15), N - 1)) * row_bytes;
    cp_ch[q] = 16 * (c % GLM_SLOT_CHUNKS);
    cp_dst[q] = c < 16 * GLM_SLOT_CHUNKS ? r * GLM_SLOT + cp_ch[q] : -1;
  }
  auto issue = [&](int i) {
    if (i < nsteps) {
      const int k = k_begin + i * GLM_MV_STEP;
      const int nel = min(GLM_MV_STEP, k_end - k);
      const long long off = static_cast<long long>(k / GLM_QK) * GLM_QBYTES;
      const int bytes = nel / GLM_QK * GLM_QBYTES;
      glm_u8 *dst = ring + (i % GLM_STAGES) * 16 * GLM_SLOT;
#pragma unroll
      for (int q = 0; q < kCopyIters; ++q) {
#if GLM_MV_ALIGNED16
        // Rows and steps start 16-byte aligned: the chunk is inside the row (and the tensor).
        const bool go = cp_dst[q] >= 0 && cp_ch[q] < bytes;
        const unsigned long long a = cp_row[q] + off + cp_ch[q];
        const int n = 16;
#else
        const unsigned long long start = cp_row[q] + off;
        const unsigned long long a = (start & ~15ull) + cp_ch[q];
        const bool go = cp_dst[q] >= 0 && a < start + bytes;
        const int n = static_cast<int>(min(16ull, total - a));
#endif
        if (go)
          glm_cp_async_16<GLM_MV_L1, GLM_MV_PF>(glm_smem_addr(dst + cp_dst[q]), w + a, n);
      }
    }
#endif
    glm_cp_async_commit(); // possibly empty: the group count stays one per step
  };

  // GLM_MV_XPREFETCH: chunk 0's copy is a commit group of its own after the first GLM_STAGES - 1
  // steps' weights (it reads x, so it follows the chain): the first step waits for every group.
  // Chunk c's (c >= 1) joins the weights of the step that follows chunk c - 1's staging: at chunk
  // c's first step, before that step's weights are issued, GLM_SPC - 1 groups are newer than
  // chunk c's copy, and waiting for all but the newest kXRawPending leaves the step's own weights
  // in flight while the chunk is staged (GLM_SPC >= 2).
  constexpr int kXRawPending = GLM_STAGES - 1 < GLM_SPC - 1 ? GLM_STAGES - 1 : GLM_SPC - 1;
  if (!GLM_MV_LATE_FILL)
    for (int s = 0; s < GLM_STAGES - 1; ++s)
      issue(s);
  chain();
  GLM_QL_STAMP(1);
  if (GLM_MV_XPREFETCH) {
    if (nsteps > 0)
      glm_xraw_issue(x, xraw, K, k_begin, min(GLM_KC, k_end - k_begin));
    glm_cp_async_commit();
  }
  float acc[4] = {0.f, 0.f, 0.f, 0.f}; // rows g, g+8 x tokens 2t, 2t+1 (the mma C fragment)
#if GLM_MV_COLS
  const glm_mv_xoff xo = glm_mv_xoff_of(g, GLM_XROW); // the B fragments' rows
#else
  const glm_mv_xoff xo = {}; // unused
#endif
  const long long ra_row = min(wrow0 + g, N - 1), rb_row = min(wrow0 + g + 8, N - 1);
#if GLM_MV_XF16
  // acc is kept in the units of the current chunk's x scale (a power of two: exact rescales).
  float acc_sc = 1.f;
  auto rescale = [&](float xsc) {
    if (xsc != acc_sc) {
#pragma unroll
      for (int c = 0; c < 4; ++c)
        acc[c] *= xsc / acc_sc;
      acc_sc = xsc;
    }
  };
#endif
  for (int i = 0; i < nsteps; ++i) {
    const int k = k_begin + i * GLM_MV_STEP;
    const int e = (i % GLM_SPC) * GLM_MV_STEP; // the step's offset in the x chunk
#if GLM_MV_XWARP
    if (e == 0) {
      const int c = i / GLM_SPC;
      if (c > 0) { // chunk c - 1 is done in this warp
        __syncwarp();
        if (lane == 0)
          glm_mbar_arrive(released + (c - 1) % GLM_MV_XWARP);
      }
      glm_mbar_wait(staged + c % GLM_MV_XWARP, (c / GLM_MV_XWARP) & 1);
#ifdef GLM_QL_TRACE
      if (i == 0)
        GLM_QL_STAMP(2);
#endif
    }
    const glm_bf16 *xc = xs + (i / GLM_SPC) % GLM_MV_XWARP * GLM_TOKENS * GLM_XROW;
#else
    const glm_bf16 *xc = xs;
    if (e == 0 && (!GLM_QL_X_ONCE || i == 0)) {
#if GLM_MV_XPREFETCH
      if (i == 0)
        glm_cp_async_wait<0>(); // chunk 0's copy is the newest group
      else
        glm_cp_async_wait<kXRawPending>(); // this thread's copies of the chunk have landed
#endif
      __syncthreads(); // every warp is done with the previous chunk (and the copy is visible)
      const int kc = min(GLM_KC, k_end - k);
      const glm_act *xsrc = GLM_MV_XPREFETCH ? xraw : x + k;
      const int xstride = GLM_MV_XPREFETCH ? GLM_KC : K;
#if GLM_MV_XF16
      const float xmax = glm_stage_x(xsrc, xstride, xs, xsum, kc);
      if (__syncthreads_or(xmax > 65504.f)) {
        // Some |x| is past fp16's range (rare): stage the chunk again as x * 2^-s, its
        // largest value (over every chunk so far: s_xmax only grows) below 2^15.
        const unsigned m = __reduce_max_sync(0xffffffffu, __float_as_uint(xmax)); // xmax >= 0
        if (lane == 0)
          atomicMax(&s_xmax, m);
        __syncthreads();
        int ex;
        frexpf(__uint_as_float(s_xmax), &ex); // s_xmax < 2^ex
        const float xsc = ldexpf(1.f, 15 - ex);
        glm_stage_x(xsrc, xstride, xs, xsum, kc, xsc);
        __syncthreads();
        rescale(xsc);
      } else {
        rescale(1.f);
      }
#elif GLM_MV_XI8
      glm_stage_x8(xsrc, xstride, xq8, xd8, xm8, kc);
      __syncthreads();
#else
      glm_stage_x(xsrc, xstride, xs, xsum, kc);
      __syncthreads();
#endif
#ifdef GLM_QL_TRACE
      if (i == 0)
        GLM_QL_STAMP(2);
#endif
#if GLM_MV_XPREFETCH
      if (k + GLM_KC < k_end) // the next chunk's copy: every thread is past its last read of raw
        glm_xraw_issue(x, xraw, K, k + GLM_KC, min(GLM_KC, k_end - k - GLM_KC));
#endif
    }
#endif // GLM_MV_XWARP
    if (GLM_MV_LATE_FILL && i == 0) // the first fill, after chunk 0 is staged
      for (int s = 0; s < GLM_STAGES - 1; ++s)
        issue(s);
    issue(i + GLM_STAGES - 1); // into the slot step i - 1 used (released by the __syncwarp)
    glm_cp_async_wait<GLM_STAGES - 1>(); // this thread's copies of step i have landed
    __syncwarp();                        // ... and every lane's
    const glm_u8 *slot = ring + (i % GLM_STAGES) * 16 * GLM_SLOT;
    const long long off = static_cast<long long>(static_cast<unsigned>(k) / GLM_QK) * GLM_QBYTES;
#if GLM_MV_ALIGNED16 || GLM_MV_ROWS16
    const int mis_a = static_cast<int>(off & 15), mis_b = mis_a; // rows start 16-byte aligned
#else
    const int mis_a = static_cast<int>((ra_row * row_bytes + off) & 15);
    const int mis_b = static_cast<int>((rb_row * row_bytes + off) & 15);
#endif
    const glm_u8 *ra = slot + g * GLM_SLOT + mis_a;
    const glm_u8 *rb = slot + (g + 8) * GLM_SLOT + mis_b;
#if GLM_XSUM_STAGED
    const float *xsum_step = xsum + e / GLM_XSUM_GRAN * 8;
#else
    const float *xsum_step = xsum;
#endif
#if GLM_QL_NO_STEP
    (void)xsum_step;
    acc[0] += static_cast<float>(ra[4 * t] ^ rb[4 * t]);
#elif GLM_MV_XI8
    (void)xsum_step;
    glm_mv_step_i8(ra, rb, xq8 + e, GLM_XROW8, xd8 + e / GLM_MV_STEP * 64,
                   xm8 + e / GLM_MV_STEP * GLM_XI8_SUM_WORDS, min(GLM_MV_STEP, k_end - k), g, t,
                   acc);
#else
    glm_mv_step(ra, rb, xc + e, GLM_XROW, xo, xsum_step, min(GLM_MV_STEP, k_end - k), g, t, acc);
#endif
    __syncwarp(); // the slot may be refilled
  }
  glm_cp_async_wait<0>();
  GLM_QL_STAMP(3);
#if GLM_MV_XF16
  rescale(1.f);
#endif
#if GLM_MV_COLS
  // acc[0] and acc[2] hold this lane's scale groups: the rows' sums are over the quad.
#pragma unroll
  for (int c = 0; c < 4; c += 2) {
    acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], 1);
    acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], 2);
  }
#endif

#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int row = wrow0 + g + (c >= 2 ? 8 : 0), tok = 2 * t + (c & 1);
    if (row < N && tok < GLM_TOKENS)
      emit(c, second ? N + row : row, tok, acc[c]);
  }
#else
  static_assert(!kPaired, "paired products take the mma path");
  chain(); // rows are read straight from global memory, in the loop
  float *xf = reinterpret_cast<float *>(smem);
  const int wrow0 = row0 + warp * GLM_RPW;
  float acc[GLM_RPW][GLM_TOKENS];
#pragma unroll
  for (int r = 0; r < GLM_RPW; ++r)
#pragma unroll
    for (int tok = 0; tok < GLM_TOKENS; ++tok)
      acc[r][tok] = 0.f;
  for (int k0 = k_begin; k0 < k_end; k0 += GLM_KC) {
    const int kc = min(GLM_KC, k_end - k0);
    __syncthreads(); // every warp is done with the previous chunk
    for (int i = tid; i < GLM_TOKENS * kc; i += GLM_THREADS) {
      const int tok = i / kc, e = i % kc;
      xf[tok * GLM_XFROW + e / 32 * 36 + e % 32] =
          glm_act_load(x, static_cast<long long>(tok) * K + k0 + e);
    }
    __syncthreads();
    const int nsub = kc / 32;
#pragma unroll
    for (int r = 0; r < GLM_RPW; ++r) {
      const int row = wrow0 + r;
      if (row < N) { // uniform per warp
        const glm_u8 *wr = w + row * row_bytes;
        for (int s = lane; s < nsub; s += 32) {
          float v[32];
          glm_dq32(wr, k0 / 32 + s, v);
#pragma unroll
          for (int tok = 0; tok < GLM_TOKENS; ++tok) {
            const float4 *xp = reinterpret_cast<const float4 *>(xf + tok * GLM_XFROW + s * 36);
            float a = acc[r][tok];
#pragma unroll
            for (int q = 0; q < 8; ++q) {
              const float4 xv = xp[q];
              a = fmaf(v[4 * q + 0], xv.x, a);
              a = fmaf(v[4 * q + 1], xv.y, a);
              a = fmaf(v[4 * q + 2], xv.z, a);
              a = fmaf(v[4 * q + 3], xv.w, a);
            }
            acc[r][tok] = a;
          }
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < GLM_RPW; ++r)
#pragma unroll
    for (int tok = 0; tok < GLM_TOKENS; ++tok) {
      const float v = glm_warp_sum(acc[r][tok]); // every lane holds the sum
      const int row = wrow0 + r;
      if (lane == (r * GLM_TOKENS + tok) % 32 && row < N)
        emit(r * GLM_TOKENS + tok, row, tok, v);
    }
#endif
}

#if GLM_QL_KIND == 0
extern "C" __global__ void __launch_bounds__(GLM_CTA_THREADS, GLM_MIN_BLOCKS)
    qlinear_decode(const glm_u8 *__restrict__ w,    // {K, N} GGUF blocks
                   const glm_act *__restrict__ x,   // [GLM_TOKENS, K]
                   glm_act *__restrict__ y,         // [GLM_TOKENS, N]
                   float *__restrict__ ws,          // [splits, GLM_TOKENS, N] when splits > 1
                   unsigned *__restrict__ counters, // [gridDim.x] when splits > 1
                   int N, int K, int k_per_split) { // k_per_split: a multiple of 256
  const int split = blockIdx.y, splits = gridDim.y;
  const int k_begin = split * k_per_split;
  const int row0 = blockIdx.x * GLM_CTA_ROWS;
  glm_ql_decode_cta(
      w, nullptr, x, N, K, row0, k_begin, min(K, k_begin + k_per_split),
      [&](int, int row, int tok, float v) { glm_ql_emit(y, ws, N, row, tok, v, split, splits); },
      [] { glm_grid_chain(); }); // after the weights' first copies
  glm_ql_fixup(y, ws, counters, N, row0, splits);
  GLM_QL_STAMP(4);
  glm_ql_stamp_sm();
}

#elif GLM_QL_KIND == 6
// Two to four products of one x (glm.linears): product m's row tiles are the consecutive CTAs
// [sum_{j<m} ceil(N_j / GLM_CTA_ROWS), ...) of x, and each CTA is qlinear_decode's for its
// product (N_m = 0: no such product). Splits over y as qlinear_decode's; product m's partials
// are ws + splits GLM_TOKENS sum_{j<m} N_j, its counters those of its CTAs.
struct glm_ql_multi {
  const glm_u8 *w[4];
  glm_act *y[4];
  int n[4];
};
extern "C" __global__ void __launch_bounds__(GLM_THREADS, GLM_MIN_BLOCKS)
    qlinear_decode_multi(glm_ql_multi p,                 // weights {K, N_m}, outputs [T, N_m]
                         const glm_act *__restrict__ x,   // [GLM_TOKENS, K]
                         float *__restrict__ ws,          // [splits, T, N_m] per product
                         unsigned *__restrict__ counters, // [gridDim.x] when splits > 1
                         int K, int k_per_split) {        // k_per_split: a multiple of 256
  const int split = blockIdx.y, splits = gridDim.y;
  // This CTA's product m and tile within it. Only constant indices into p: a dynamic one would
  // copy the parameter block to local memory (before the grid chain's wait).
  int m = 0, tile = blockIdx.x;
  long long wsOff = 0;
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const int tiles = (p.n[j] + GLM_CTA_ROWS - 1) / GLM_CTA_ROWS;
    if (m == j && tile >= tiles) {
      tile -= tiles;
      wsOff += static_cast<long long>(splits) * GLM_TOKENS * p.n[j];
      m = j + 1;
    }
  }
  const int N = m == 0 ? p.n[0] : m == 1 ? p.n[1] : m == 2 ? p.n[2] : p.n[3];
  const glm_u8 *w = m == 0 ? p.w[0] : m == 1 ? p.w[1] : m == 2 ? p.w[2] : p.w[3];
  glm_act *y = m == 0 ? p.y[0] : m == 1 ? p.y[1] : m == 2 ? p.y[2] : p.y[3];
  const int row0 = tile * GLM_CTA_ROWS;
  float *wsm = ws + wsOff;
  const int k_begin = split * k_per_split;
  glm_ql_decode_cta(
      w, nullptr, x, N, K, row0, k_begin, min(K, k_begin + k_per_split),
      [&](int, int row, int tok, float v) { glm_ql_emit(y, wsm, N, row, tok, v, split, splits); },
      [] { glm_grid_chain(); }); // after the weights' first copies
  glm_ql_fixup(y, wsm, counters, N, row0, splits);
}

#else // GLM_QL_KIND 3 or 4: MoE routed experts at decode, one matrix-vector product per pair
// (5: one gate/up product, glm.gate_up, on the same code as kind 3)
// Pair p = t * topk + j (token t, slot j) runs expert ids[p] on x row t: CTA (x, y, z) takes
// output rows [x GLM_CTA_ROWS, ...) of pair y over split z of the K range (k_per_split, a
// multiple of 256; runtime/launch moeDecodeGrid). Stacked GGUF weights (moe_experts.cuh): gate
// and up {H, F, E}, expert e is rows [e F, (e + 1) F); down {F, H, E}, rows [e H, (e + 1) H). A
// rank's weights are its box, experts [first, first + experts): a pair routed elsewhere (or an id
// out of range) writes nothing, as moe_group leaves such pairs unplaced -- none of its CTAs
// counts, so its counters stay 0. GLM_TOKENS is 1 (one token per pair). Every expert's weights
// are read once per pair routed to it: the path for a few pairs (decode); many pairs share
// experts and take the tiled kernels of moe_experts.cuh. With more than one split, the splits
// write fp32 partials to ws and the last of a (row block, pair) to finish (counter p gridDim.x +
// x, glm_ql_last_split) sums them and writes the output.
static_assert(GLM_TOKENS == 1, "one token per pair (and per glm.gate_up)");
__device__ __forceinline__ float glm_mv_silu(float z) { return z / (1.f + expf(-z)); }

#if GLM_QL_KIND == 3 || GLM_QL_KIND == 5
// h[f] = silu(gate[f] . x) * (up[f] . x) for f < F, as activations, gate and up {H, F}. A CTA
// covers GLM_GU_ROWS rows of h (the registry's rows_per_cta): on the mma path half of its warps
// stream gate's rows and half up's, in one pipeline (their results meet in shared memory); on the
// fp32 path it runs gate, keeping the products in registers (same slots), then up.
#if GLM_MV_USE_MMA
#define GLM_GU_ROWS (GLM_CTA_ROWS / 2)
#else
#define GLM_GU_ROWS GLM_CTA_ROWS
#endif
// One CTA: rows [row0, row0 + GLM_GU_ROWS) of h over k in [k_begin, k_end), split `split` of
// `splits`. With more than one split, part(s) is split s's fp32 partials ([2, F]: gate, up) and
// *counter this row block's split count (glm_ql_last_split). chain: as glm_ql_decode_cta's.
template <typename Part, typename Chain>
__device__ __forceinline__ void glm_gate_up_cta(const glm_u8 *__restrict__ wg,
                                                const glm_u8 *__restrict__ wu,
                                                const glm_act *__restrict__ x,
                                                glm_act *__restrict__ h, Part part,
                                                unsigned *counter, int F, int H, int row0,
                                                int k_begin, int k_end, int split, int splits,
                                                Chain chain) {
  float *mine = part(split);
#if GLM_MV_USE_MMA
  // Gate and up in one pipeline (glm_ql_decode_cta kPaired): up's rows come back as F + row.
  __shared__ float s_gu[2][GLM_GU_ROWS];
  glm_ql_decode_cta<true>(
      wg, wu, x, F, H, row0, k_begin, k_end,
      [&](int, int row, int, float v) {
        const int up = row >= F ? 1 : 0;
        if (splits == 1)
          s_gu[up][row - up * F - row0] = v;
        else
          mine[row] = v; // gate at [0, F), up at [F, 2 F)
      },
      chain);
  if (splits == 1) {
    __syncthreads();
    for (int row = row0 + threadIdx.x; row < min(F, row0 + GLM_GU_ROWS); row += GLM_THREADS)
      glm_act_store(h, row, glm_mv_silu(s_gu[0][row - row0]) * s_gu[1][row - row0]);
    return;
  }
#else
  float gate[GLM_EMIT_SLOTS];
  glm_ql_decode_cta(
      wg, nullptr, x, F, H, row0, k_begin, k_end,
      [&](int slot, int, int, float v) { gate[slot] = v; }, chain);
  __syncthreads(); // x is staged again for the second product
  glm_ql_decode_cta(
      wu, nullptr, x, F, H, row0, k_begin, k_end,
      [&](int slot, int row, int, float v) {
        if (splits == 1) {
          glm_act_store(h, row, glm_mv_silu(gate[slot]) * v);
        } else {
          mine[row] = gate[slot];
          mine[F + row] = v;
        }
      },
      [] {});
#endif
  if (splits == 1 || !glm_ql_last_split(counter, splits))
    return;
  for (int row = row0 + threadIdx.x; row < min(F, row0 + GLM_GU_ROWS); row += GLM_THREADS) {
    float g = 0.f, u = 0.f;
    for (int sp = 0; sp < splits; ++sp) {
      const float *q = part(sp);
      g += __ldcg(q + row);
      u += __ldcg(q + F + row);
    }
    glm_act_store(h, row, glm_mv_silu(g) * u);
  }
  glm_ql_rearm(counter);
}

#if GLM_QL_KIND == 3
// Pair p's h row from its expert's gate and up. ws: [splits, P, 2, F] when split.
extern "C" __global__ void __launch_bounds__(GLM_THREADS, GLM_MIN_BLOCKS)
    moe_expert_decode_gate_up(const glm_u8 *__restrict__ w_gate, // {H, F, E_rank}
                              const glm_u8 *__restrict__ w_up,   // {H, F, E_rank}
                              const glm_act *__restrict__ x,     // [T, H]
                              const int32_t *__restrict__ ids,   // [T * topk]
                              glm_act *__restrict__ h,           // [T * topk, F]
                              float *__restrict__ ws, unsigned *__restrict__ counters,
                              int first, int experts, int topk, int F, int H, int k_per_split) {
  glm_grid_chain();
  const int p = blockIdx.y, e = ids[p] - first;
  if (e < 0 || e >= experts)
    return;
  const int split = blockIdx.z, splits = gridDim.z, P = gridDim.y;
  const int k_begin = split * k_per_split;
  const long long off = static_cast<long long>(e) * F * (H / GLM_QK) * GLM_QBYTES;
  glm_gate_up_cta(
      w_gate + off, w_up + off, x + static_cast<long long>(p / topk) * H,
      h + static_cast<long long>(p) * F,
      [&](int sp) { return ws + (static_cast<long long>(sp) * P + p) * 2 * F; },
      counters + p * gridDim.x + blockIdx.x, F, H, blockIdx.x * GLM_GU_ROWS, k_begin,
      min(H, k_begin + k_per_split), split, splits, [] {});
}
#else
// A dense FFN's or the shared expert's gate/up at decode (glm.gate_up): one token, grid (row
// blocks, 1, K splits) as runtime/launch moeDecodeGrid gives for one pair. The weights do not
// depend on the predecessor: the first copies go out before the grid chain's wait.
// ws: [splits, 2, F] when split; counters: [gridDim.x].
extern "C" __global__ void __launch_bounds__(GLM_THREADS, GLM_MIN_BLOCKS)
    qlinear_decode_gate_up(const glm_u8 *__restrict__ w_gate, // {H, F}
                           const glm_u8 *__restrict__ w_up,   // {H, F}
                           const glm_act *__restrict__ x,     // [1, H]
                           glm_act *__restrict__ h,           // [1, F]
                           float *__restrict__ ws, unsigned *__restrict__ counters, int F, int H,
                           int k_per_split) {
  const int split = blockIdx.z, splits = gridDim.z;
  const int k_begin = split * k_per_split;
  glm_gate_up_cta(
      w_gate, w_up, x, h, [&](int sp) { return ws + static_cast<long long>(sp) * 2 * F; },
      counters + blockIdx.x, F, H, blockIdx.x * GLM_GU_ROWS, k_begin,
      min(H, k_begin + k_per_split), split, splits, [] { glm_grid_chain(); });
}
#endif
#else
// out[p, :] = down_e h[p] (fp32, what moe_combine reads). ws: [splits, P, H] when split.
extern "C" __global__ void __launch_bounds__(GLM_THREADS, GLM_MIN_BLOCKS)
    moe_expert_decode_down(const glm_u8 *__restrict__ w_down, // {F, H, E_rank}
                           const glm_act *__restrict__ h,     // [T * topk, F]
                           const int32_t *__restrict__ ids,   // [T * topk]
                           float *__restrict__ out,           // [T * topk, H]
                           float *__restrict__ ws, unsigned *__restrict__ counters, int first,
                           int experts, int F, int H, int k_per_split) {
  glm_grid_chain();
  const int p = blockIdx.y, e = ids[p] - first;
  if (e < 0 || e >= experts)
    return;
  const int split = blockIdx.z, splits = gridDim.z, P = gridDim.y;
  const int k_begin = split * k_per_split, k_end = min(F, k_begin + k_per_split);
  const long long off = static_cast<long long>(e) * H * (F / GLM_QK) * GLM_QBYTES;
  const int row0 = blockIdx.x * GLM_CTA_ROWS;
  float *dst = splits == 1 ? out + static_cast<long long>(p) * H
                           : ws + (static_cast<long long>(split) * P + p) * H;
  glm_ql_decode_cta(
      w_down + off, nullptr, h + static_cast<long long>(p) * F, H, F, row0, k_begin, k_end,
      [&](int, int row, int, float v) { dst[row] = v; }, [] {});
  if (splits == 1 || !glm_ql_last_split(counters + p * gridDim.x + blockIdx.x, splits))
    return;
  for (int row = row0 + threadIdx.x; row < min(H, row0 + GLM_CTA_ROWS); row += GLM_THREADS) {
    float s = 0.f;
    for (int sp = 0; sp < splits; ++sp)
      s += __ldcg(ws + (static_cast<long long>(sp) * P + p) * H + row);
    out[static_cast<long long>(p) * H + row] = s;
  }
  glm_ql_rearm(counters + p * gridDim.x + blockIdx.x);
}
#endif
#endif

// ---------------------------------------------------------------------------------------------
#elif GLM_QL_KIND == 1 // prefill

#if !GLM_ACT_F32
#define GLM_BM 64
#define GLM_BN 128
#define GLM_BK 64
#define GLM_THREADS 256
#define GLM_PROW (GLM_BK + 8) // bf16; 144-byte rows: ldmatrix's 8 rows hit distinct banks
#define GLM_SMEM_XT 0
#define GLM_SMEM_WT (GLM_SMEM_XT + GLM_BM * GLM_PROW * 2)
#define GLM_SMEM_BYTES (GLM_SMEM_WT + GLM_BN * GLM_PROW * 2)

// 8 warps: warp w takes tokens 32 (w % 2) .. +31 and rows 32 (w / 2) .. +31 of the tile.
extern "C" __global__ void __launch_bounds__(GLM_THREADS, 2)
    qlinear_prefill(const glm_u8 *__restrict__ w, const glm_act *__restrict__ x,
                    glm_act *__restrict__ y, int T, int N, int K) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  glm_bf16 *xt = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_XT);
  glm_bf16 *wt = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_WT);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4, wm = warp % 2, wn = warp / 2;
  const int n0 = blockIdx.x * GLM_BN, m0 = blockIdx.y * GLM_BM;
  const long long row_bytes = static_cast<long long>(K / GLM_QK) * GLM_QBYTES;
  float acc[2][4][4];
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
      acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.f;

  for (int k0 = 0; k0 < K; k0 += GLM_BK) {
    __syncthreads(); // the previous tile is consumed
    // x tile: 16-byte cp.async, zero-filled past T and K.
    for (int c = tid; c < GLM_BM * GLM_BK / 8; c += GLM_THREADS) {
      const int m = c / (GLM_BK / 8), kk = c % (GLM_BK / 8) * 8;
      const bool ok = m0 + m < T && k0 + kk < K;
      const glm_act *src = x + (ok ? static_cast<long long>(m0 + m) * K + k0 + kk : 0);
      glm_cp_async_16(glm_smem_addr(xt + m * GLM_PROW + kk), src, ok ? 16 : 0);
    }
    glm_cp_async_commit();
    // Weight tile: one (row, 32-element sub-block) per thread, exact fp32 then bf16.
    for (int c = tid; c < GLM_BN * (GLM_BK / 32); c += GLM_THREADS) {
      const int n = c / (GLM_BK / 32), sb = c % (GLM_BK / 32);
      const int row = n0 + n, kk = k0 + 32 * sb;
      float v[32];
      if (row < N && kk < K) {
        glm_dq32(w + row * row_bytes, kk / 32, v);
      } else {
#pragma unroll
        for (int j = 0; j < 32; ++j)
          v[j] = 0.f;
      }
      glm_store_bf16x32(v, wt + n * GLM_PROW + 32 * sb);
    }
    glm_cp_async_wait<0>();
    __syncthreads();
    glm_tile_mma_64x128<GLM_BK, GLM_PROW>(xt, wt, wm, wn, lane, acc);
  }

#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int tok = m0 + wm * 32 + mi * 16 + g + (e / 2) * 8;
        const int row = n0 + wn * 32 + ni * 8 + 2 * t + (e % 2);
        if (tok < T && row < N)
          glm_act_store(y, static_cast<long long>(tok) * N + row, acc[mi][ni][e]);
      }
}

#else // GLM_ACT_F32: exact fp32 weights and a SIMT product
#define GLM_BM 64
#define GLM_BN 64
#define GLM_BK 32
#define GLM_THREADS 256
#define GLM_FROW (GLM_BM + 4) // k-major fp32 tiles; float4 rows stay 16-byte aligned
#define GLM_SMEM_XT 0
#define GLM_SMEM_WT (GLM_SMEM_XT + GLM_BK * GLM_FROW * 4)
#define GLM_SMEM_BYTES (GLM_SMEM_WT + GLM_BK * GLM_FROW * 4)
static_assert(GLM_BM == GLM_BN, "one padded row length for both tiles");

// Thread (ty, tx) = (tid / 16, tid % 16): tokens 4 ty .. +3 x rows 4 tx .. +3 of the tile.
extern "C" __global__ void __launch_bounds__(GLM_THREADS, 2)
    qlinear_prefill(const glm_u8 *__restrict__ w, const glm_act *__restrict__ x,
                    glm_act *__restrict__ y, int T, int N, int K) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  float *xt = reinterpret_cast<float *>(smem + GLM_SMEM_XT); // [k][token]
  float *wt = reinterpret_cast<float *>(smem + GLM_SMEM_WT); // [k][row]
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int n0 = blockIdx.x * GLM_BN, m0 = blockIdx.y * GLM_BM;
  const long long row_bytes = static_cast<long long>(K / GLM_QK) * GLM_QBYTES;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      acc[i][j] = 0.f;
  for (int k0 = 0; k0 < K; k0 += GLM_BK) {
    __syncthreads();
    if (tid < GLM_BN) {
      const int row = n0 + tid;
      float v[32];
      if (row < N) {
        glm_dq32(w + row * row_bytes, k0 / 32, v);
      } else {
#pragma unroll
        for (int j = 0; j < 32; ++j)
          v[j] = 0.f;
      }
#pragma unroll
      for (int j = 0; j < 32; ++j)
        wt[j * GLM_FROW + tid] = v[j];
    }
    for (int i = tid; i < GLM_BM * GLM_BK; i += GLM_THREADS) {
      const int m = i % GLM_BM, kk = i / GLM_BM;
      xt[kk * GLM_FROW + m] =
          m0 + m < T ? glm_act_load(x, static_cast<long long>(m0 + m) * K + k0 + kk) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < GLM_BK; ++kk) {
      const float4 a = *reinterpret_cast<const float4 *>(xt + kk * GLM_FROW + 4 * ty);
      const float4 b = *reinterpret_cast<const float4 *>(wt + kk * GLM_FROW + 4 * tx);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int tok = m0 + 4 * ty + i, row = n0 + 4 * tx + j;
      if (tok < T && row < N)
        glm_act_store(y, static_cast<long long>(tok) * N + row, acc[i][j]);
    }
}
#endif

// ---------------------------------------------------------------------------------------------
#elif GLM_QL_KIND == 2 // embedding lookup

#define GLM_THREADS 128
#define GLM_SMEM_BYTES 0

extern "C" __global__ void __launch_bounds__(GLM_THREADS, 4)
    qlinear_embed(const glm_u8 *__restrict__ table,   // {H, V}
                  const int32_t *__restrict__ tokens, // [T]
                  glm_act *__restrict__ out,          // [T, H]
                  int *__restrict__ err,              // max(bad position + 1), 0 if none
                  int V, int H) {
  glm_grid_chain();
  const int pos = blockIdx.x;
  const int tok = tokens[pos];
  const bool bad = tok < 0 || tok >= V;
  const glm_u8 *row = table + static_cast<long long>(bad ? 0 : tok) * (H / GLM_QK) * GLM_QBYTES;
  for (int s = threadIdx.x; s < H / 32; s += GLM_THREADS) {
    float v[32];
    if (!bad) {
      glm_dq32(row, s, v);
    } else {
#pragma unroll
      for (int j = 0; j < 32; ++j)
        v[j] = 0.f;
    }
#pragma unroll
    for (int j = 0; j < 32; ++j)
      glm_act_store(out, static_cast<long long>(pos) * H + 32 * s + j, v[j]);
  }
  if (bad && threadIdx.x == 0)
    atomicMax(err, pos + 1);
}

#else
#error "unknown GLM_QL_KIND"
#endif
