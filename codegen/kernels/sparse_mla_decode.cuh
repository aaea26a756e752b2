// Sparse MLA decode, absorbed form (docs/model.md "Naive and absorbed attention"; design notes in
// docs/kernels.md "Sparse MLA decode").
//
// One CTA per (request b, group of HEADS heads, split of the top-k range). The CTA walks its
// split in tiles of TILE_N selected cache rows, gathered by physical slot with cp.async into a
// STAGES-deep shared-memory ring; each row (latent 512 + rope 64, bf16) is read once and serves
// both products: S = Q K^T over all 576 columns, then O += P V over the first 512. Online
// softmax in fp32 (log2 domain). With one split the CTA writes the bf16 latent output (the next
// product's operand) and the fp32 log-sum-exp itself. With several, each writes its normalized
// partial output and log-sum-exp, and the last CTA of its (request, head group) to finish -- an
// atomic counter per group says which -- merges them: one launch, no separate combine kernel.
// Invariant: every counter is 0 when a launch starts (zeroed once at allocation; the merging CTA
// resets its group's counter, all of whose CTAs have arrived by then), so CUDA-graph replays work.
//
// Warp roles (GLM_WARPS warps; 8 give SM120, where one CTA fills an SM's shared memory, two
// warps per scheduler): for S, the warps form GLM_S_GROUPS token groups x GLM_S_KSPLIT parts of
// the 576 columns -- warp w owns tokens [tok0, tok0 + GLM_S_TOKENS_PER_WARP) of the tile over
// columns [kbeg, kbeg + GLM_S_K); with two k-parts the second part's warps hand their partial
// scores to the first through shared memory, and the first does the softmax. For P V, warp w
// owns output columns [GLM_O_COLS_PER_WARP w, GLM_O_COLS_PER_WARP (w + 1)). Row statistics
// cross warps through shared memory.
//
// Instantiation constants (defined before this file by the code generator):
//   GLM_HEADS (16: the M of mma.m16n8k16; fewer real heads are padded), GLM_TILE_N (32 or 64),
//   GLM_STAGES (>= 2), GLM_WARPS (4 or 8), GLM_D_LATENT (512), GLM_D_ROPE (64), GLM_TOPK.
#pragma once
#include "common.cuh"

#define GLM_D (GLM_D_LATENT + GLM_D_ROPE)
// Shared-memory row stride in bf16: 16 bytes of padding make the 8 rows an ldmatrix reads start
// in 8 different bank groups.
#define GLM_ROW (GLM_D + 8)
#define GLM_P_ROW (GLM_TILE_N + 8)
#define GLM_THREADS (GLM_WARPS * 32)
#define GLM_NT (GLM_TILE_N / 8) // n8 tiles of tokens per tile
#define GLM_S_KSPLIT (GLM_WARPS > GLM_NT ? GLM_WARPS / GLM_NT : 1)
#define GLM_S_GROUPS (GLM_WARPS / GLM_S_KSPLIT)
#define GLM_S_NTILES (GLM_NT / GLM_S_GROUPS)
#define GLM_S_TOKENS_PER_WARP (GLM_S_NTILES * 8)
#define GLM_S_K (GLM_D / GLM_S_KSPLIT)
#define GLM_O_COLS_PER_WARP (GLM_D_LATENT / GLM_WARPS)
#define GLM_O_NTILES (GLM_O_COLS_PER_WARP / 8)
#define GLM_GATHER_ROWS (GLM_THREADS / 8) // 8 threads per row, 9 chunks of 16 B each
#define GLM_ROWS_PER_THREAD (GLM_TILE_N / GLM_GATHER_ROWS)

static_assert(GLM_HEADS == 16, "one m16 tile of heads per CTA");
static_assert(GLM_WARPS == 4 || GLM_WARPS == 8, "4 or 8 warps");
static_assert(GLM_S_KSPLIT <= 2 && GLM_S_GROUPS * GLM_S_NTILES == GLM_NT,
              "whole n8 tiles of tokens per warp, the 576 columns in at most two parts");
static_assert(GLM_S_K % 32 == 0, "the score loop takes 32 columns per step");
static_assert(GLM_TILE_N % GLM_GATHER_ROWS == 0, "whole gather passes per tile");
static_assert(GLM_D % 64 == 0 && GLM_O_NTILES % 2 == 0, "mma and gather tiling");
static_assert(GLM_STAGES >= 2, "a ring of at least two tiles");

// Dynamic shared memory layout, in bytes (codegen/registry/SparseMla.cpp computes the same total).
#define GLM_SMEM_Q 0
#define GLM_SMEM_KV (GLM_SMEM_Q + GLM_HEADS * GLM_ROW * 2)
#define GLM_SMEM_P (GLM_SMEM_KV + GLM_STAGES * GLM_TILE_N * GLM_ROW * 2)
#define GLM_SMEM_RED (GLM_SMEM_P + GLM_HEADS * GLM_P_ROW * 2)
#define GLM_SMEM_SPART (GLM_SMEM_RED + 2 * GLM_S_GROUPS * GLM_HEADS * 4)
#define GLM_SMEM_VALID (GLM_SMEM_SPART + (GLM_S_KSPLIT - 1) * GLM_TILE_N * GLM_HEADS * 4)
#define GLM_SMEM_BYTES (GLM_SMEM_VALID + GLM_STAGES * GLM_TILE_N * 4)

// Scores of masked slots: a large finite negative, so a fully masked tile never makes NaN.
#define GLM_MASKED (-1.0e30f)

extern "C" __global__ void __launch_bounds__(GLM_THREADS)
    sparse_mla_decode(const glm_bf16 *__restrict__ q_lat,  // [B, H, GLM_D_LATENT]
                      const glm_bf16 *__restrict__ q_rope, // [B, H, GLM_D_ROPE]
                      const glm_bf16 *__restrict__ kv,     // [slots, GLM_D]: latent | rope key
                      const int32_t *__restrict__ indices, // [B, GLM_TOPK] physical slots, -1 none
                      float *__restrict__ o_part,          // [B, H, splits, GLM_D_LATENT]
                      float *__restrict__ lse_part,        // [B, H, splits]
                      glm_bf16 *__restrict__ out,          // [B, H, GLM_D_LATENT]
                      float *__restrict__ lse,             // [B, H], natural log
                      unsigned *__restrict__ counters,     // [B, head groups], 0 between launches
                      int num_heads, int num_slots, int splits, int tokens_per_split,
                      float scale_log2) {                  // softmax scale * log2(e)
  extern __shared__ __align__(16) unsigned char smem[];
  glm_bf16 *sq = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_Q);
  glm_bf16 *skv = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_KV);
  glm_bf16 *sp = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_P);
  float *red_max = reinterpret_cast<float *>(smem + GLM_SMEM_RED);
  float *red_sum = red_max + GLM_S_GROUPS * GLM_HEADS;
  float *spart = reinterpret_cast<float *>(smem + GLM_SMEM_SPART); // second k-part's scores
  int32_t *svalid = reinterpret_cast<int32_t *>(smem + GLM_SMEM_VALID);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int split = blockIdx.x % splits;
  const int head0 = (blockIdx.x / splits) * GLM_HEADS;
  const int b = blockIdx.y;
  const int begin = split * tokens_per_split;
  const int end = min(begin + tokens_per_split, GLM_TOPK);
  const int num_tiles = end > begin ? (end - begin + GLM_TILE_N - 1) / GLM_TILE_N : 0;
  const int32_t *idx = indices + static_cast<long long>(b) * GLM_TOPK;

  // Q rows of this head group; rows past num_heads are zero (their results are never written).
  for (int c = tid; c < GLM_HEADS * (GLM_D / 8); c += GLM_THREADS) {
    int row = c / (GLM_D / 8), col = (c % (GLM_D / 8)) * 8;
    int h = head0 + row;
    const long long qrow = static_cast<long long>(b) * num_heads + (h < num_heads ? h : 0);
    // 8-column chunks never straddle the latent/rope boundary (GLM_D_LATENT % 8 == 0).
    const glm_bf16 *src = col < GLM_D_LATENT ? q_lat + qrow * GLM_D_LATENT + col
                                             : q_rope + qrow * GLM_D_ROPE + (col - GLM_D_LATENT);
    glm_cp_async_16(glm_smem_addr(sq + row * GLM_ROW + col), src, h < num_heads ? 16 : 0);
  }

  // Gather: 8 threads per row (9 chunks of 16 B each), GLM_GATHER_ROWS rows per pass. A
  // thread's slots for a tile are fetched one tile ahead into registers, so the index load's
  // latency hides behind the current tile's math instead of stalling the cp.async issue.
  const int grow = tid / 8, gchunk = tid % 8;
  auto fetch_slots = [&](int tile, int (&slots)[GLM_ROWS_PER_THREAD]) {
#pragma unroll
    for (int p = 0; p < GLM_ROWS_PER_THREAD; ++p) {
      int pos = begin + tile * GLM_TILE_N + grow + GLM_GATHER_ROWS * p;
      slots[p] = tile < num_tiles && pos < end ? __ldg(idx + pos) : -1;
    }
  };
  auto load_tile = [&](int tile, const int (&slots)[GLM_ROWS_PER_THREAD]) {
    const int stage = tile % GLM_STAGES;
    glm_bf16 *dst = skv + stage * GLM_TILE_N * GLM_ROW;
#pragma unroll
    for (int p = 0; p < GLM_ROWS_PER_THREAD; ++p) {
      int row = grow + GLM_GATHER_ROWS * p;
      bool ok = slots[p] >= 0 && slots[p] < num_slots;
      const glm_bf16 *src = kv + static_cast<long long>(ok ? slots[p] : 0) * GLM_D;
#pragma unroll
      for (int c = 0; c < GLM_D / 64; ++c) {
        int col = (gchunk + 8 * c) * 8;
        glm_cp_async_16(glm_smem_addr(dst + row * GLM_ROW + col), src + col, ok ? 16 : 0);
      }
      if (gchunk == 0)
        svalid[stage * GLM_TILE_N + row] = ok;
    }
  };

  int slots[GLM_ROWS_PER_THREAD];
  for (int s = 0; s < GLM_STAGES - 1; ++s) {
    fetch_slots(s, slots);
    if (s < num_tiles)
      load_tile(s, slots);
    glm_cp_async_commit(); // the Q rows ride in the first group
  }
  fetch_slots(GLM_STAGES - 1, slots);

  float o[GLM_O_NTILES][4];
#pragma unroll
  for (int n = 0; n < GLM_O_NTILES; ++n)
    o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  const int sg = warp % GLM_S_GROUPS, kpart = warp / GLM_S_GROUPS; // this warp's part of S
  const int tok0 = sg * GLM_S_TOKENS_PER_WARP, kbeg = kpart * GLM_S_K;
  float m_run[2] = {GLM_MASKED, GLM_MASKED}; // rows g and g + 8, log2 domain
  float l_run[2] = {0.f, 0.f};

  for (int tile = 0; tile < num_tiles; ++tile) {
    glm_cp_async_wait<GLM_STAGES - 2>();
    __syncthreads(); // tile landed; every warp is done with the stage refilled below
    if (tile + GLM_STAGES - 1 < num_tiles)
      load_tile(tile + GLM_STAGES - 1, slots);
    glm_cp_async_commit();
    fetch_slots(tile + GLM_STAGES, slots); // consumed next iteration

    const int stage = tile % GLM_STAGES;
    const glm_bf16 *tkv = skv + stage * GLM_TILE_N * GLM_ROW;
    const int32_t *tvalid = svalid + stage * GLM_TILE_N;

    // S = Q K^T for this warp's tokens and k-part: 16 heads x GLM_S_TOKENS_PER_WARP, k over
    // GLM_S_K columns. Two accumulator chains per n-tile (even and odd k-steps) halve the
    // dependent mma chain.
    float s[GLM_S_NTILES][4], s2[GLM_S_NTILES][4];
#pragma unroll
    for (int n = 0; n < GLM_S_NTILES; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[n][e] = s2[n][e] = 0.f;
#pragma unroll 3
    for (int k = kbeg; k < kbeg + GLM_S_K; k += 32) {
      uint32_t a0[4], a1[4];
      glm_ldmatrix_x4(a0, glm_smem_addr(sq + (lane % 16) * GLM_ROW + k + (lane / 16) * 8));
      glm_ldmatrix_x4(a1, glm_smem_addr(sq + (lane % 16) * GLM_ROW + k + 16 + (lane / 16) * 8));
#pragma unroll
      for (int n = 0; n < GLM_S_NTILES; ++n) {
        // matrices: (tokens n8, k 0-7), (k 8-15), (k 16-23), (k 24-31): two k-steps at once.
        uint32_t bfrag[4];
        glm_ldmatrix_x4(bfrag, glm_smem_addr(tkv + (tok0 + n * 8 + lane % 8) * GLM_ROW + k +
                                              (lane / 8) * 8));
        glm_mma_bf16_16816(s[n], a0, bfrag[0], bfrag[1]);
        glm_mma_bf16_16816(s2[n], a1, bfrag[2], bfrag[3]);
      }
    }
#pragma unroll
    for (int n = 0; n < GLM_S_NTILES; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[n][e] += s2[n][e];
#if GLM_S_KSPLIT > 1
    // The second k-part hands its partial scores to the first (same lane, same fragment slot).
    float *my_part = spart + sg * GLM_S_NTILES * 4 * 32 + lane;
    if (kpart == 1) {
#pragma unroll
      for (int n = 0; n < GLM_S_NTILES; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          my_part[(n * 4 + e) * 32] = s[n][e];
    }
    __syncthreads();
#endif

    // Scale, mask, and this warp's row maxima (rows g and g + 8 over its tokens); the first
    // k-part's warps only, which own the full scores from here on.
    if (kpart == 0) {
      float mx[2] = {GLM_MASKED, GLM_MASKED};
#pragma unroll
      for (int n = 0; n < GLM_S_NTILES; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
#if GLM_S_KSPLIT > 1
          s[n][e] += my_part[(n * 4 + e) * 32];
#endif
          int tok = tok0 + n * 8 + 2 * t + (e % 2);
          s[n][e] = tvalid[tok] ? s[n][e] * scale_log2 : GLM_MASKED;
          mx[e / 2] = fmaxf(mx[e / 2], s[n][e]);
        }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      }
      if (t == 0) {
        red_max[sg * GLM_HEADS + g] = mx[0];
        red_max[sg * GLM_HEADS + g + 8] = mx[1];
      }
    }
    __syncthreads();
    float m_new[2], alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tm = GLM_MASKED;
#pragma unroll
      for (int w = 0; w < GLM_S_GROUPS; ++w)
        tm = fmaxf(tm, red_max[w * GLM_HEADS + g + 8 * r]);
      m_new[r] = fmaxf(m_run[r], tm);
      alpha[r] = glm_exp2(m_run[r] - m_new[r]); // 1 while both are still GLM_MASKED
    }

    // P = exp2(S - m_new) (0 for masked slots), as bf16 into shared memory; row partial sums.
    if (kpart == 0) {
      float sum[2] = {0.f, 0.f};
#pragma unroll
      for (int n = 0; n < GLM_S_NTILES; ++n) {
        float p[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          p[e] = s[n][e] == GLM_MASKED ? 0.f : glm_exp2(s[n][e] - m_new[e / 2]);
          sum[e / 2] += p[e];
        }
        int col = tok0 + n * 8 + 2 * t;
        *reinterpret_cast<uint32_t *>(sp + g * GLM_P_ROW + col) = glm_pack_bf16x2(p[0], p[1]);
        *reinterpret_cast<uint32_t *>(sp + (g + 8) * GLM_P_ROW + col) =
            glm_pack_bf16x2(p[2], p[3]);
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 1);
        sum[r] += __shfl_xor_sync(0xffffffffu, sum[r], 2);
      }
      if (t == 0) {
        red_sum[sg * GLM_HEADS + g] = sum[0];
        red_sum[sg * GLM_HEADS + g + 8] = sum[1];
      }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float ts = 0.f;
#pragma unroll
      for (int w = 0; w < GLM_S_GROUPS; ++w)
        ts += red_sum[w * GLM_HEADS + g + 8 * r];
      l_run[r] = l_run[r] * alpha[r] + ts;
      m_run[r] = m_new[r];
    }
#pragma unroll
    for (int n = 0; n < GLM_O_NTILES; ++n) {
      o[n][0] *= alpha[0];
      o[n][1] *= alpha[0];
      o[n][2] *= alpha[1];
      o[n][3] *= alpha[1];
    }

    // O += P V over this warp's GLM_O_COLS_PER_WARP latent columns; V is the tile's rows,
    // k = token.
    const int col0 = warp * GLM_O_COLS_PER_WARP;
#pragma unroll
    for (int k = 0; k < GLM_TILE_N; k += 16) {
      uint32_t a[4];
      glm_ldmatrix_x4(a, glm_smem_addr(sp + (lane % 16) * GLM_P_ROW + k + (lane / 16) * 8));
#pragma unroll
      for (int n = 0; n < GLM_O_NTILES; n += 2) {
        // matrices: (tokens k..k+7, cols n), (tokens k+8.., cols n), (k.., n+8), (k+8.., n+8).
        uint32_t bfrag[4];
        int mat = lane / 8;
        glm_ldmatrix_x4_trans(bfrag, glm_smem_addr(tkv + (k + (mat % 2) * 8 + lane % 8) * GLM_ROW +
                                                    col0 + n * 8 + (mat / 2) * 8));
        glm_mma_bf16_16816(o[n], a, bfrag[0], bfrag[1]);
        glm_mma_bf16_16816(o[n + 1], a, bfrag[2], bfrag[3]);
      }
    }
  }
  glm_cp_async_wait<0>();

  // Normalize; with one split this is the result, otherwise this split's partial result (rows g
  // and g + 8 of the head group). An empty row (every slot masked) gets o = 0 and lse = -inf.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    int h = head0 + g + 8 * r;
    if (h >= num_heads)
      continue;
    const long long bh = static_cast<long long>(b) * num_heads + h;
    const float inv = l_run[r] > 0.f ? 1.f / l_run[r] : 0.f;
    const float row_lse = l_run[r] > 0.f ? (m_run[r] + log2f(l_run[r])) * 0.6931471805599453f
                                         : -__int_as_float(0x7f800000);
    const int col0 = warp * GLM_O_COLS_PER_WARP + 2 * t;
    if (splits == 1) {
#pragma unroll
      for (int n = 0; n < GLM_O_NTILES; ++n)
        *reinterpret_cast<uint32_t *>(out + bh * GLM_D_LATENT + col0 + n * 8) =
            glm_pack_bf16x2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
      if (warp == 0 && t == 0)
        lse[bh] = row_lse;
      continue;
    }
    const long long row = bh * splits + split;
#pragma unroll
    for (int n = 0; n < GLM_O_NTILES; ++n)
      *reinterpret_cast<float2 *>(o_part + row * GLM_D_LATENT + col0 + n * 8) =
          make_float2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    if (warp == 0 && t == 0)
      lse_part[row] = row_lse;
  }
  if (splits == 1)
    return;

  // The last CTA of the group to arrive merges the splits: lse = log sum_s exp(lse_s),
  // o = sum_s exp(lse_s - lse) o_s. Partials are read through L2 (__ldcg): other CTAs wrote them.
  __shared__ int is_last;
  __threadfence(); // this CTA's partials are visible before its arrival is counted
  __syncthreads();
  if (tid == 0) {
    unsigned *counter = counters + static_cast<long long>(b) * (gridDim.x / splits) + head0 / GLM_HEADS;
    is_last = atomicAdd(counter, 1u) == static_cast<unsigned>(splits - 1);
    if (is_last)
      *counter = 0; // every CTA of the group has arrived: ready for the next launch
  }
  __syncthreads();
  if (!is_last)
    return;
  __threadfence();
  // Warp w merges heads w, w + 4, ...; lane l owns the float4 columns l + 32 j (j < 4). Every
  // split's loads are independent, so a lane has up to 4 splits x 4 float4 in flight.
  static_assert(GLM_D_LATENT == 4 * 32 * 4, "the merge gives each lane 4 float4 columns");
  for (int r = warp; r < GLM_HEADS && head0 + r < num_heads; r += GLM_WARPS) {
    const long long bh = static_cast<long long>(b) * num_heads + head0 + r;
    const float *lp = lse_part + bh * splits;
    float mx = -__int_as_float(0x7f800000);
    for (int sp = lane; sp < splits; sp += 32)
      mx = fmaxf(mx, __ldcg(lp + sp));
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float4 acc[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
    float wsum = 0.f;
    if (mx != -__int_as_float(0x7f800000)) {
#pragma unroll 4
      for (int sp = 0; sp < splits; ++sp) {
        const float w = __expf(__ldcg(lp + sp) - mx); // 0 for empty splits (lse -inf)
        const float4 *src = reinterpret_cast<const float4 *>(o_part + (bh * splits + sp) * GLM_D_LATENT);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float4 v = __ldcg(src + lane + 32 * j);
          acc[j].x += w * v.x;
          acc[j].y += w * v.y;
          acc[j].z += w * v.z;
          acc[j].w += w * v.w;
        }
        wsum += w;
      }
    }
    const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      *reinterpret_cast<uint2 *>(out + bh * GLM_D_LATENT + 4 * (lane + 32 * j)) =
          make_uint2(glm_pack_bf16x2(acc[j].x * inv, acc[j].y * inv),
                     glm_pack_bf16x2(acc[j].z * inv, acc[j].w * inv));
    if (lane == 0)
      lse[bh] = wsum > 0.f ? mx + __logf(wsum) : mx;
  }
}
