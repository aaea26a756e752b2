// MoE router and routed experts (docs/model.md "MoE"): the fused router (logits, then moe.cuh's
// sigmoid gate with biased top-k) and the experts' SwiGLU over GGUF stacked weights, by expert.
//
// GLM_MOE_KIND selects the entry point of an instantiation:
//   0 moe_router:         logits[t, e] = W_router[e] . x[t], then the gate (weights, ids);
//   1 moe_expert_gate_up: h[q, f] = silu(gate_e[f] . x[t]) * (up_e[f] . x[t]);
//   2 moe_expert_down:    out[p, :] = down_e h[q].
// Constants: GLM_WTYPE (the weight's ggml type, dequant.cuh), GLM_ACT_F32, GLM_EXPERTS (E),
// GLM_TOPK_E (k), GLM_HIDDEN (H); the router adds GLM_NORMALIZE, the experts GLM_FFN (F).
//
// Vocabulary of the expert kernels (moe.cuh's moe_group produces offsets and pair_of):
//   pair p = t * k + j: token t, slot j, routed to expert ids[p];
//   position q: the expert-major index, pair_of[q] = p; expert e owns [offsets[e], offsets[e+1]);
//   h [T * k, F] (glm_act) is indexed by position, out [T * k, H] (fp32, what moe_combine reads)
//   by pair. A pair whose id is outside [0, E) is not placed by moe_group: its out row is not
//   written.
// Stacked weights, rows of the GGUF tensor: gate and up {H, F, E}: expert e is rows
// [e F, (e + 1) F) of H elements; down {F, H, E}: rows [e H, (e + 1) H) of F elements.
//
// The expert kernels walk a tile list: tile j of expert e covers positions
// [offsets[e] + 64 j, min(offsets[e + 1], offsets[e] + 64 (j + 1))), tiles ordered by expert,
// then j. CTA (x, y) takes tile y and output-row block x, so every tile reads the expert's rows
// once per 64 positions (decode, at most 64 pairs per expert: once per launch). gridDim.y =
// ceil((P + A * 63) / 64) with P = T * k and A = min(E, P) bounds the tile count; CTAs past the
// end return at once.
//
// bf16 activations: a CTA tile of 64 positions x 128 weight rows x 64 k, the weight tile exact
// in fp32 (glm_dq32) then bf16 in shared memory, mma.sync m16n8k16 (qlinear_prefill's tiles; x
// rows gathered through pair_of). f32 activations (validation): 64 x 64 x 32 tiles of exact fp32
// weights and a SIMT product: exact up to summation order. The gate/up tile interleaves gate and
// up rows of the same f, so one thread holds both products of (q, f) and applies SwiGLU.
#pragma once
#include "dequant.cuh"

#ifndef GLM_MOE_KIND
#error "GLM_MOE_KIND must be defined (0 router, 1 expert gate/up, 2 expert down)"
#endif

static_assert(GLM_EXPERTS >= 1, "at least one expert");
static_assert(GLM_TOPK_E >= 1 && GLM_TOPK_E <= GLM_EXPERTS, "1 <= k <= E");
static_assert(GLM_HIDDEN % 32 == 0, "H is whole 32-element sub-blocks");

// ---------------------------------------------------------------------------------------------
#if GLM_MOE_KIND == 0 // router

#if GLM_WTYPE != GLM_T_F32 && GLM_WTYPE != GLM_T_BF16
#error "the router weight is F32 or BF16"
#endif
static_assert(GLM_TOPK_E <= 32, "one lane keeps each chosen slot");
#define GLM_RT_THREADS 256
#define GLM_RT_WARPS (GLM_RT_THREADS / 32)
#define GLM_RT_PER_LANE ((GLM_EXPERTS + 31) / 32)
#define GLM_RT_ROW_BYTES (GLM_HIDDEN / GLM_QK * GLM_QBYTES) // H * 4 (F32) or H * 2 (BF16)
// Dynamic shared memory: x[t] as fp32 [H], then the token's logits [E] (the registry's total).
#define GLM_RT_SMEM_BYTES ((GLM_HIDDEN + GLM_EXPERTS) * 4)

// row . xs over H elements, lanes striding 16-byte chunks (F32: 4 elements, BF16: 8); every lane
// returns the sum. row and xs are 16-byte aligned (rows are multiples of 64 bytes).
// A router row is scored by GLM_RT_PARTS warps, warp p over chunks [p C / P, (p + 1) C / P) of
// its C 16-byte chunks; the parts are added in part order, so each logit is a fixed-order sum
// whatever the split. At GLM-5's one-token decode the 256 experts then spread over 128 CTAs
// instead of 32 (one warp streaming a whole 24 KB F32 row was latency-bound).
#define GLM_RT_PARTS 4
#define GLM_RT_EXPERTS_PER_ROUND (GLM_RT_WARPS / GLM_RT_PARTS)
#define GLM_RT_CHUNKS (GLM_WTYPE == GLM_T_F32 ? GLM_HIDDEN / 4 : GLM_HIDDEN / 8)
static_assert(GLM_RT_WARPS % GLM_RT_PARTS == 0, "whole experts per round");

// Lane `lane`'s share of chunks [c0, c1) of row . x, summed over the warp.
__device__ __forceinline__ float glm_rt_dot(const glm_u8 *__restrict__ row, const float *xs,
                                            int lane, int c0, int c1) {
  float acc = 0.f;
#if GLM_WTYPE == GLM_T_F32
#pragma unroll 4
  for (int c = c0 + lane; c < c1; c += 32) {
    const uint4 v = glm_ldg16(row + 16 * c);
    const float4 xv = *reinterpret_cast<const float4 *>(xs + 4 * c);
    acc = fmaf(__uint_as_float(v.x), xv.x, acc);
    acc = fmaf(__uint_as_float(v.y), xv.y, acc);
    acc = fmaf(__uint_as_float(v.z), xv.z, acc);
    acc = fmaf(__uint_as_float(v.w), xv.w, acc);
  }
#else
#pragma unroll 4
  for (int c = c0 + lane; c < c1; c += 32) {
    const uint4 v = glm_ldg16(row + 16 * c);
    const float4 x0 = *reinterpret_cast<const float4 *>(xs + 8 * c);
    const float4 x1 = *reinterpret_cast<const float4 *>(xs + 8 * c + 4);
    acc = fmaf(__uint_as_float(v.x << 16), x0.x, acc);
    acc = fmaf(__uint_as_float(v.x & 0xFFFF0000u), x0.y, acc);
    acc = fmaf(__uint_as_float(v.y << 16), x0.z, acc);
    acc = fmaf(__uint_as_float(v.y & 0xFFFF0000u), x0.w, acc);
    acc = fmaf(__uint_as_float(v.z << 16), x1.x, acc);
    acc = fmaf(__uint_as_float(v.z & 0xFFFF0000u), x1.y, acc);
    acc = fmaf(__uint_as_float(v.w << 16), x1.z, acc);
    acc = fmaf(__uint_as_float(v.w & 0xFFFF0000u), x1.w, acc);
  }
#endif
  return glm_warp_sum(acc);
}

// moe.cuh's moe_gate for token t on one warp, from logits in shared memory, with the same
// arithmetic: s = 1 / (1 + expf(-logit)), selection by fp32 s + bias with ties to the lower id,
// the slot-order fp32 sum of the chosen s, weight = s * norm * scale. Lane j keeps slot j.
__device__ __forceinline__ void glm_rt_gate(const float *row, const float *__restrict__ bias,
                                            float *__restrict__ weights, int32_t *__restrict__ ids,
                                            long long t, float scale, int lane) {
  float s[GLM_RT_PER_LANE], sel[GLM_RT_PER_LANE];
#pragma unroll
  for (int j = 0; j < GLM_RT_PER_LANE; ++j) {
    const int e = lane + 32 * j;
    s[j] = e < GLM_EXPERTS ? 1.f / (1.f + expf(-row[e])) : 0.f;
    sel[j] = e < GLM_EXPERTS ? s[j] + bias[e] : -__int_as_float(0x7f800000);
  }
  float sum = 0.f, my_w = 0.f;
  int my_id = 0;
  for (int k = 0; k < GLM_TOPK_E; ++k) {
    // Warp argmax of (sel, -id): the lower id wins ties.
    float best = -__int_as_float(0x7f800000);
    int best_id = 0x7fffffff;
#pragma unroll
    for (int j = 0; j < GLM_RT_PER_LANE; ++j) {
      const int e = lane + 32 * j;
      if (e < GLM_EXPERTS && (sel[j] > best || (sel[j] == best && e < best_id))) {
        best = sel[j];
        best_id = e;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, best_id, o);
      if (ob > best || (ob == best && oi < best_id)) {
        best = ob;
        best_id = oi;
      }
    }
    // The owner lane publishes the unbiased score and removes the expert from selection.
    float w = 0.f;
#pragma unroll
    for (int j = 0; j < GLM_RT_PER_LANE; ++j)
      if (lane + 32 * j == best_id) {
        w = s[j];
        sel[j] = -__int_as_float(0x7f800000);
      }
    w = glm_warp_sum(w); // exactly one lane contributed
    if (lane == k) {
      my_w = w;
      my_id = best_id;
    }
    sum += w;
  }
  if (lane < GLM_TOPK_E) {
    const float norm = GLM_NORMALIZE ? 1.f / (sum + 1e-20f) : 1.f;
    weights[t * GLM_TOPK_E + lane] = my_w * norm * scale;
    ids[t * GLM_TOPK_E + lane] = my_id;
  }
}

// Grid (T, splits): CTA (t, y) computes the logits of experts [y per, min(E, (y + 1) per)),
// per = ceil(E / splits), GLM_RT_EXPERTS_PER_ROUND at a time (GLM_RT_PARTS warps each), into
// logits (always written: the gate's input, kept for inspection). With one split the CTA then
// runs the gate; with more, the last CTA of token t to finish (counted in counters[t], zero
// before the first launch and re-armed to zero by that CTA) reloads the whole row and runs it.
// Each logit is a fixed-order sum (glm_rt_dot), so the result does not depend on the split.
// (The bound of two CTAs per SM leaves ptxas up to 128 registers: with the thread count alone it
// took 40 on sm_90 and spilled the gate's arrays.)
extern "C" __global__ void __launch_bounds__(GLM_RT_THREADS, 2)
    moe_router(const glm_act *__restrict__ x,   // [T, H]
               const glm_u8 *__restrict__ w,    // {H, E}: row e is expert e's H weights
               const float *__restrict__ bias,  // [E] (exp_probs_b, F32)
               float *__restrict__ logits,      // [T, E]
               unsigned *__restrict__ counters, // [T] when gridDim.y > 1
               float *__restrict__ weights,     // [T, k]
               int32_t *__restrict__ ids,       // [T, k]
               float scale) {
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  float *xs = reinterpret_cast<float *>(smem);
  float *lg = xs + GLM_HIDDEN;
  __shared__ int s_last;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const long long t = blockIdx.x;
  const int splits = gridDim.y;
  const int per = (GLM_EXPERTS + splits - 1) / splits;
  const int e0 = blockIdx.y * per, e1 = min(GLM_EXPERTS, e0 + per);
  for (int i = tid; i < GLM_HIDDEN; i += GLM_RT_THREADS)
    xs[i] = glm_act_load(x, t * GLM_HIDDEN + i);
  __syncthreads();
  __shared__ float s_part[GLM_RT_WARPS];
  const int part = warp % GLM_RT_PARTS, slot = warp / GLM_RT_PARTS;
  const int c0 = part * GLM_RT_CHUNKS / GLM_RT_PARTS;
  const int c1 = (part + 1) * GLM_RT_CHUNKS / GLM_RT_PARTS;
  for (int eb = e0; eb < e1; eb += GLM_RT_EXPERTS_PER_ROUND) { // uniform: every warp, every round
    const int e = eb + slot;
    const float v =
        e < e1 ? glm_rt_dot(w + static_cast<long long>(e) * GLM_RT_ROW_BYTES, xs, lane, c0, c1)
               : 0.f;
    if (lane == 0)
      s_part[warp] = v;
    __syncthreads();
    if (tid < GLM_RT_EXPERTS_PER_ROUND && eb + tid < e1) {
      float sum = 0.f;
#pragma unroll
      for (int q = 0; q < GLM_RT_PARTS; ++q)
        sum += s_part[tid * GLM_RT_PARTS + q];
      lg[eb + tid] = sum;
      logits[t * GLM_EXPERTS + eb + tid] = sum;
    }
    __syncthreads(); // s_part is rewritten next round
  }
  if (splits > 1) {
    __threadfence(); // this CTA's logits are visible device-wide before the count
    __syncthreads();
    if (tid == 0)
      s_last = atomicAdd(counters + t, 1u) == static_cast<unsigned>(splits - 1);
    __syncthreads();
    if (!s_last)
      return;
    __threadfence();
    for (int e = tid; e < GLM_EXPERTS; e += GLM_RT_THREADS)
      lg[e] = __ldcg(logits + t * GLM_EXPERTS + e);
    if (tid == 0)
      counters[t] = 0u;
  }
  __syncthreads();
  if (warp == 0)
    glm_rt_gate(lg, bias, weights, ids, t, scale, lane);
}

// ---------------------------------------------------------------------------------------------
#elif GLM_MOE_KIND == 1 || GLM_MOE_KIND == 2 // expert gate/up, expert down

#ifndef GLM_FFN
#error "GLM_FFN (the expert's intermediate size F) must be defined"
#endif
static_assert(GLM_FFN % 32 == 0, "F is whole 32-element sub-blocks");
#if GLM_MOE_KIND == 1
#define GLM_MX_K GLM_HIDDEN // reduction length of the instantiation
#else
#define GLM_MX_K GLM_FFN
#endif
static_assert(GLM_MX_K % GLM_QK == 0, "the reduction is whole weight blocks");
#define GLM_MX_ROW_BYTES (static_cast<long long>(GLM_MX_K / GLM_QK) * GLM_QBYTES)
#define GLM_MX_THREADS 256
#define GLM_MX_BM 64 // positions per tile (both paths)

// Work item y of the tile list (see the header): expert e, positions [q0, q1), q1 > q0. False
// past the last tile. Every lane of every warp computes it from offsets alone, so the answer is
// uniform per CTA with no barrier.
__device__ __forceinline__ bool glm_mx_tile(const int32_t *__restrict__ offsets, int y, int &e,
                                            int &q0, int &q1) {
  const int lane = threadIdx.x % 32;
  int base = 0; // tiles of the experts before this chunk of 32
  for (int c = 0; c < GLM_EXPERTS; c += 32) {
    const int ex = c + lane;
    const int lo = ex < GLM_EXPERTS ? __ldg(offsets + ex) : 0;
    const int hi = ex < GLM_EXPERTS ? __ldg(offsets + ex + 1) : 0;
    const int tiles = (hi - lo + GLM_MX_BM - 1) / GLM_MX_BM; // hi >= lo: a prefix sum
    int incl = tiles; // inclusive scan over the chunk's lanes
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o)
        incl += v;
    }
    const int total = __shfl_sync(0xffffffffu, incl, 31);
    if (y < base + total) { // uniform: the tile is in this chunk
      // The first lane whose inclusive count passes y owns it (it has tiles > 0).
      const int src = __ffs(__ballot_sync(0xffffffffu, y < base + incl)) - 1;
      const int first = base + __shfl_sync(0xffffffffu, incl - tiles, src);
      e = c + src;
      q0 = __shfl_sync(0xffffffffu, lo, src) + (y - first) * GLM_MX_BM;
      q1 = min(__shfl_sync(0xffffffffu, hi, src), q0 + GLM_MX_BM);
      return true;
    }
    base += total;
  }
  return false;
}

__device__ __forceinline__ float glm_mx_silu(float z) { return z / (1.f + expf(-z)); }

#if !GLM_ACT_F32
// ---- bf16 activations: mma.sync tiles --------------------------------------------------------
#define GLM_MX_BN 128 // weight rows per tile
#define GLM_MX_BK 64
#define GLM_MX_PROW (GLM_MX_BK + 8) // bf16; 144-byte rows: ldmatrix's 8 rows hit distinct banks
#define GLM_MX_SMEM_XT 0
#define GLM_MX_SMEM_WT (GLM_MX_SMEM_XT + GLM_MX_BM * GLM_MX_PROW * 2)
#define GLM_MX_SMEM_BYTES (GLM_MX_SMEM_WT + GLM_MX_BN * GLM_MX_PROW * 2) // 27648
#if GLM_MOE_KIND == 1
#define GLM_MX_OUT_ROWS 64 // f per CTA: 64 gate + 64 up weight rows
#else
#define GLM_MX_OUT_ROWS 128 // output columns per CTA
#endif

// acc += X W^T over the whole reduction, X the tile's 64 activation rows, W its 128 weight rows.
// Thread tid stages x rows m = tid / 8 and tid / 8 + 32 (chunk 8 (tid % 8) of each k tile) from
// xr[0], xr[1] (null: zero row; `any` is a valid address for the zero-fill), and dequantizes
// sub-block tid % 2 of weight tile row tid / 2 from wrow (null: zeros). 8 warps: warp w takes
// rows 32 (w % 2) .. +31 of X and 32 (w / 2) .. +31 of W (qlinear_prefill's layout).
__device__ __forceinline__ void glm_mx_mma(const glm_act *xr0, const glm_act *xr1,
                                           const glm_act *any, const glm_u8 *wrow,
                                           unsigned char *smem, float (&acc)[2][4][4]) {
  glm_bf16 *xt = reinterpret_cast<glm_bf16 *>(smem + GLM_MX_SMEM_XT);
  glm_bf16 *wt = reinterpret_cast<glm_bf16 *>(smem + GLM_MX_SMEM_WT);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp % 2, wn = warp / 2;
  const int xm = tid / 8, xk = 8 * (tid % 8);
  const int wn_row = tid / 2, wsb = tid % 2;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int ni = 0; ni < 4; ++ni)
      acc[mi][ni][0] = acc[mi][ni][1] = acc[mi][ni][2] = acc[mi][ni][3] = 0.f;

  for (int k0 = 0; k0 < GLM_MX_K; k0 += GLM_MX_BK) {
    __syncthreads(); // the previous tile is consumed
    {
      const bool kok = k0 + xk < GLM_MX_K; // whole 8-element chunks: K % 32 == 0
      const bool ok0 = kok && xr0 != nullptr, ok1 = kok && xr1 != nullptr;
      glm_cp_async_16(glm_smem_addr(xt + xm * GLM_MX_PROW + xk), ok0 ? xr0 + k0 + xk : any,
                      ok0 ? 16 : 0);
      glm_cp_async_16(glm_smem_addr(xt + (xm + 32) * GLM_MX_PROW + xk), ok1 ? xr1 + k0 + xk : any,
                      ok1 ? 16 : 0);
    }
    glm_cp_async_commit();
    {
      const int kk = k0 + 32 * wsb;
      float v[32];
      if (wrow != nullptr && kk < GLM_MX_K) {
        glm_dq32(wrow, kk / 32, v);
      } else {
#pragma unroll
        for (int j = 0; j < 32; ++j)
          v[j] = 0.f;
      }
      glm_store_bf16x32(v, wt + wn_row * GLM_MX_PROW + 32 * wsb);
    }
    glm_cp_async_wait<0>();
    __syncthreads();
    glm_tile_mma_64x128<GLM_MX_BK, GLM_MX_PROW>(xt, wt, wm, wn, lane, acc);
  }
}
// Fragment ownership after glm_mx_mma: acc[mi][ni][c] is X row
// 32 wm + 16 mi + g + 8 (c / 2) by W row 32 wn + 8 ni + 2 t + (c % 2), g = lane / 4, t = lane % 4.

#if GLM_MOE_KIND == 1
// Weight tile row n (0..127) is gate row f (n / 8 even) or up row f (odd), with
// f = f0 + 8 (n / 16) + n % 8: ni = 2 p is gate and ni = 2 p + 1 up of the same
// f = f0 + 8 (2 wn + p) + 2 t + (c % 2). CTA (x, y): f0 = 64 x, tile y.
__device__ __forceinline__ void glm_mx_gate_up_tile(const glm_act *__restrict__ x,
                                                    const glm_u8 *__restrict__ w_gate,
                                                    const glm_u8 *__restrict__ w_up,
                                                    const int32_t *__restrict__ pair_of,
                                                    glm_act *__restrict__ h, int e, int q0, int q1,
                                                    unsigned char *smem) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int f0 = blockIdx.x * GLM_MX_OUT_ROWS;
  const glm_act *xr[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = q0 + tid / 8 + 32 * i;
    xr[i] = q < q1 ? x + static_cast<long long>(pair_of[q] / GLM_TOPK_E) * GLM_HIDDEN : nullptr;
  }
  const int n = tid / 2, f = f0 + 8 * (n / 16) + n % 8;
  const glm_u8 *wrow = f < GLM_FFN ? ((n / 8) % 2 ? w_up : w_gate) +
                                         static_cast<long long>(e * GLM_FFN + f) * GLM_MX_ROW_BYTES
                                   : nullptr;
  float acc[2][4][4];
  glm_mx_mma(xr[0], xr[1], x, wrow, smem, acc);

  const int g = lane / 4, t = lane % 4, wm = warp % 2, wn = warp / 2;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int p = 0; p < 2; ++p)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int q = q0 + wm * 32 + mi * 16 + g + 8 * (c / 2);
        const int fo = f0 + 8 * (2 * wn + p) + 2 * t + c % 2;
        if (q < q1 && fo < GLM_FFN)
          glm_act_store(h, static_cast<long long>(q) * GLM_FFN + fo,
                        glm_mx_silu(acc[mi][2 * p][c]) * acc[mi][2 * p + 1][c]);
      }
}
#else
// Weight tile row n is down row n0 + n of expert e (output column n0 + n); CTA (x, y):
// n0 = 128 x, tile y.
__device__ __forceinline__ void glm_mx_down_tile(const glm_act *__restrict__ h,
                                                 const glm_u8 *__restrict__ w_down,
                                                 const int32_t *__restrict__ pair_of,
                                                 float *__restrict__ out, int e, int q0, int q1,
                                                 unsigned char *smem) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int n0 = blockIdx.x * GLM_MX_OUT_ROWS;
  const glm_act *xr[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int q = q0 + tid / 8 + 32 * i;
    xr[i] = q < q1 ? h + static_cast<long long>(q) * GLM_FFN : nullptr;
  }
  const int row = n0 + tid / 2;
  const glm_u8 *wrow =
      row < GLM_HIDDEN ? w_down + static_cast<long long>(e * GLM_HIDDEN + row) * GLM_MX_ROW_BYTES
                       : nullptr;
  float acc[2][4][4];
  glm_mx_mma(xr[0], xr[1], h, wrow, smem, acc);

  const int g = lane / 4, t = lane % 4, wm = warp % 2, wn = warp / 2;
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int q = q0 + wm * 32 + mi * 16 + g + 8 * r;
      if (q >= q1)
        continue;
      float *orow = out + static_cast<long long>(pair_of[q]) * GLM_HIDDEN;
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int col = n0 + wn * 32 + ni * 8 + 2 * t + c;
          if (col < GLM_HIDDEN)
            orow[col] = acc[mi][ni][2 * r + c];
        }
    }
}
#endif

#else
// ---- f32 activations (GLM_ACT_F32): exact fp32 weights and a SIMT product ---------------------

#define GLM_MX_BN 64 // weight rows per tile
#define GLM_MX_BK 32
#define GLM_MX_FROW (GLM_MX_BM + 4) // k-major fp32 tiles; float4 rows stay 16-byte aligned
#define GLM_MX_SMEM_XT 0
#define GLM_MX_SMEM_WT (GLM_MX_SMEM_XT + GLM_MX_BK * GLM_MX_FROW * 4)
#define GLM_MX_SMEM_BYTES (GLM_MX_SMEM_WT + GLM_MX_BK * GLM_MX_FROW * 4) // 17408
static_assert(GLM_MX_BM == GLM_MX_BN, "one padded row length for both tiles");
#if GLM_MOE_KIND == 1
#define GLM_MX_OUT_ROWS 32 // f per CTA: 32 gate + 32 up weight rows
#else
#define GLM_MX_OUT_ROWS 64 // output columns per CTA
#endif

// acc[i][j] = X row 4 ty + i . W row 4 tx + j over the whole reduction, (ty, tx) =
// (tid / 16, tid % 16). Thread tid stages x row m = tid % 64 (k = tid / 64 + 4 r of each tile)
// from xr (null: zeros) and, when tid < 64, weight tile row tid from wrow (null: zeros).
__device__ __forceinline__ void glm_mx_simt(const glm_act *xr, const glm_u8 *wrow,
                                            unsigned char *smem, float (&acc)[4][4]) {
  float *xt = reinterpret_cast<float *>(smem + GLM_MX_SMEM_XT); // [k][row]
  float *wt = reinterpret_cast<float *>(smem + GLM_MX_SMEM_WT); // [k][row]
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int xm = tid % GLM_MX_BM;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      acc[i][j] = 0.f;
  for (int k0 = 0; k0 < GLM_MX_K; k0 += GLM_MX_BK) { // K % 32 == 0: whole tiles
    __syncthreads();
    if (tid < GLM_MX_BN) {
      float v[32];
      if (wrow != nullptr) {
        glm_dq32(wrow, k0 / 32, v);
      } else {
#pragma unroll
        for (int j = 0; j < 32; ++j)
          v[j] = 0.f;
      }
#pragma unroll
      for (int j = 0; j < 32; ++j)
        wt[j * GLM_MX_FROW + tid] = v[j];
    }
#pragma unroll
    for (int r = 0; r < GLM_MX_BM * GLM_MX_BK / GLM_MX_THREADS; ++r) {
      const int kk = tid / GLM_MX_BM + r * (GLM_MX_THREADS / GLM_MX_BM);
      xt[kk * GLM_MX_FROW + xm] = xr != nullptr ? glm_act_load(xr, k0 + kk) : 0.f;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < GLM_MX_BK; ++kk) {
      const float4 a = *reinterpret_cast<const float4 *>(xt + kk * GLM_MX_FROW + 4 * ty);
      const float4 b = *reinterpret_cast<const float4 *>(wt + kk * GLM_MX_FROW + 4 * tx);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
  }
}

#if GLM_MOE_KIND == 1
// Weight tile row n (0..63) is gate row f (n % 4 < 2) or up row f (n % 4 >= 2), with
// f = f0 + 2 (n / 4) + n % 2: thread tx holds gate (j = c) and up (j = 2 + c) of
// f = f0 + 2 tx + c. CTA (x, y): f0 = 32 x, tile y.
__device__ __forceinline__ void glm_mx_gate_up_tile(const glm_act *__restrict__ x,
                                                    const glm_u8 *__restrict__ w_gate,
                                                    const glm_u8 *__restrict__ w_up,
                                                    const int32_t *__restrict__ pair_of,
                                                    glm_act *__restrict__ h, int e, int q0, int q1,
                                                    unsigned char *smem) {
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int f0 = blockIdx.x * GLM_MX_OUT_ROWS;
  const int qx = q0 + tid % GLM_MX_BM;
  const glm_act *xr =
      qx < q1 ? x + static_cast<long long>(pair_of[qx] / GLM_TOPK_E) * GLM_HIDDEN : nullptr;
  const int n = tid % GLM_MX_BN, f = f0 + 2 * (n / 4) + n % 2;
  const glm_u8 *wrow = f < GLM_FFN ? (n % 4 >= 2 ? w_up : w_gate) +
                                         static_cast<long long>(e * GLM_FFN + f) * GLM_MX_ROW_BYTES
                                   : nullptr;
  float acc[4][4];
  glm_mx_simt(xr, wrow, smem, acc);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int q = q0 + 4 * ty + i, fo = f0 + 2 * tx + c;
      if (q < q1 && fo < GLM_FFN)
        glm_act_store(h, static_cast<long long>(q) * GLM_FFN + fo,
                      glm_mx_silu(acc[i][c]) * acc[i][2 + c]);
    }
}
#else
// Weight tile row n is down row n0 + n of expert e; CTA (x, y): n0 = 64 x, tile y.
__device__ __forceinline__ void glm_mx_down_tile(const glm_act *__restrict__ h,
                                                 const glm_u8 *__restrict__ w_down,
                                                 const int32_t *__restrict__ pair_of,
                                                 float *__restrict__ out, int e, int q0, int q1,
                                                 unsigned char *smem) {
  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  const int n0 = blockIdx.x * GLM_MX_OUT_ROWS;
  const int qx = q0 + tid % GLM_MX_BM;
  const glm_act *xr = qx < q1 ? h + static_cast<long long>(qx) * GLM_FFN : nullptr;
  const int row = n0 + tid % GLM_MX_BN;
  const glm_u8 *wrow =
      row < GLM_HIDDEN ? w_down + static_cast<long long>(e * GLM_HIDDEN + row) * GLM_MX_ROW_BYTES
                       : nullptr;
  float acc[4][4];
  glm_mx_simt(xr, wrow, smem, acc);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int q = q0 + 4 * ty + i;
    if (q >= q1)
      continue;
    float *orow = out + static_cast<long long>(pair_of[q]) * GLM_HIDDEN;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = n0 + 4 * tx + j;
      if (col < GLM_HIDDEN)
        orow[col] = acc[i][j];
    }
  }
}
#endif
#endif // GLM_ACT_F32

// The entry points: the CTA's (expert, tile of pairs), then the variant's tile product above.
#if GLM_MOE_KIND == 1
extern "C" __global__ void __launch_bounds__(GLM_MX_THREADS, 2)
    moe_expert_gate_up(const glm_act *__restrict__ x,       // [T, H]
                       const glm_u8 *__restrict__ w_gate,   // {H, F, E}
                       const glm_u8 *__restrict__ w_up,     // {H, F, E}
                       const int32_t *__restrict__ offsets, // [E + 1]
                       const int32_t *__restrict__ pair_of, // [T * k]
                       glm_act *__restrict__ h) {           // [T * k, F], by position
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  int e, q0, q1;
  if (!glm_mx_tile(offsets, blockIdx.y, e, q0, q1))
    return;
  glm_mx_gate_up_tile(x, w_gate, w_up, pair_of, h, e, q0, q1, smem);
}
#else
extern "C" __global__ void __launch_bounds__(GLM_MX_THREADS, 2)
    moe_expert_down(const glm_act *__restrict__ h,       // [T * k, F], by position
                    const glm_u8 *__restrict__ w_down,   // {F, H, E}
                    const int32_t *__restrict__ offsets, // [E + 1]
                    const int32_t *__restrict__ pair_of, // [T * k]
                    float *__restrict__ out) {           // [T * k, H], by pair
  glm_grid_chain();
  extern __shared__ __align__(16) unsigned char smem[];
  int e, q0, q1;
  if (!glm_mx_tile(offsets, blockIdx.y, e, q0, q1))
    return;
  glm_mx_down_tile(h, w_down, pair_of, out, e, q0, q1, smem);
}
#endif

#else
#error "unknown GLM_MOE_KIND"
#endif
