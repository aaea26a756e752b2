// Sparse MLA decode, absorbed form (docs/model.md "Naive and absorbed attention"; design notes in
// docs/kernels.md "Sparse MLA decode").
//
// One CTA per (request b, group of HEADS heads, split of the top-k range). The CTA walks its
// split in tiles of TILE_N selected cache rows, gathered by physical slot with cp.async into a
// shared-memory ring of GLM_RING entries of 16 rows (two tiles or more keep the next tile in
// flight during a tile's math, an odd count part of the one after; one tile is for two CTAs per
// SM, which overlap each other's loads); each row (latent 512 + rope 64, bf16)
// is read once and serves both products: S = Q K^T over all 576 columns, then O += P V over the
// first 512. Online softmax in fp32 (log2 domain). The splits of one (request, head group) are
// merged in the same launch, no separate combine kernel: the launch groups C consecutive splits
// into a thread-block cluster (C = 1, 2, 4 or 8; splits a multiple of C), which merges its C
// partial results through distributed shared memory, each CTA one 512 / C column chunk; with
// more than one cluster per group, each chunk's last CTA to finish -- an atomic counter per
// (request, head group, chunk) says which -- merges that chunk over the clusters' partials in
// global memory. Without clusters, when the whole grid is resident at once, the spread merge
// instead has a group's CTAs meet at a barrier and each merge a share of the columns over every
// split's partial (glm_mla_spread_merge). The merging CTA writes the bf16 latent output (the
// next product's operand) and the fp32 log-sum-exp.
// Invariant: every counter is 0 when a launch starts (zeroed once at allocation; the merging CTA
// resets its chunk's counter, all of whose CTAs have arrived by then; the spread merge's last
// departure resets its group's), so CUDA-graph replays work.
//
// Warp roles (GLM_WARPS warps; 8 give SM120, where one CTA fills an SM's shared memory, two
// warps per scheduler): for S, the warps form GLM_S_GROUPS token groups x 4 parts of the 576
// columns -- warp w owns tokens [tok0, tok0 + GLM_S_TOKENS_PER_WARP) of the tile over columns
// [kbeg, kbeg + 144), and holds Q's fragments for those columns in 36 registers for the whole
// split (so Q is read from shared memory once, and the kernel fits 128 registers: two CTAs per
// SM where shared memory allows). The softmax is spread over all warps: k-part e owns value
// slot e of every S fragment and the other k-parts hand it their partial scores of that slot
// through shared memory. For P V, warp w owns output columns
// [GLM_O_COLS_PER_WARP w, GLM_O_COLS_PER_WARP (w + 1)). Row maxima cross warps (through shared
// memory) only when a tile moves the softmax's reference maximum; row sums stay per thread
// until one reduction after the last tile.
//
// Instantiation constants (defined before this file by the code generator):
//   GLM_HEADS (16: the M of mma.m16n8k16, fewer real heads are padded; 32: two m16 tiles of heads
//   share every gathered row and every K / V fragment read from shared memory, half the shared-
//   memory traffic per flop, for many heads; 8: see below), GLM_TILE_N (32 or 64),
//   GLM_RING (16-row ring entries, >= 1 tile's worth), GLM_WARPS (4 or 8; 16 with 32 heads),
//   GLM_D_LATENT (512), GLM_D_ROPE (64), GLM_TOPK;
//   optionally GLM_Q_GLOBAL (16 heads: Q's fragments from global memory, see the layout below)
//   and GLM_MIN_CTAS (tuning; see below).
#pragma once
#include "common.cuh"

#define GLM_D (GLM_D_LATENT + GLM_D_ROPE)
// Shared-memory row stride in bf16: 16 bytes of padding make the 8 rows an ldmatrix reads start
// in 8 different bank groups.
#define GLM_ROW (GLM_D + 8)
#define GLM_P_ROW (GLM_TILE_N + 8)
#define GLM_THREADS (GLM_WARPS * 32)
#define GLM_NT (GLM_TILE_N / 8) // n8 tiles of tokens per tile
#define GLM_S_KSPLIT 4
// m16 tiles of heads (16 and 32 heads). With 32 heads and 16 warps the m-tiles are also split
// across the warps for S (GLM_S_MSPLIT 2: each warp computes one m-tile's scores, so it holds
// one m-tile's Q fragments).
#define GLM_MT (GLM_HEADS == 32 ? 2 : 1)
#define GLM_S_MSPLIT (GLM_MT == 2 && GLM_WARPS == 16 ? 2 : 1)
#define GLM_MT_W (GLM_MT / GLM_S_MSPLIT) // m-tiles of one warp's S
#define GLM_S_GROUPS (GLM_WARPS / (GLM_S_KSPLIT * GLM_S_MSPLIT))
#define GLM_S_NTILES (GLM_NT / GLM_S_GROUPS)
#define GLM_S_TOKENS_PER_WARP (GLM_S_NTILES * 8)
#define GLM_S_K (GLM_D / GLM_S_KSPLIT)
#define GLM_S_KSTEPS (GLM_S_K / 16)
#define GLM_O_COLS_PER_WARP (GLM_D_LATENT / GLM_WARPS)
#define GLM_O_NTILES (GLM_O_COLS_PER_WARP / 8)  // 16 heads: n8 tiles of output columns
#define GLM_O_MTILES (GLM_O_COLS_PER_WARP / 16) // 8 heads: m16 tiles of output columns
#define GLM_S_MTILES (GLM_S_TOKENS_PER_WARP / 16) // 8 heads: m16 tiles of tokens per warp
// 8 threads per row, 9 chunks of 16 B each; with 16 warps the first 8 gather (a tile's 32 rows).
#define GLM_GATHER_ROWS ((GLM_THREADS < 256 ? GLM_THREADS : 256) / 8)
// The ring: GLM_RING entries of GLM_ENTRY_N rows; tile t is entries t GLM_TILE_ENTRIES .. (mod).
#define GLM_ENTRY_N 16
#define GLM_TILE_ENTRIES (GLM_TILE_N / GLM_ENTRY_N)
#define GLM_GATHER_SETS (GLM_GATHER_ROWS / GLM_ENTRY_N) // thread sets gathering one entry each
#define GLM_ROWS_PER_THREAD (GLM_TILE_ENTRIES / GLM_GATHER_SETS) // per refill (one tile)

static_assert(GLM_HEADS == 16 || GLM_HEADS == 32 || GLM_HEADS == 8,
              "16 or 32 heads: one or two m16 tiles of heads; 8 heads: the tokens as the mma M, "
              "the heads its N");
static_assert(GLM_WARPS == 4 || GLM_WARPS == 8 || (GLM_WARPS == 16 && GLM_MT == 2),
              "4 or 8 warps; 16 with 32 heads");
static_assert(GLM_S_GROUPS * GLM_S_NTILES == GLM_NT && GLM_S_NTILES % 2 == 0,
              "pairs of n8 tiles of tokens per warp");
static_assert(GLM_S_K % 16 == 0, "whole k16 steps per k-part");
static_assert(GLM_TILE_N % GLM_ENTRY_N == 0 && GLM_GATHER_ROWS % GLM_ENTRY_N == 0 &&
                  GLM_TILE_ENTRIES % GLM_GATHER_SETS == 0,
              "whole ring entries per tile, whole thread sets per entry and per refill");
static_assert(GLM_D % 64 == 0 && GLM_O_NTILES % 2 == 0, "mma and gather tiling");
// A ring of one tile (GLM_RING == GLM_TILE_ENTRIES) has no load in flight during a tile's math
// within the CTA: it is for two or more CTAs per SM, which overlap each other's loads (SM120,
// where a two-tile ring leaves room for one CTA only). The pipeline below needs no other change:
// refill k then loads tile k itself into the entries tile k - 1 used, and waits for all of it.
static_assert(GLM_RING >= GLM_TILE_ENTRIES, "a ring of at least one tile");

// Dynamic shared memory layout, in bytes (codegen/registry/SparseMla.cpp computes the same total).
// Q's region is free once every warp holds its fragments: from then on it holds the k-parts'
// partial scores and P. GLM_Q_GLOBAL: the warps load their Q fragments straight from global
// memory and the region only holds the partial scores and P -- with 32 heads always (Q's 37 KB
// would not fit beside the ring in SM120's 99 KB), with 16 heads where the shared memory is
// wanted for a second CTA per SM.
#ifndef GLM_Q_GLOBAL
#define GLM_Q_GLOBAL (GLM_MT > 1)
#endif
static_assert(GLM_Q_GLOBAL || GLM_MT == 1, "32 heads: Q from global memory");
static_assert(!GLM_Q_GLOBAL || GLM_HEADS != 8, "the 8-head layout reads Q from shared memory");
#define GLM_SMEM_Q 0
#define GLM_SMEM_SP_BYTES                                                                          \
  ((GLM_S_KSPLIT - 1) * GLM_TILE_N * GLM_HEADS * 4 + GLM_HEADS * GLM_P_ROW * 2)
#define GLM_SMEM_Q_BYTES (GLM_Q_GLOBAL ? GLM_SMEM_SP_BYTES : GLM_HEADS * GLM_ROW * 2)
#define GLM_SMEM_KV (GLM_SMEM_Q + GLM_SMEM_Q_BYTES)
#define GLM_SMEM_RED (GLM_SMEM_KV + GLM_RING * GLM_ENTRY_N * GLM_ROW * 2)
#define GLM_SMEM_VALID (GLM_SMEM_RED + 2 * GLM_WARPS * GLM_HEADS * 4)
#define GLM_SMEM_BYTES (GLM_SMEM_VALID + GLM_RING * GLM_ENTRY_N * 4)
#define GLM_SMEM_SPART GLM_SMEM_Q
#define GLM_SMEM_P (GLM_SMEM_SPART + (GLM_S_KSPLIT - 1) * GLM_TILE_N * GLM_HEADS * 4)
static_assert(GLM_SMEM_P + GLM_HEADS * GLM_P_ROW * 2 <= GLM_SMEM_KV,
              "the partial scores and P fit in Q's region");

// The merge (after the tile loop) reuses the ring: the staged partial output (rows padded by 8
// values against bank conflicts of the fragment stores) and its log-sum-exp. Clusters have at
// most GLM_MAX_CLUSTER CTAs (the portable limit); the number of clusters per (request, head
// group) is not bounded by the kernel.
// GLM_MLA_PART_BF16 (default 1): every partial output -- staged in shared memory for the
// cluster merge, or written to o_part for stage 2 and the spread merge -- is bf16; the lse values
// stay fp32. The partials' bytes bounded the cluster merge (1.45 µs at 8 heads, 2.27 at 16, batch
// 1, as fp32). A normalized partial is a convex combination of the bf16 cache's values, so bf16
// keeps its range, and its rounding (2^-9 of the partial's magnitude) is of the order of the one P
// already takes as bf16 before P V. 0 (a diagnostic for glm5c-bench-sparse-mla --define, whose
// buffers fit either): fp32 partials; runtime/launch sizes o_part for bf16.
#ifndef GLM_MLA_PART_BF16
#define GLM_MLA_PART_BF16 1
#endif
#if GLM_MLA_PART_BF16
typedef glm_bf16 glm_mla_part_t;
#else
typedef float glm_mla_part_t;
#endif
// Every merge works on items of GLM_MLA_ITEM consecutive columns of one head row (4 or 8).
// 4 by default; 8 (one 16-byte load per bf16 partial instead of two 8-byte ones, half the
// threads busy) measured slower where the merges bound the time: 8 heads x 1 row 7.1 -> 7.6 us,
// 64 x 1 11.0 -> 11.4 (bench/RESULTS.md). Overridable for experiments (glm5c-bench-sparse-mla
// --define GLM_MLA_ITEM=8).
#ifndef GLM_MLA_ITEM
#define GLM_MLA_ITEM 4
#endif
static_assert(GLM_MLA_ITEM == 4 || GLM_MLA_ITEM == 8, "merge items of 4 or 8 columns");
#define GLM_MLA_ITEM_WORDS (GLM_MLA_ITEM * (GLM_MLA_PART_BF16 ? 2 : 4) / 4) // 32-bit words
// An item's partial values as loaded (kept raw until used: fewer live registers), and widened.
struct glm_mla_raw {
  uint32_t w[GLM_MLA_ITEM_WORDS];
};
struct glm_mla_vec {
  float v[GLM_MLA_ITEM];
};
#define GLM_MAX_CLUSTER 8
#define GLM_STAGE_ROW (GLM_D_LATENT + 8)
#define GLM_MERGE_BYTES (GLM_HEADS * GLM_STAGE_ROW * sizeof(glm_mla_part_t) + GLM_HEADS * 4)
static_assert(GLM_MERGE_BYTES <= GLM_RING * GLM_ENTRY_N * GLM_ROW * 2,
              "the merge's staging fits in the ring");

// CTAs per SM the registers must leave room for (__launch_bounds__): as many as the shared
// memory per SM of the arch the code is compiled for holds -- 2 for SM120 tiles running as sm_90
// code (228 KB per SM), 1 on SM120 itself (100 KB per SM). The system reserves 1 KB per CTA.
// 32 heads: 1 (their Q fragments and O accumulators need ~200 registers).
#if !defined(GLM_MIN_CTAS) && GLM_MT == 2
#define GLM_MIN_CTAS 1
#endif
#ifndef GLM_MIN_CTAS
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1000
#define GLM_SM_SHARED 233472
#else
#define GLM_SM_SHARED 102400
#endif
#define GLM_MIN_CTAS (2 * (GLM_SMEM_BYTES + 16 + 1024) <= GLM_SM_SHARED ? 2 : 1)
#endif
// Accumulator chains per S n-tile: 2 (even and odd k-steps) where one CTA per SM leaves the
// registers for it, halving the dependent mma chain; at 128 registers the 16-head layout's
// second chain spills. (Overridable for experiments.)
#ifndef GLM_S_CHAINS
#define GLM_S_CHAINS (GLM_MIN_CTAS == 1 ? 2 : 1)
#endif

// GLM_MLA_NO_MATH (a diagnostic, like GLM_MLA_TRACE; glm5c-bench-sparse-mla --define): the
// tile loop skips its S and P V products -- the gather, barriers and softmax alone.
#ifndef GLM_MLA_NO_MATH
#define GLM_MLA_NO_MATH 0
#endif
#define GLM_MLA_KSTEPS (GLM_MLA_NO_MATH ? 0 : GLM_S_KSTEPS)
#define GLM_MLA_PV_N (GLM_MLA_NO_MATH ? 0 : GLM_TILE_N)

// GLM_MLA_BULK (the registry's choice where a request has several head groups, which gather the
// same rows, or the tile target holds one CTA per SM: codegen/registry sparseMlaDecodeBulk):
// each gathered row is one bulk copy (its row's first gather thread), completing on the ring
// entry's mbarrier, instead of 8 threads x 9 cp.async; a tile's rows are waited for on the
// entries' barriers, so the barrier after the wait goes. A masked row is zero-filled by its 8
// threads instead.
#ifndef GLM_MLA_BULK
#define GLM_MLA_BULK 0
#endif
// GLM_MLA_STAGGER (bulk path): the prologue copies tile 0's rows alone and the rest of the ring
// once tile 0 has landed, so that tile 0 does not share the memory system with every CTA's fill
// of tile 1 (it then landed when nearly all of them had: 8 x 8, 2.23 -> 1.73 us after the
// prologue). On the H200 (SM120 tiles) 0.15-0.7 us faster at batch 8 and 32 and 64 x 1, even at
// 128, 0.1 us slower at 8 x 1 and 16 x 1 (bench/RESULTS.md 2026-12-03, sixth session).
#ifndef GLM_MLA_STAGGER
#define GLM_MLA_STAGGER 1
#endif
#define GLM_MLA_STAGGERED (GLM_MLA_BULK && GLM_MLA_STAGGER && GLM_RING > GLM_TILE_ENTRIES)

// Scores of masked slots: a large finite negative, so a fully masked tile never makes NaN.
#define GLM_MASKED (-1.0e30f)
// How far (log2 units) a score may exceed the softmax's reference maximum before the tile
// rescales: P <= 2^8.
#define GLM_RESCALE_SLACK 8.0f

// Pieces of a tile's softmax that both head layouts share; kTiles: the S fragments a warp holds.
// The softmax is spread over every warp: of each S fragment's four value slots, slot e belongs
// to k-part e (its owner), which sums the four k-parts' partial scores of it, masks, scales, and
// writes P. The slot's other k-parts hand their partials over through spart, per m-tile:
// owner e's block from sender j = kpart - (kpart > e) for token group sg is
// spart[((e (GLM_S_KSPLIT - 1) + j) GLM_S_GROUPS + sg) kTiles 32], fragment i at i 32 + lane.
// Warp (ms, kpart, sg) is warp ((ms GLM_S_KSPLIT + kpart) GLM_S_GROUPS + sg); red_max and red_sum
// hold a value per warp and head row: [warp][GLM_HEADS], written for the rows it owns.
static_assert(GLM_S_KSPLIT == 4, "one k-part per fragment value slot");
// Both S chains zeroed for a tile.
template <int kTiles>
__device__ __forceinline__ void glm_mla_zero(float (&s)[kTiles][4], float (&s2)[kTiles][4]) {
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s[i][e] = s2[i][e] = 0.f;
}
// The S chains summed (s2: the second chain, GLM_S_CHAINS == 2), then the slots this warp does
// not own handed to their owners.
template <int kTiles>
__device__ __forceinline__ void glm_mla_hand_off(float (&s)[kTiles][4],
                                                 const float (&s2)[kTiles][4], float *spart,
                                                 int kpart, int sg, int lane) {
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s[i][e] += s2[i][e];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    if (e == kpart)
      continue;
    const int j = kpart - (kpart > e ? 1 : 0);
    float *dst = spart + ((e * (GLM_S_KSPLIT - 1) + j) * GLM_S_GROUPS + sg) * (kTiles * 32) + lane;
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
      dst[i * 32] = s[i][e];
  }
}
// The owner's full score of its slot of fragment i: its own partial (slot kpart of f) plus the
// other k-parts'.
template <int kTiles>
__device__ __forceinline__ float glm_mla_full_score(const float (&f)[4], const float *spart,
                                                    int kpart, int sg, int i, int lane) {
  float v = kpart == 0 ? f[0] : kpart == 1 ? f[1] : kpart == 2 ? f[2] : f[3];
#pragma unroll
  for (int j = 0; j < GLM_S_KSPLIT - 1; ++j)
    v += spart[((kpart * (GLM_S_KSPLIT - 1) + j) * GLM_S_GROUPS + sg) * (kTiles * 32) + i * 32 +
               lane];
  return v;
}
// Head row `row`'s maximum (kMax) or sum over the warps of m-tile group ms and k-parts kp0, kp1
// (the owners of its slots), all token groups: from red ([warp][GLM_HEADS]).
template <bool kMax>
__device__ __forceinline__ float glm_mla_red_rows(const float *red, int ms, int kp0, int kp1,
                                                  int row) {
  float v = kMax ? GLM_MASKED : 0.f;
#pragma unroll
  for (int sg = 0; sg < GLM_S_GROUPS; ++sg) {
    const float a = red[((ms * GLM_S_KSPLIT + kp0) * GLM_S_GROUPS + sg) * GLM_HEADS + row];
    const float b = red[((ms * GLM_S_KSPLIT + kp1) * GLM_S_GROUPS + sg) * GLM_HEADS + row];
    v = kMax ? fmaxf(v, fmaxf(a, b)) : v + a + b;
  }
  return v;
}
// The slow path's new reference of a row whose maximum over the CTA's tile is tm: m_ref becomes
// the overall maximum and alpha the factor for O and the row sums.
__device__ __forceinline__ void glm_mla_move_ref(float tm, float &m_ref, float &alpha) {
  const float m_new = fmaxf(m_ref, tm);
  alpha = glm_exp2(m_ref - m_new); // 1 while both are still GLM_MASKED
  m_ref = m_new;
}

// Values v0, v1 to columns c and c + dc of a row (dc == 1: c even, one vector store), as fp32
// or bf16.
__device__ __forceinline__ void glm_mla_put2(float *row, int c, int dc, float v0, float v1) {
  if (dc == 1) {
    *reinterpret_cast<float2 *>(row + c) = make_float2(v0, v1);
  } else {
    row[c] = v0;
    row[c + dc] = v1;
  }
}
__device__ __forceinline__ void glm_mla_put2(glm_bf16 *row, int c, int dc, float v0, float v1) {
  if (dc == 1) {
    *reinterpret_cast<uint32_t *>(row + c) = glm_pack_bf16x2(v0, v1);
  } else {
    row[c] = glm_f32_to_bf16(v0);
    row[c + dc] = glm_f32_to_bf16(v1);
  }
}

__device__ __forceinline__ glm_mla_vec glm_mla_vzero() {
  glm_mla_vec r;
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM; ++i)
    r.v[i] = 0.f;
  return r;
}
__device__ __forceinline__ glm_mla_vec glm_mla_widen(const glm_mla_raw &r) {
  glm_mla_vec x;
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM_WORDS; ++i) {
#if GLM_MLA_PART_BF16
    x.v[2 * i] = __uint_as_float(r.w[i] << 16);
    x.v[2 * i + 1] = __uint_as_float(r.w[i] & 0xffff0000u);
#else
    x.v[i] = __uint_as_float(r.w[i]);
#endif
  }
  return x;
}
// An item's raw words, in 16-byte loads (one 8-byte load for four bf16 values; items start at
// multiples of GLM_MLA_ITEM columns, so every load is aligned). From a partial in global memory,
// through L2 (other CTAs wrote it):
__device__ __forceinline__ glm_mla_raw glm_mla_ld(const glm_mla_part_t *p) {
  glm_mla_raw r;
#if GLM_MLA_ITEM_WORDS == 2
  const uint2 v = __ldcg(reinterpret_cast<const uint2 *>(p));
  r.w[0] = v.x, r.w[1] = v.y;
#else
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM_WORDS; i += 4) {
    const uint4 v = __ldcg(reinterpret_cast<const uint4 *>(p) + i / 4);
    r.w[i] = v.x, r.w[i + 1] = v.y, r.w[i + 2] = v.z, r.w[i + 3] = v.w;
  }
#endif
  return r;
}
// From a cluster peer's shared memory (addr: mapped by glm_cluster_map):
__device__ __forceinline__ glm_mla_raw glm_mla_ld_cluster(uint32_t addr) {
  glm_mla_raw r;
#if GLM_MLA_ITEM_WORDS == 2
  const uint2 v = glm_ld_cluster_u32x2(addr);
  r.w[0] = v.x, r.w[1] = v.y;
#else
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM_WORDS; i += 4) {
    const uint4 v = glm_ld_cluster_u32x4(addr + 4 * i);
    r.w[i] = v.x, r.w[i + 1] = v.y, r.w[i + 2] = v.z, r.w[i + 3] = v.w;
  }
#endif
  return r;
}
// An item's values scaled by s as bf16 pairs (the output's format, and the partials' by default).
__device__ __forceinline__ void glm_mla_pack_bf16(const glm_mla_vec &x, float s,
                                                  uint32_t (&w)[GLM_MLA_ITEM / 2]) {
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM / 2; ++i)
    w[i] = glm_pack_bf16x2(x.v[2 * i] * s, x.v[2 * i + 1] * s);
}
// An item's values scaled by s, stored through L2 to a partial (other CTAs read it), or as bf16
// to an output row.
__device__ __forceinline__ void glm_mla_st(glm_mla_part_t *p, const glm_mla_vec &x, float s) {
  uint32_t w[GLM_MLA_ITEM_WORDS];
#if GLM_MLA_PART_BF16
  glm_mla_pack_bf16(x, s, w);
#else
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM_WORDS; ++i)
    w[i] = __float_as_uint(x.v[i] * s);
#endif
  uint32_t *q = reinterpret_cast<uint32_t *>(p);
#if GLM_MLA_ITEM_WORDS == 2
  __stcg(reinterpret_cast<uint2 *>(q), make_uint2(w[0], w[1]));
#else
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM_WORDS; i += 4)
    __stcg(reinterpret_cast<uint4 *>(q + i), make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]));
#endif
}
__device__ __forceinline__ void glm_mla_st_out(glm_bf16 *p, const glm_mla_vec &x, float s) {
  uint32_t w[GLM_MLA_ITEM / 2];
  glm_mla_pack_bf16(x, s, w);
#if GLM_MLA_ITEM == 4
  *reinterpret_cast<uint2 *>(p) = make_uint2(w[0], w[1]);
#else
  *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
#endif
}
__device__ __forceinline__ void glm_mla_vscale(glm_mla_vec &x, float a) {
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM; ++i)
    x.v[i] *= a;
}

// The merges' step: partial x (an item) with log2-domain lse l, weighted against the reference
// maximum mx, into the running weight sum and columns (an empty partial, lse -inf, adds nothing).
__device__ __forceinline__ void glm_mla_merge_add(float l, float mx, const glm_mla_vec &x,
                                                  float &sum, glm_mla_vec &acc) {
  const float w = l == -__int_as_float(0x7f800000) ? 0.f : glm_exp2(l - mx);
  sum += w;
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM; ++i)
    acc.v[i] += w * x.v[i];
}

// Partials first, first + step, ... (below count) of one item merged into the running (mx, sum,
// acc): partial p's lse at lse[p lse_stride], its columns at v[p GLM_D_LATENT], read through L2
// (other CTAs wrote them), 8 partials' loads in flight at a time (all issued before any is
// used), with a running maximum across the batches of 8.
__device__ __forceinline__ void glm_mla_merge_partials(const float *lse, unsigned lse_stride,
                                                       const glm_mla_part_t *v, int first, int step,
                                                       int count, float &mx, float &sum,
                                                       glm_mla_vec &acc) {
  const float kNegInf = -__int_as_float(0x7f800000);
  for (int p0 = first; p0 < count; p0 += 8 * step) {
    float l[8];
    glm_mla_raw w[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int p = p0 + j * step;
      l[j] = p < count ? __ldcg(lse + p * lse_stride) : kNegInf; // unsigned: as the cluster size
      if (p < count)
        w[j] = glm_mla_ld(v + p * GLM_D_LATENT);
    }
    float m_new = mx;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      m_new = fmaxf(m_new, l[j]);
    if (m_new == kNegInf)
      continue;                           // every partial so far is empty
    const float a = glm_exp2(mx - m_new); // 0 while mx is still -inf
    sum *= a;
    glm_mla_vscale(acc, a);
    mx = m_new;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (p0 + j * step < count)
        glm_mla_merge_add(l[j], mx, glm_mla_widen(w[j]), sum, acc);
  }
}

// A merged item's result: its columns (acc over weight sum `sum`) normalized into the bf16
// output row bh, and with write_lse the row's natural-log lse (mx: its log2-domain maximum).
__device__ __forceinline__ void glm_mla_put_out(glm_bf16 *out, float *lse, long long bh, int col,
                                                float mx, float sum, const glm_mla_vec &acc,
                                                bool write_lse) {
  glm_mla_st_out(out + bh * GLM_D_LATENT + col, acc, sum > 0.f ? 1.f / sum : 0.f);
  if (write_lse)
    lse[bh] = (sum > 0.f ? mx + log2f(sum) : -__int_as_float(0x7f800000)) * 0.6931471805599453f;
}

// The spread merge (kernel argument spread_merge; no clusters, several splits): the runtime
// passes it only when the whole grid is resident at once (launch::sparseMlaSpread: at most the
// device's CTAs per SM times its SMs), so a group's CTAs can wait for each other. Each CTA has
// written its normalized partial (o_part / lse_part, partial `split` of its row); they meet at a
// group barrier, then CTA `split` merges items [split per, (split + 1) per) of the group's
// rows' items over all the partials: one L2 round trip per CTA instead of a
// cluster merge followed by one CTA per chunk merging every cluster's partial.
// The barrier is the group's merge counter (the one stage 2 would use: one per row and group
// without clusters), 0 when the launch starts: each CTA arrives (+1, release: its partial is
// published), waits until all `splits` have, then departs (+1 again); the last departure -- no
// CTA still waits by then -- resets it to 0 for the next launch or graph replay. The departure's
// reply is only needed at the end, so its round trip overlaps the merge.
// Within a CTA, `lanes` threads (a power of two, at most a warp) share an item: lane j takes
// partials j, j + lanes, ..., 8 in flight at a time with a running maximum, then the lanes
// combine (maximum, weight sum, columns) by butterfly shuffles. The item loop runs whole warps
// (an item past the end carries an empty state), so every shuffle has all its lanes.
__device__ __forceinline__ void glm_mla_merge_combine(float mo, float so, const glm_mla_vec &ao,
                                                      float &mx, float &sum, glm_mla_vec &acc) {
  const float kNegInf = -__int_as_float(0x7f800000);
  const float m = fmaxf(mx, mo);
  const float a = mx == kNegInf ? 0.f : glm_exp2(mx - m);
  const float c = mo == kNegInf ? 0.f : glm_exp2(mo - m);
  sum = sum * a + so * c;
#pragma unroll
  for (int i = 0; i < GLM_MLA_ITEM; ++i)
    acc.v[i] = acc.v[i] * a + ao.v[i] * c;
  mx = m;
}

// The group barrier's arrival and wait is glm_global_barrier (common.cuh; the departure follows
// it in the kernel). Both it and the spread merge are calls, not inlined: inlined, they changed
// the register allocation of the whole kernel, and shapes that never take this path ran up to
// 2% slower (64 heads x 128 rows 245.9 -> 250.8 us; bench/RESULTS.md).

__device__ __noinline__ void glm_mla_spread_merge(const glm_mla_part_t *o_part,
                                                  const float *lse_part,
                                                  glm_bf16 *out, float *lse, int b, int head0,
                                                  int rows, int num_heads, int split, int splits,
                                                  int tid) {
  const float kNegInf = -__int_as_float(0x7f800000);
  constexpr int kRowItems = GLM_D_LATENT / GLM_MLA_ITEM;
  const int total = rows * kRowItems, per = (total + splits - 1) / splits;
  int lanes = 32;
  while (lanes > 1 && lanes * per > GLM_THREADS)
    lanes /= 2;
  const int li = tid & (lanes - 1), slot = tid / lanes, nslots = GLM_THREADS / lanes;
  for (int k0 = 0; k0 < per; k0 += nslots) {
    const int k = k0 + slot, it = split * per + k;
    const bool valid = k < per && it < total;
    const int row = valid ? it / kRowItems : 0, col = GLM_MLA_ITEM * (it % kRowItems);
    const long long bh = static_cast<long long>(b) * num_heads + head0 + row;
    const glm_mla_part_t *src = o_part + bh * splits * GLM_D_LATENT + col;
    float mx = kNegInf, sum = 0.f;
    glm_mla_vec acc = glm_mla_vzero();
    glm_mla_merge_partials(lse_part + bh * splits, 1u, src, li, lanes, valid ? splits : 0, mx, sum,
                           acc);
    for (int off = 1; off < lanes; off *= 2) {
      const float mo = __shfl_xor_sync(0xffffffffu, mx, off);
      const float so = __shfl_xor_sync(0xffffffffu, sum, off);
      glm_mla_vec ao;
#pragma unroll
      for (int i = 0; i < GLM_MLA_ITEM; ++i)
        ao.v[i] = __shfl_xor_sync(0xffffffffu, acc.v[i], off);
      glm_mla_merge_combine(mo, so, ao, mx, sum, acc);
    }
    if (valid && li == 0)
      glm_mla_put_out(out, lse, bh, col, mx, sum, acc, col == 0);
  }
}

// Phase trace (profiling only, glm5c-bench-sparse-mla --trace; GLM_MLA_TRACE = the largest
// grid traced): thread 0 of each CTA records clock64 at the kernel's phase boundaries, relative
// to its start, and %globaltimer at its start and end; sparse_mla_trace_dump copies them out.
// Slots: 0 start (globaltimer), 1 prologue issued, 2 Q and tile 0 landed, 3 tile loop done,
// 4 partials staged and the cluster synced, 5 cluster merge written, 6 end, 7 end (globaltimer),
// 8-11 the tile loop's phases (below), 12 the CTA's SM (%smid).
#ifdef GLM_MLA_TRACE
#define GLM_TRACE_SLOTS 13 // glm5c-bench-sparse-mla reads as many (kTraceSlots)
__device__ unsigned long long glm_mla_trace[GLM_MLA_TRACE][GLM_TRACE_SLOTS];
extern "C" __global__ void sparse_mla_trace_dump(unsigned long long *out, int ctas) {
  glm_grid_chain();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < ctas * GLM_TRACE_SLOTS;
       i += gridDim.x * blockDim.x)
    out[i] = glm_mla_trace[i / GLM_TRACE_SLOTS][i % GLM_TRACE_SLOTS];
}
#define GLM_TRACE_AT(slot, value)                                                               \
  do {                                                                                          \
    const int cta_ = blockIdx.y * gridDim.x + blockIdx.x;                                       \
    if (threadIdx.x == 0 && cta_ < GLM_MLA_TRACE)                                               \
      glm_mla_trace[cta_][slot] = (value);                                                      \
  } while (0)
#define GLM_TRACE(slot) GLM_TRACE_AT(slot, clock64() - trace_t0)
// Inside the tile loop: cycles summed over the tiles per phase (slots 8 + i: 0 the ring wait and
// refill, 1 S and its hand-off, 2 the softmax, 3 P V), as thread 0 sees them. The sums and the
// last mark live in shared memory (trace_sh[0..3], [4]), written by thread 0 only: as registers
// of every thread they made the tightest kernels spill.
#define GLM_TRACE_TILE_START()                                                                  \
  do {                                                                                          \
    if (threadIdx.x == 0)                                                                       \
      trace_sh[4] = clock64();                                                                  \
  } while (0)
#define GLM_TRACE_MARK(i)                                                                        \
  do {                                                                                          \
    if (threadIdx.x == 0) {                                                                     \
      const long long now_ = clock64();                                                         \
      trace_sh[i] += now_ - trace_sh[4];                                                        \
      trace_sh[4] = now_;                                                                       \
    }                                                                                           \
  } while (0)
#define GLM_TRACE_TILES()                                                                       \
  do {                                                                                          \
    for (int i_ = 0; i_ < 4; ++i_)                                                              \
      GLM_TRACE_AT(8 + i_, trace_sh[i_]);                                                      \
  } while (0)
#else
#define GLM_TRACE_TILE_START()
#define GLM_TRACE_MARK(i)
#define GLM_TRACE_TILES()
#define GLM_TRACE_AT(slot, value)
#define GLM_TRACE(slot)
#endif

extern "C" __global__ void __launch_bounds__(GLM_THREADS, GLM_MIN_CTAS)
    sparse_mla_decode(const glm_bf16 *__restrict__ q_lat,  // [B, H, GLM_D_LATENT]
                      const glm_bf16 *__restrict__ q_rope, // [B, H, GLM_D_ROPE]
                      const glm_bf16 *__restrict__ kv,     // [slots, GLM_D]: latent | rope key
                      const int32_t *__restrict__ indices, // [B, GLM_TOPK] physical slots, -1 none
                      glm_mla_part_t *__restrict__ o_part, // [B, H, splits, GLM_D_LATENT]
                      float *__restrict__ lse_part,        // [B, H, splits]
                      glm_bf16 *__restrict__ out,          // [B, H, GLM_D_LATENT]
                      float *__restrict__ lse,             // [B, H], natural log
                      unsigned *__restrict__ counters,     // [B, head groups], 0 between launches
                      int num_heads, int num_slots, int splits, int tokens_per_split,
                      float scale_log2,      // softmax scale * log2(e)
                      int spread_merge) {    // 1: every CTA is resident at once (see the merge)
  glm_grid_chain();
#ifdef GLM_MLA_EMPTY
  // A diagnostic (glm5c-bench-sparse-mla --define GLM_MLA_EMPTY=1): the launch with the shape's
  // grid, clusters and shared memory, and its drain, without any of the kernel's work.
  if (GLM_MLA_EMPTY)
    return;
#endif
  extern __shared__ __align__(16) unsigned char smem[];
  glm_bf16 *sq = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_Q);
  glm_bf16 *skv = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_KV);
  glm_bf16 *sp = reinterpret_cast<glm_bf16 *>(smem + GLM_SMEM_P);
  float *red_max = reinterpret_cast<float *>(smem + GLM_SMEM_RED);
  float *red_sum = red_max + GLM_WARPS * GLM_HEADS;
  float *spart = reinterpret_cast<float *>(smem + GLM_SMEM_SPART); // handed-off scores
  int32_t *svalid = reinterpret_cast<int32_t *>(smem + GLM_SMEM_VALID);
#if GLM_MLA_BULK
  // Ring entry e's barrier: its 16 rows' 8 gather threads arrive (one of a row with the row's
  // bytes expected); the phase of the entry's n-th fill has parity n & 1.
  __shared__ unsigned long long ring_full[GLM_RING];
  if (threadIdx.x < GLM_RING)
    glm_mbar_init(ring_full + threadIdx.x, GLM_ENTRY_N * 8);
#if !GLM_Q_GLOBAL
  // Q's rows are bulk copies too, one arrival per row (below).
  __shared__ unsigned long long q_full;
  if (threadIdx.x == 0)
    glm_mbar_init(&q_full, GLM_HEADS);
#endif
  __syncthreads();
#endif

#ifdef GLM_MLA_TRACE
  const long long trace_t0 = clock64();
  __shared__ long long trace_sh[5];
  if (threadIdx.x < 5) // visible to thread 0 after the barrier before tile 0
    trace_sh[threadIdx.x] = 0;
  GLM_TRACE_AT(0, glm_globaltimer());
  GLM_TRACE_AT(12, glm_smid());
#endif
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
  // (GLM_Q_GLOBAL: the warps load their fragments from global memory, below.) The bulk path:
  // thread r copies row r (its latent and rope parts) or zeroes it, completing on q_full.
#if GLM_MLA_BULK && !GLM_Q_GLOBAL
  if (tid < GLM_HEADS) {
    const int h = head0 + tid;
    const uint32_t row = glm_smem_addr(sq + tid * GLM_ROW);
    if (h < num_heads) {
      const long long qrow = static_cast<long long>(b) * num_heads + h;
      glm_mbar_arrive_expect_tx(&q_full, GLM_D * 2);
      glm_bulk_copy_to_shared(row, q_lat + qrow * GLM_D_LATENT, GLM_D_LATENT * 2, &q_full);
      glm_bulk_copy_to_shared(row + GLM_D_LATENT * 2, q_rope + qrow * GLM_D_ROPE, GLM_D_ROPE * 2,
                              &q_full);
    } else {
      for (int c = 0; c < GLM_D / 8; ++c)
        glm_st_shared_zero16(row + 16 * c);
      glm_mbar_arrive(&q_full);
    }
  }
#endif
  for (int c = tid; !GLM_Q_GLOBAL && !GLM_MLA_BULK && c < GLM_HEADS * (GLM_D / 8);
       c += GLM_THREADS) {
    int row = c / (GLM_D / 8), col = (c % (GLM_D / 8)) * 8;
    int h = head0 + row;
    const long long qrow = static_cast<long long>(b) * num_heads + (h < num_heads ? h : 0);
    // 8-column chunks never straddle the latent/rope boundary (GLM_D_LATENT % 8 == 0).
    const glm_bf16 *src = col < GLM_D_LATENT ? q_lat + qrow * GLM_D_LATENT + col
                                             : q_rope + qrow * GLM_D_ROPE + (col - GLM_D_LATENT);
    glm_cp_async_16(glm_smem_addr(sq + row * GLM_ROW + col), src, h < num_heads ? 16 : 0);
  }

  // Gather, one ring entry (16 rows) at a time: entry e (the split's rows [16 e, 16 e + 16)) goes
  // to ring entry e % GLM_RING and is one cp.async commit group of its own (empty where this
  // thread has no row of it), so group e is entry e. 8 threads per row (9 chunks of 16 B each);
  // entry e is gathered by thread set e % GLM_GATHER_SETS, one row per thread. A thread's slots
  // for a refill are fetched one refill ahead into registers, so the index load's latency hides
  // behind the current tile's math instead of stalling the cp.async issue.
  const int grow = tid / 8, gchunk = tid % 8;
  const int gset = grow / GLM_ENTRY_N, erow = grow % GLM_ENTRY_N;
  const int num_entries = num_tiles * GLM_TILE_ENTRIES;
  auto entry_slot = [&](int e) {
    const int pos = begin + e * GLM_ENTRY_N + erow;
    return e < num_entries && pos < end ? __ldg(idx + pos) : -1;
  };
  auto load_entry = [&](int e, int slot) {
    const int re = e % GLM_RING;
    const bool ok = e < num_entries && slot >= 0 && slot < num_slots;
    // This thread's chunks of the row: 16 B at byte gchunk 16 + 128 c, c < 9.
#if GLM_MLA_BULK
    const uint32_t row = glm_smem_addr(skv + (re * GLM_ENTRY_N + erow) * GLM_ROW);
    if (gchunk == 0)
      svalid[re * GLM_ENTRY_N + erow] = ok;
    if (ok && gchunk == 0) {
      glm_mbar_arrive_expect_tx(ring_full + re, GLM_D * 2);
      glm_bulk_copy_to_shared(row, kv + static_cast<long long>(slot) * GLM_D, GLM_D * 2,
                              ring_full + re);
    } else {
      if (!ok) { // zeros, so that P = 0 times the row stays 0; ordered before a later bulk copy
#pragma unroll
        for (int c = 0; c < GLM_D / 64; ++c)
          glm_st_shared_zero16(row + gchunk * 16 + 128 * c);
        glm_fence_proxy_async();
      }
      glm_mbar_arrive(ring_full + re);
    }
#else
    const uint32_t dst = glm_smem_addr(skv + (re * GLM_ENTRY_N + erow) * GLM_ROW + gchunk * 8);
    const glm_bf16 *src = kv + static_cast<long long>(ok ? slot : 0) * GLM_D + gchunk * 8;
    glm_cp_async_16_strided<GLM_D / 64, 128>(dst, src, ok ? 16 : 0);
    if (gchunk == 0)
      svalid[re * GLM_ENTRY_N + erow] = ok;
#endif
  };
  // The bulk path: every warp waits for tile k's entries (fills E = GLM_TILE_ENTRIES k + j).
  auto wait_tile = [&](int k) {
#if GLM_MLA_BULK
#pragma unroll
    for (int j = 0; j < GLM_TILE_ENTRIES; ++j) {
      const int E = GLM_TILE_ENTRIES * k + j;
      glm_mbar_wait(ring_full + E % GLM_RING, (E / GLM_RING) & 1);
    }
#else
    (void)k;
#endif
  };
  // Tile 0 and Q landed and are visible to every warp. Where Q's fragments come from shared
  // memory (not GLM_Q_GLOBAL), its region becomes the partial scores at tile 0's hand-off, so
  // this barrier or a later one must follow every warp's fragment loads: the cp.async path loads
  // them after it (tile_begin(0)'s barrier follows); the bulk path, whose tile_begin has none,
  // waits for Q's rows on q_full and loads them before it. (The bulk path has no cp.async
  // groups; a split past the top-k range has no tile to wait for.)
  auto wait_first_tile = [&]() {
    glm_cp_async_wait<GLM_MLA_BULK ? 0 : GLM_RING - GLM_TILE_ENTRIES>();
    if (num_tiles > 0)
      wait_tile(0);
    __syncthreads();
    GLM_TRACE(2);
  };
  // Refill k >= 1 (at iteration k, into the entries tile k - 1 used): entries GLM_RING +
  // GLM_TILE_ENTRIES (k - 1) + j, j < GLM_TILE_ENTRIES; this thread's are those of its set.
  auto refill_first = [](int k) { return GLM_RING + GLM_TILE_ENTRIES * (k - 1); };
  auto fetch_refill = [&](int k, int (&slots)[GLM_ROWS_PER_THREAD]) {
#pragma unroll
    for (int j = 0; j < GLM_TILE_ENTRIES; ++j) {
      const int e = refill_first(k) + j;
      if (e % GLM_GATHER_SETS == gset)
        slots[j / GLM_GATHER_SETS] = entry_slot(e);
    }
  };
  auto load_refill = [&](int k, const int (&slots)[GLM_ROWS_PER_THREAD]) {
#pragma unroll
    for (int j = 0; j < GLM_TILE_ENTRIES; ++j) {
      const int e = refill_first(k) + j;
      if (e % GLM_GATHER_SETS == gset && e < num_entries)
        load_entry(e, slots[j / GLM_GATHER_SETS]);
      glm_cp_async_commit();
    }
  };

  // Pipeline: the prologue fills the whole ring (entries 0 .. GLM_RING - 1; the cp.async path's
  // Q rides in entry 0's group), so a split of up to GLM_RING entries has all its rows in flight
  // at once -- with GLM_MLA_STAGGERED, tile 0's entries here and the others once tile 0 has
  // landed (fill_rest).
  // Iteration k >= 1 refills the entries tile k - 1 used (refill k). With a ring of more than
  // two tiles' entries, the next tile's first entries are in flight during a tile's math too.
  // Every index load of the prologue and of refill 1 is issued before the first copy (which
  // waits for its slot), so their latencies overlap instead of adding up.
  // (An odd ring: the sets' shares of the prologue differ by one entry.)
  int first[(GLM_RING + GLM_GATHER_SETS - 1) / GLM_GATHER_SETS];
#pragma unroll
  for (int e = 0; e < GLM_RING; ++e)
    if (e % GLM_GATHER_SETS == gset)
      first[e / GLM_GATHER_SETS] = entry_slot(e);
  int slots[GLM_ROWS_PER_THREAD];
  fetch_refill(1, slots);
#pragma unroll
  for (int e = 0; e < GLM_RING; ++e) {
    if (e % GLM_GATHER_SETS == gset && e < num_entries &&
        (!GLM_MLA_STAGGERED || e < GLM_TILE_ENTRIES))
      load_entry(e, first[e / GLM_GATHER_SETS]);
    glm_cp_async_commit();
  }
  GLM_TRACE(1);
  // GLM_MLA_STAGGERED: the ring's other entries, after tile 0's wait (their mbarrier phases are
  // unchanged: each entry's first fill still precedes its wait). Every warp's next reads of them
  // (svalid, the rows) follow tile_begin(1)'s barrier.
  auto fill_rest = [&]() {
#if GLM_MLA_STAGGERED
#pragma unroll
    for (int e = GLM_TILE_ENTRIES; e < GLM_RING; ++e)
      if (e % GLM_GATHER_SETS == gset && e < num_entries)
        load_entry(e, first[e / GLM_GATHER_SETS]);
#endif
  };

  // The tile loop's ring side: tile_begin(tile) makes the tile's rows visible to every warp,
  // tile_row(r) is where row r of the current tile sits, tile_end() moves to the next tile.
  // Iteration k >= 1 refills the entries of tile k - 1 as soon as every warp is done with them,
  // before waiting for tile k, so that the wait has the refill in flight too. Then GLM_RING +
  // GLM_TILE_ENTRIES k groups are committed and tile k needs groups .. GLM_TILE_ENTRIES (k + 1)
  // - 1: at most GLM_RING - GLM_TILE_ENTRIES may be pending. Tile 0 is waited for with Q, below.
  int entry0 = 0; // ring entry of the tile's first 16 rows: (tile GLM_TILE_ENTRIES) % GLM_RING
  auto tile_begin = [&](int tile) {
    if (tile >= 1) {
      __syncthreads(); // every warp is done with tile - 1
      load_refill(tile, slots);
      fetch_refill(tile + 1, slots); // consumed next iteration
#if GLM_MLA_BULK
      wait_tile(tile); // the tile landed and is visible to this thread
    }
#else
      glm_cp_async_wait<GLM_RING - GLM_TILE_ENTRIES>();
    }
    __syncthreads(); // the tile landed and is visible to every warp
#endif
  };
  // Row r of the tile: ring entry (entry0 + r / 16) % GLM_RING, row r % 16 of it.
  // (A one-tile ring: every tile starts at entry 0, row r is row r.)
  auto tile_row = [&](int r) {
    if (GLM_RING == GLM_TILE_ENTRIES)
      return r;
    int re = entry0 + r / GLM_ENTRY_N;
    re -= re >= GLM_RING ? GLM_RING : 0;
    return re * GLM_ENTRY_N + r % GLM_ENTRY_N;
  };
  auto tile_end = [&]() {
    entry0 += GLM_TILE_ENTRIES;
    entry0 -= entry0 >= GLM_RING ? GLM_RING : 0;
  };

#if GLM_HEADS != 8
  // GLM_MT m16 tiles of heads: a fragment's rows g and g + 8 of m-tile mt are heads
  // head0 + 16 mt + g (+ 8). Warp (ms, kpart, sg) computes S for the GLM_MT_W m-tiles
  // ms GLM_MT_W + i (its local m-tile i), token group sg and k-part kpart; k-part m owns m-tile
  // m's full scores and softmax. Every warp's O covers all m-tiles.
  float o[GLM_MT][GLM_O_NTILES][4];
#pragma unroll
  for (int mt = 0; mt < GLM_MT; ++mt)
#pragma unroll
    for (int n = 0; n < GLM_O_NTILES; ++n)
      o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
  const int sg = warp % GLM_S_GROUPS;
  const int kpart = GLM_S_MSPLIT == 1 ? warp / GLM_S_GROUPS : (warp / GLM_S_GROUPS) % GLM_S_KSPLIT;
  const int ms = GLM_S_MSPLIT == 1 ? 0 : warp / (GLM_S_GROUPS * GLM_S_KSPLIT);
  const int tok0 = sg * GLM_S_TOKENS_PER_WARP, kbeg = kpart * GLM_S_K;
  // Softmax state, log2 domain. m_ref[mt][r] (row g + 8 r of m-tile mt) is the reference
  // maximum every warp agrees on: P = exp2(S - m_ref). It only moves when a tile's score exceeds
  // it by more than GLM_RESCALE_SLACK (so P <= 2^slack, exact in bf16's range and harmless to
  // fp32 sums); then the tile takes the slow path, which exchanges the row maxima and rescales
  // O. l_own[i] is this thread's share of the sums of the row it owns in its local m-tile i
  // (row g + 8 (kpart / 2): its slots' tokens), reduced over the CTA once at the end.
  float m_ref[GLM_MT][2], l_own[GLM_MT_W];
#pragma unroll
  for (int mt = 0; mt < GLM_MT; ++mt)
    m_ref[mt][0] = m_ref[mt][1] = GLM_MASKED;
#pragma unroll
  for (int i = 0; i < GLM_MT_W; ++i)
    l_own[i] = 0.f;
  // A value of m-tile m, m not known at compile time with GLM_S_MSPLIT 2 (a select, not an
  // indexed register array).
  auto of_mtile = [](const float (&v)[GLM_MT][2], int m, int r) {
    return GLM_MT == 1 || m == 0 ? v[0][r] : v[GLM_MT - 1][r];
  };
  // The slot this warp owns in every S fragment (slot kpart): row g + 8 own_r of the m-tile,
  // token 2t + own_c of the n8 tile.
  const int own_r = kpart / 2, own_c = kpart % 2;
  // m-tile m's block of spart: the partial scores handed to the owners of its slots.
  constexpr int kSpartMt = (GLM_S_KSPLIT - 1) * GLM_S_GROUPS * GLM_S_NTILES * 128;

  // Each warp holds Q's A fragments of its m-tiles for its GLM_S_K columns for the whole split.
  // From shared memory (wait_first_tile orders the loads against tile 0's hand-off), or with
  // GLM_Q_GLOBAL straight from global memory (rows past num_heads zero), issued before the wait
  // for tile 0 so that their latency overlaps it. A k16 step lies wholly in the latent or in the
  // rope part (GLM_D_LATENT % 16 == 0).
  uint32_t qa[GLM_MT_W][GLM_S_KSTEPS][4];
#if GLM_Q_GLOBAL
#pragma unroll
  for (int i = 0; i < GLM_MT_W; ++i)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int h = head0 + 16 * (ms * GLM_MT_W + i) + g + 8 * hh;
      const bool ok = h < num_heads;
      const long long qrow = static_cast<long long>(b) * num_heads + (ok ? h : 0);
      // Row pointers indexed by the column c of [0, GLM_D): latent below GLM_D_LATENT, rope
      // from there.
      const glm_bf16 *lat = q_lat + qrow * GLM_D_LATENT + 2 * t;
      const glm_bf16 *rope = q_rope + qrow * GLM_D_ROPE - GLM_D_LATENT + 2 * t;
#pragma unroll
      for (int kk = 0; kk < GLM_S_KSTEPS; ++kk) {
        const int c = kbeg + 16 * kk;
        const unsigned int *src =
            reinterpret_cast<const unsigned int *>((c < GLM_D_LATENT ? lat : rope) + c);
        qa[i][kk][hh] = ok ? __ldg(src) : 0u;
        qa[i][kk][hh + 2] = ok ? __ldg(src + 4) : 0u; // columns c + 2t + 8, + 9
      }
    }
#endif
  auto load_q_frags = [&]() {
#pragma unroll
    for (int kk = 0; kk < GLM_S_KSTEPS; ++kk)
      glm_ldmatrix_x4(qa[0][kk], glm_smem_addr(sq + (lane % 16) * GLM_ROW + kbeg + 16 * kk +
                                               (lane / 16) * 8));
  };
#if GLM_MLA_BULK && !GLM_Q_GLOBAL
  glm_mbar_wait(&q_full, 0); // before tile 0's barrier: see wait_first_tile
  load_q_frags();
#endif
  wait_first_tile();
  fill_rest();
#if !GLM_MLA_BULK && !GLM_Q_GLOBAL
  load_q_frags();
#endif

  for (int tile = 0; tile < num_tiles; ++tile) {
    GLM_TRACE_TILE_START();
    tile_begin(tile);
    GLM_TRACE_MARK(0);

    // S = Q K^T for this warp's m-tiles, tokens and k-part: 16 GLM_MT_W heads x
    // GLM_S_TOKENS_PER_WARP, k over GLM_S_K columns; every K fragment serves the warp's m-tiles.
    // With registers to spare (one CTA per SM), two accumulator chains per n-tile (even and odd
    // k-steps) halve the dependent mma chain; at 128 registers the second chain spills.
    float s[GLM_MT_W][GLM_S_NTILES][4], s2[GLM_MT_W][GLM_S_NTILES][4];
#pragma unroll
    for (int i = 0; i < GLM_MT_W; ++i)
      glm_mla_zero(s[i], s2[i]);
#pragma unroll
    for (int kk = 0; kk < GLM_MLA_KSTEPS; ++kk) {
#pragma unroll
      for (int n = 0; n < GLM_S_NTILES; n += 2) {
        // matrices: (n8 tile n, k 0-7), (n, k 8-15), (n + 1, k 0-7), (n + 1, k 8-15).
        uint32_t bfrag[4];
        // n is even and tok0 a multiple of 16: the pair is one ring entry.
        glm_ldmatrix_x4(bfrag, glm_smem_addr(skv + (tile_row(tok0 + n * 8) + (lane / 16) * 8 +
                                                    lane % 8) * GLM_ROW +
                                              kbeg + 16 * kk + ((lane / 8) % 2) * 8));
        // (16 warps: 128 registers, one chain.)
        const bool odd = GLM_S_CHAINS == 2 && GLM_WARPS < 16 && kk % 2;
#pragma unroll
        for (int i = 0; i < GLM_MT_W; ++i) {
          glm_mma_bf16_16816(odd ? s2[i][n] : s[i][n], qa[i][kk], bfrag[0], bfrag[1]);
          glm_mma_bf16_16816(odd ? s2[i][n + 1] : s[i][n + 1], qa[i][kk], bfrag[2], bfrag[3]);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < GLM_MT_W; ++i) {
      const int m = ms * GLM_MT_W + i;
      glm_mla_hand_off(s[i], s2[i], spart + m * kSpartMt, kpart, sg, lane);
    }
    __syncthreads();
    GLM_TRACE_MARK(1);

    // Every warp now completes its own slot of each fragment: the full score, scaled and masked
    // (sv), then P = exp2(S - m_ref) (0 for masked slots) as bf16 into shared memory, with this
    // tile's sums of the owned rows (ts) and whether a score passed m_ref + slack.
    float sv[GLM_MT_W][GLM_S_NTILES], ref[GLM_MT_W], ts[GLM_MT_W], mxo[GLM_MT_W];
    int rescale = 0;
    auto own_ref = [&](int m) { // m_ref of the row this thread owns in m-tile m
      return own_r ? of_mtile(m_ref, m, 1) : of_mtile(m_ref, m, 0);
    };
    auto write_p = [&](int i) {
      const int m = ms * GLM_MT_W + i;
      ts[i] = 0.f;
#pragma unroll
      for (int n = 0; n < GLM_S_NTILES; ++n) {
        const float p = sv[i][n] == GLM_MASKED ? 0.f : glm_exp2(sv[i][n] - ref[i]);
        ts[i] += p;
        sp[(16 * m + g + 8 * own_r) * GLM_P_ROW + tok0 + n * 8 + 2 * t + own_c] =
            glm_f32_to_bf16(p);
      }
    };
#pragma unroll
    for (int i = 0; i < GLM_MT_W; ++i) {
      const int m = ms * GLM_MT_W + i;
      ref[i] = own_ref(m);
      float mx = GLM_MASKED;
#pragma unroll
      for (int n = 0; n < GLM_S_NTILES; ++n) {
        float v = glm_mla_full_score<GLM_S_NTILES>(s[i][n], spart + m * kSpartMt, kpart, sg, n,
                                                   lane);
        // Token tok0 + 8 n + 2 t + own_c; n8 tiles pair up in ring entries.
        const int vrow = tile_row(tok0 + (n & ~1) * 8) + (n & 1) * 8 + 2 * t + own_c;
        v = svalid[vrow] ? v * scale_log2 : GLM_MASKED;
        sv[i][n] = v;
        mx = fmaxf(mx, v);
      }
      rescale |= mx > ref[i] + GLM_RESCALE_SLACK;
      mxo[i] = mx; // the owned row's maximum over this thread's slots, for the slow path
    }
    if (!rescale) {
#pragma unroll
      for (int i = 0; i < GLM_MT_W; ++i)
        write_p(i);
    }
    // P is visible to every warp, and every warp learns whether any row needs a new reference.
    if (__syncthreads_or(rescale)) {
      // Slow path (the first tile with a valid slot, and rare jumps): the exact new row maxima
      // across the warps, O and the sums rescaled, P recomputed against them.
#pragma unroll
      for (int i = 0; i < GLM_MT_W; ++i) {
        const int m = ms * GLM_MT_W + i;
        float mx = mxo[i];
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1)); // over the row's tokens: the quad
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        if (t == 0)
          red_max[warp * GLM_HEADS + 16 * m + g + 8 * own_r] = mx;
      }
      __syncthreads();
      float alpha[GLM_MT][2];
#pragma unroll
      for (int mt = 0; mt < GLM_MT; ++mt) {
#pragma unroll
        for (int r = 0; r < 2; ++r) // row g + 8 r: slots 2 r and 2 r + 1
          glm_mla_move_ref(glm_mla_red_rows<true>(red_max, mt / GLM_MT_W, 2 * r, 2 * r + 1,
                                                  16 * mt + g + 8 * r),
                           m_ref[mt][r], alpha[mt][r]);
#pragma unroll
        for (int n = 0; n < GLM_O_NTILES; ++n) {
          o[mt][n][0] *= alpha[mt][0];
          o[mt][n][1] *= alpha[mt][0];
          o[mt][n][2] *= alpha[mt][1];
          o[mt][n][3] *= alpha[mt][1];
        }
      }
#pragma unroll
      for (int i = 0; i < GLM_MT_W; ++i) {
        const int m = ms * GLM_MT_W + i;
        l_own[i] *= own_r ? of_mtile(alpha, m, 1) : of_mtile(alpha, m, 0);
        ref[i] = own_ref(m);
        write_p(i);
      }
      __syncthreads(); // P visible; red_max free for the next slow path
    }
#pragma unroll
    for (int i = 0; i < GLM_MT_W; ++i)
      l_own[i] += ts[i];
    GLM_TRACE_MARK(2);

    // O += P V over this warp's GLM_O_COLS_PER_WARP latent columns; V is the tile's rows,
    // k = token; every V fragment serves all m-tiles.
    const int col0 = warp * GLM_O_COLS_PER_WARP;
#pragma unroll
    for (int k = 0; k < GLM_MLA_PV_N; k += 16) {
      uint32_t a[GLM_MT][4];
#pragma unroll
      for (int mt = 0; mt < GLM_MT; ++mt)
        glm_ldmatrix_x4(a[mt], glm_smem_addr(sp + (16 * mt + lane % 16) * GLM_P_ROW + k +
                                             (lane / 16) * 8));
#pragma unroll
      for (int n = 0; n < GLM_O_NTILES; n += 2) {
        // matrices: (tokens k..k+7, cols n), (tokens k+8.., cols n), (k.., n+8), (k+8.., n+8).
        uint32_t bfrag[4];
        int mat = lane / 8;
        glm_ldmatrix_x4_trans(bfrag, glm_smem_addr(skv + (tile_row(k) + (mat % 2) * 8 + lane % 8) *
                                                         GLM_ROW +
                                                    col0 + n * 8 + (mat / 2) * 8));
#pragma unroll
        for (int mt = 0; mt < GLM_MT; ++mt) {
          glm_mma_bf16_16816(o[mt][n], a[mt], bfrag[0], bfrag[1]);
          glm_mma_bf16_16816(o[mt][n + 1], a[mt], bfrag[2], bfrag[3]);
        }
      }
    }
    GLM_TRACE_MARK(3);
    tile_end();
  }
  // The row sums: this thread's share -> its quad -> red_sum. Every warp then holds the CTA's
  // l_run for rows g and g + 8 of every m-tile.
#pragma unroll
  for (int i = 0; i < GLM_MT_W; ++i) {
    const int m = ms * GLM_MT_W + i;
    float l = l_own[i];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (t == 0)
      red_sum[warp * GLM_HEADS + 16 * m + g + 8 * own_r] = l;
  }
  glm_cp_async_wait<0>();
  __syncthreads(); // the sums are visible, and every warp is done with the ring (see below)
  float l_run[GLM_MT][2];
#pragma unroll
  for (int mt = 0; mt < GLM_MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      l_run[mt][r] =
          glm_mla_red_rows<false>(red_sum, mt / GLM_MT_W, 2 * r, 2 * r + 1, 16 * mt + g + 8 * r);
#else // GLM_HEADS == 8
  // Warp (sg, kpart): S^T = K Q^T over the m16 tiles of tokens [tok0, tok0 +
  // GLM_S_TOKENS_PER_WARP) and k-part kpart's columns, the 8 heads as the mma N (no padding);
  // O^T += V^T P^T over latent columns [col0, col0 + GLM_O_COLS_PER_WARP), k = the tile's tokens.
  const int sg = warp % GLM_S_GROUPS, kpart = warp / GLM_S_GROUPS; // this warp's part of S
  const int tok0 = sg * GLM_S_TOKENS_PER_WARP, kbeg = kpart * GLM_S_K;
  const int col0 = warp * GLM_O_COLS_PER_WARP;
  // O^T fragments: o[mt] holds (column g, g + 8 of m16 tile mt) x (heads 2t, 2t + 1).
  float o[GLM_O_MTILES][4];
#pragma unroll
  for (int mt = 0; mt < GLM_O_MTILES; ++mt)
    o[mt][0] = o[mt][1] = o[mt][2] = o[mt][3] = 0.f;
  // Softmax state of heads 2t and 2t + 1, log2 domain, as in the 16-head layout: a reference
  // maximum every warp agrees on, moved only when a tile passes it by more than the slack. This
  // warp owns slot kpart of every S^T fragment: head 2t + own_h, token g + 8 own_k of the m16
  // tile; l_own is this thread's share of the owned head's sum.
  const int own_h = kpart % 2, own_k = kpart / 2;
  float m_ref[2] = {GLM_MASKED, GLM_MASKED};
  float l_own = 0.f;

  // Each warp loads Q's B fragments (k16 x the 8 heads) for its GLM_S_K columns once.
  uint32_t qb[GLM_S_KSTEPS][2];
  auto load_q_frags = [&]() {
#pragma unroll
    for (int kk = 0; kk < GLM_S_KSTEPS; ++kk) // matrices (heads, k 0-7), (heads, k 8-15)
      glm_ldmatrix_x2(qb[kk], glm_smem_addr(sq + (lane % 8) * GLM_ROW + kbeg + 16 * kk +
                                            ((lane / 8) % 2) * 8));
  };
#if GLM_MLA_BULK
  glm_mbar_wait(&q_full, 0); // before tile 0's barrier: see wait_first_tile
  load_q_frags();
#endif
  wait_first_tile();
  fill_rest();
#if !GLM_MLA_BULK
  load_q_frags();
#endif

  for (int tile = 0; tile < num_tiles; ++tile) {
    GLM_TRACE_TILE_START();
    tile_begin(tile);
    GLM_TRACE_MARK(0);

    // S^T for this warp's m-tiles (16 tokens each) x 8 heads over its GLM_S_K columns; two
    // accumulator chains with registers to spare, as in the 16-head layout.
    float s[GLM_S_MTILES][4], s2[GLM_S_MTILES][4];
    glm_mla_zero(s, s2);
#pragma unroll
    for (int kk = 0; kk < GLM_MLA_KSTEPS; ++kk) {
#pragma unroll
      for (int mt = 0; mt < GLM_S_MTILES; ++mt) {
        // A: tokens (rows) x k; the m-tile's 16 tokens are one ring entry.
        uint32_t a[4];
        glm_ldmatrix_x4(a, glm_smem_addr(skv + (tile_row(tok0 + 16 * mt) + lane % 16) * GLM_ROW +
                                         kbeg + 16 * kk + (lane / 16) * 8));
        const bool odd = GLM_S_CHAINS == 2 && kk % 2;
        glm_mma_bf16_16816(odd ? s2[mt] : s[mt], a, qb[kk][0], qb[kk][1]);
      }
    }
    glm_mla_hand_off(s, s2, spart, kpart, sg, lane);
    __syncthreads();
    GLM_TRACE_MARK(1);

    // Every warp completes its own slot of each fragment (token tok0 + 16 mt + g + 8 own_k,
    // head 2t + own_h): the full score, scaled and masked (sv), then P^T = exp2(S^T - m_ref) (0
    // for masked slots) as bf16 [head][token], with this tile's sum of the owned head (ts).
    float sv[GLM_S_MTILES], ts = 0.f, mx = GLM_MASKED;
    float ref = own_h ? m_ref[1] : m_ref[0];
    auto write_p = [&]() {
      ts = 0.f;
#pragma unroll
      for (int mt = 0; mt < GLM_S_MTILES; ++mt) {
        const float p = sv[mt] == GLM_MASKED ? 0.f : glm_exp2(sv[mt] - ref);
        ts += p;
        sp[(2 * t + own_h) * GLM_P_ROW + tok0 + 16 * mt + g + 8 * own_k] = glm_f32_to_bf16(p);
      }
    };
#pragma unroll
    for (int mt = 0; mt < GLM_S_MTILES; ++mt) {
      float v = glm_mla_full_score<GLM_S_MTILES>(s[mt], spart, kpart, sg, mt, lane);
      const int vrow = tile_row(tok0 + 16 * mt) + g + 8 * own_k;
      v = svalid[vrow] ? v * scale_log2 : GLM_MASKED;
      sv[mt] = v;
      mx = fmaxf(mx, v);
    }
    // This thread's slots decide; the flag is reduced by the barrier below.
    const int rescale = mx > ref + GLM_RESCALE_SLACK;
    if (!rescale)
      write_p();
    // P^T is visible to every warp, and every warp learns whether a head needs a new reference.
    if (__syncthreads_or(rescale)) {
#pragma unroll
      for (int x = 4; x < 32; x <<= 1) // over the head's tokens: the lanes of the same t
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, x));
      if (g == 0)
        red_max[warp * GLM_HEADS + 2 * t + own_h] = mx;
      __syncthreads();
      float alpha[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) // head 2t + h: slots h and h + 2
        glm_mla_move_ref(glm_mla_red_rows<true>(red_max, 0, h, h + 2, 2 * t + h), m_ref[h],
                         alpha[h]);
      l_own *= own_h ? alpha[1] : alpha[0];
#pragma unroll
      for (int mt = 0; mt < GLM_O_MTILES; ++mt) {
        o[mt][0] *= alpha[0];
        o[mt][1] *= alpha[1];
        o[mt][2] *= alpha[0];
        o[mt][3] *= alpha[1];
      }
      ref = own_h ? m_ref[1] : m_ref[0];
      write_p();
      __syncthreads(); // P^T visible; red_max free for the next slow path
    }
    l_own += ts;
    GLM_TRACE_MARK(2);

    // O^T += V^T P^T: per k-step of 16 tokens (one ring entry), B = P^T (tokens x heads), A = V^T
    // (this warp's m16 tiles of columns x tokens, ldmatrix.trans of the cached rows).
#pragma unroll
    for (int k = 0; k < GLM_MLA_PV_N; k += 16) {
      uint32_t b[2]; // matrices (heads, tokens k..k+7), (heads, k+8..k+15)
      glm_ldmatrix_x2(b, glm_smem_addr(sp + (lane % 8) * GLM_P_ROW + k + ((lane / 8) % 2) * 8));
      const int vrow = tile_row(k), mat = lane / 8;
#pragma unroll
      for (int mt = 0; mt < GLM_O_MTILES; ++mt) {
        // matrices, transposed: (columns c..c+7, tokens k..k+7), (c+8.., k..), (c.., k+8..),
        // (c+8.., k+8..).
        uint32_t a[4];
        glm_ldmatrix_x4_trans(a, glm_smem_addr(skv + (vrow + (mat / 2) * 8 + lane % 8) * GLM_ROW +
                                               col0 + 16 * mt + (mat % 2) * 8));
        glm_mma_bf16_16816(o[mt], a, b[0], b[1]);
      }
    }
    GLM_TRACE_MARK(3);
    tile_end();
  }
  // The sums of heads 2t, 2t + 1: this thread's tokens -> the lanes of the same t -> red_sum.
  // Every warp then holds l_run for its two heads.
#pragma unroll
  for (int x = 4; x < 32; x <<= 1)
    l_own += __shfl_xor_sync(0xffffffffu, l_own, x);
  if (g == 0)
    red_sum[warp * GLM_HEADS + 2 * t + own_h] = l_own;
  glm_cp_async_wait<0>();
  __syncthreads(); // the sums are visible, and every warp is done with the ring (see below)
  float l_run[2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
    l_run[h] = glm_mla_red_rows<false>(red_sum, 0, h, h + 2, 2 * t + h);
#endif
  // The barrier above (after every thread's last copies landed and every warp left the tile
  // loop) frees the ring: the merge's staging reuses it.
  GLM_TRACE(3);
  GLM_TRACE_TILES();

  // ---- Merge of the splits. Stage 1, inside the cluster: each CTA stages its normalized
  // partial output and log2-domain log-sum-exp in its own shared memory; after a cluster
  // barrier, the CTA of cluster rank r merges columns [r W, (r + 1) W), W = 512 / C, of every
  // head over the C CTAs' stages (distributed shared memory). Stage 2, across clusters (splits /
  // C of them per (request, head group)): each CTA writes its merged chunk as a cluster partial
  // and counts its arrival on the chunk's counter; the last CTA to arrive on chunk r merges the
  // chunk over all clusters' partials. So every merge is spread over C CTAs and reads splits / C
  // partials, not splits.
  const unsigned csize = glm_cluster_size(), crank = glm_cluster_rank();
  const int nclusters = splits / csize, cluster = split / csize;
  const int rows = min(GLM_HEADS, num_heads - head0); // real heads of this group
  // Without a cluster nothing is merged in stage 1: each thread writes its normalized fragments
  // straight to the CTA's partial (glm_mla_part_t), or with one split to the output (bf16) itself.
  const bool direct = csize == 1;
  glm_mla_part_t *stage_o = reinterpret_cast<glm_mla_part_t *>(smem + GLM_SMEM_KV);
  float *stage_lse = reinterpret_cast<float *>(stage_o + GLM_HEADS * GLM_STAGE_ROW); // log2
  const float kNegInf = -__int_as_float(0x7f800000);
  const long long bh0 = static_cast<long long>(b) * num_heads + head0;
  // Head r's normalized values v0, v1 at columns c and c + dc (dc == 1: c even, one vector
  // store), and its log2-domain lse.
  auto put2 = [&](int r, int c, int dc, float v0, float v1) {
    if (!direct)
      glm_mla_put2(stage_o + r * GLM_STAGE_ROW, c, dc, v0, v1);
    else if (nclusters > 1)
      glm_mla_put2(o_part + ((bh0 + r) * nclusters + cluster) * GLM_D_LATENT, c, dc, v0, v1);
    else
      glm_mla_put2(out + (bh0 + r) * GLM_D_LATENT, c, dc, v0, v1);
  };
  auto put_lse = [&](int r, float v) {
    if (!direct)
      stage_lse[r] = v;
    else if (nclusters > 1)
      lse_part[(bh0 + r) * nclusters + cluster] = v;
    else
      lse[bh0 + r] = v * 0.6931471805599453f; // natural log
  };
#if GLM_HEADS != 8
  {
    const int col0 = warp * GLM_O_COLS_PER_WARP + 2 * t;
#pragma unroll
    for (int mt = 0; mt < GLM_MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = 16 * mt + g + 8 * r;
        if (direct && row >= rows)
          continue; // a padded head
        const float inv = l_run[mt][r] > 0.f ? 1.f / l_run[mt][r] : 0.f;
#pragma unroll
        for (int n = 0; n < GLM_O_NTILES; ++n)
          put2(row, col0 + n * 8, 1, o[mt][n][2 * r] * inv, o[mt][n][2 * r + 1] * inv);
        // An empty row (every slot masked) has lse -inf and weight 0.
        if (warp == 0 && t == 0)
          put_lse(row, l_run[mt][r] > 0.f ? m_ref[mt][r] + log2f(l_run[mt][r]) : kNegInf);
      }
  }
#else
  {
    // o[mt][e]: column col0 + 16 mt + g + 8 (e / 2), head 2t + e % 2.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (direct && 2 * t + h >= rows)
        continue; // a head past num_heads
      const float inv = l_run[h] > 0.f ? 1.f / l_run[h] : 0.f;
#pragma unroll
      for (int mt = 0; mt < GLM_O_MTILES; ++mt)
        put2(2 * t + h, col0 + 16 * mt + g, 8, o[mt][h] * inv, o[mt][h + 2] * inv);
      // An empty row (every slot masked) has lse -inf and weight 0.
      if (warp == 0 && g == 0)
        put_lse(2 * t + h, l_run[h] > 0.f ? m_ref[h] + log2f(l_run[h]) : kNegInf);
    }
  }
#endif
  if (csize > 1) {
    glm_cluster_arrive_shared(); // the stages are shared memory
    glm_cluster_wait();
  } else {
    __syncthreads();
  }
  GLM_TRACE(4);
  const int chunk = GLM_D_LATENT / csize, citems = chunk / GLM_MLA_ITEM;
  const int cbeg = crank * chunk;
  // This CTA's merged chunk: to the output when one cluster covers the whole range, else to
  // cluster partial `cluster` (o_part row (b h) * nclusters + cluster, lse_part (that row) * C
  // + r).
  // Each thread merges an item of one row over the C peers: it reads every peer's lse of the
  // row and its item in one distributed-shared-memory round trip (all loads in flight,
  // unrolled to the largest cluster) and computes the weights itself, so the merge is one round
  // trip and no barrier. An empty row (every peer's lse -inf) merges to 0 with lse -inf.
  // (A CTA without cluster has written its result already: the loop starts past the end.)
  for (int it = direct ? rows * citems : tid; it < rows * citems; it += GLM_THREADS) {
    const int row = it / citems, col = cbeg + GLM_MLA_ITEM * (it % citems);
    const uint32_t src = glm_smem_addr(stage_o + row * GLM_STAGE_ROW + col);
    const uint32_t src_lse = glm_smem_addr(stage_lse + row);
    float lp[GLM_MAX_CLUSTER];
    glm_mla_raw v[GLM_MAX_CLUSTER]; // widened when used: fewer live registers
#pragma unroll
    for (int p = 0; p < GLM_MAX_CLUSTER; ++p)
      if (p < static_cast<int>(csize)) {
        lp[p] = glm_ld_cluster_f32(glm_cluster_map(src_lse, p));
        v[p] = glm_mla_ld_cluster(glm_cluster_map(src, p));
      }
    float mx = kNegInf;
#pragma unroll
    for (int p = 0; p < GLM_MAX_CLUSTER; ++p)
      if (p < static_cast<int>(csize))
        mx = fmaxf(mx, lp[p]);
    glm_mla_vec acc = glm_mla_vzero();
    float sum = 0.f;
#pragma unroll
    for (int p = 0; p < GLM_MAX_CLUSTER; ++p)
      if (p < static_cast<int>(csize))
        glm_mla_merge_add(lp[p], mx, glm_mla_widen(v[p]), sum, acc);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const float merged_lse = sum > 0.f ? mx + log2f(sum) : kNegInf;
    const long long bh = static_cast<long long>(b) * num_heads + head0 + row;
    if (nclusters == 1) {
      glm_mla_st_out(out + bh * GLM_D_LATENT + col, acc, inv);
      if (crank == 0 && col == 0)
        lse[bh] = merged_lse * 0.6931471805599453f; // natural log
    } else {
      glm_mla_st(o_part + (bh * nclusters + cluster) * GLM_D_LATENT + col, acc, inv);
      if (col == cbeg)
        __stcg(lse_part + (bh * nclusters + cluster) * csize + crank, merged_lse);
    }
  }
  // No CTA leaves while a peer may still read its stage. The arrive needs no release: the
  // peers' stages were read before it (the merged values were stored).
  if (csize > 1) {
    glm_cluster_arrive_relaxed();
    glm_cluster_wait();
  }
  GLM_TRACE(5);
  GLM_TRACE(6); // overwritten by the chunk's last CTA
  GLM_TRACE_AT(7, glm_globaltimer());
  if (nclusters == 1)
    return;
  if (spread_merge && csize == 1) {
    unsigned *count =
        counters + static_cast<long long>(b) * (gridDim.x / splits) + head0 / GLM_HEADS;
    glm_global_barrier(count, splits, tid);
    GLM_TRACE(5); // the trace's "cluster merge" is the group barrier here
    // The departure; its reply is only needed at the end.
    const unsigned departed = tid == 0 ? atomicAdd(count, 1u) : 0u; // relaxed, gpu scope
    glm_mla_spread_merge(o_part, lse_part, out, lse, b, head0, rows, num_heads, split, splits,
                         tid);
    if (tid == 0 && departed == static_cast<unsigned>(2 * splits - 1))
      *count = 0; // every CTA of the group has passed the barrier
    GLM_TRACE(6);
    GLM_TRACE_AT(7, glm_globaltimer());
    return;
  }

  // Stage 2: the last CTA to arrive on chunk crank merges it over the clusters' partials, read
  // through L2 (__ldcg: other CTAs wrote them). The barrier orders every thread's partial stores
  // before thread 0's arrival, an acquire-release atomic at gpu scope: it publishes them, and for
  // the last CTA it orders the reads after the barrier that follows.
  __shared__ int is_last;
  __syncthreads();
  if (tid == 0) {
    const int groups = gridDim.x / splits;
    unsigned *counter =
        counters + (static_cast<long long>(b) * groups + head0 / GLM_HEADS) * csize + crank;
    const bool last =
        glm_atomic_add_acq_rel_gpu(counter, 1u) == static_cast<unsigned>(nclusters - 1);
    if (last)
      *counter = 0; // every CTA of the chunk has arrived: ready for the next launch
    is_last = last;
  }
  __syncthreads();
  if (!is_last)
    return;
  // Each thread merges an item of one row over the clusters' partials.
  for (int it = tid; it < rows * citems; it += GLM_THREADS) {
    const int row = it / citems, col = cbeg + GLM_MLA_ITEM * (it % citems);
    const long long bh = static_cast<long long>(b) * num_heads + head0 + row;
    const glm_mla_part_t *src = o_part + bh * nclusters * GLM_D_LATENT + col;
    const float *lp = lse_part + bh * nclusters * csize + crank;
    float mx = kNegInf, sum = 0.f;
    glm_mla_vec acc = glm_mla_vzero();
    glm_mla_merge_partials(lp, csize, src, 0, 1, nclusters, mx, sum, acc);
    glm_mla_put_out(out, lse, bh, col, mx, sum, acc, crank == 0 && col == 0);
  }
  GLM_TRACE(6);
  GLM_TRACE_AT(7, glm_globaltimer());
}
